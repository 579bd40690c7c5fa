#pragma once

#include "config.hpp"
#include "worker_metrics.hpp"
#include <tarry/net/poller.hpp>

#include <tarry/http/router.hpp>
#include <tarry/timeouts/timeout_registry.hpp>
#include <tarry/tls/client_context.hpp>
#include <tarry/upstream/name_table.hpp>

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tarry::server {

/// What a handler may use of the worker it answers on: its loop, its timeout registry and its
/// poller (for handlers that answer later, on sockets of their own). Never another thread's.
struct handler_context {
    boost::asio::io_context& io;
    timeouts::timeout_registry& registry;
    net::poller& poll;
    route_counters& routes;                           ///< where each route's responses are counted
    upstream::upstream_counters* upstreams = nullptr; ///< where each upstream server counts
    /// What the upstreams' DNS names resolve to now (server.cpp keeps it resolved); null when
    /// no upstream server is a name.
    std::shared_ptr<const upstream::name_table> names = nullptr;
};

/// Makes one worker's instance of a handler.
using handler_maker = std::function<std::shared_ptr<http::handler>(handler_context&)>;

/// A route added by the program rather than the configuration (tests, embedders).
struct custom_route {
    std::string prefix;
    handler_maker make;
};

/// An upstream's TLS context, or null for plain TCP. Throws config_error naming the key and the
/// file when a CA file or the client certificate cannot be used.
std::shared_ptr<const tls::client_context> upstream_tls(const upstream_config& u);

/// Builds one worker's router: the configured routes (effective_routes: the [[route]] tables,
/// and "/" to the docroot or the built-in answer), then the custom ones. Throws (std::system_error,
/// config_error) if a handler cannot be made, e.g. a docroot that cannot be opened: nothing is
/// half-built.
std::shared_ptr<http::router>
build_router(const config& cfg, const std::vector<custom_route>& custom, handler_context& ctx);

} // namespace tarry::server

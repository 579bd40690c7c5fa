#pragma once

#include "client_table.hpp"
#include "worker_metrics.hpp"
#include "worker_settings.hpp"
#include <tarry/net/poller.hpp>

#include <tarry/http/date_clock.hpp>
#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/intrusive/list.hpp>

#include "h2_sessions.hpp"
#include "tls_streams.hpp"

#include <netinet/in.h>

#include <unordered_map>

namespace tarry::server {

class connection;

/// The hook by which a worker keeps its live connections, whatever their phase and whether or
/// not timeouts are enforced (stop, pressure relief and metrics walk it, not the timeout lists).
using live_hook =
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;

/// What a connection needs of its worker, and no more: the worker's thread-local services.
struct connection_context {
    boost::asio::io_context& io;
    timeouts::timeout_registry& registry;
    http::date_clock& date;
    net::poller& poll;
    const worker_settings& settings; ///< replaced in place by a reload
    worker_metrics& metrics;
    /// The IPv6 client addresses PROXY headers gave (an IPv4 one fits in the connection).
    std::unordered_map<const connection*, in6_addr>& proxied_v6;
    tls_streams& tls;
    h2_sessions& h2s;      ///< its HTTP/2 connections' state
    client_table& clients; ///< its connections per client (max_connections_per_client, pressure)
    /// After a connection's descriptor is closed; `freed`: the bytes of buffers it let go.
    void (*on_closed)(void* worker, std::size_t freed) noexcept;
    void* worker;
};

} // namespace tarry::server

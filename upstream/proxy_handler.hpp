#pragma once

#include "upstream_group.hpp"
#include "upstream_pool.hpp"
#include "upstream_settings.hpp"

#include <tarry/http/handler.hpp>
#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <vector>

namespace tarry::upstream {

/// A reverse proxy: answers each request with the response of one of the upstream servers,
/// through a per-worker keep-alive pool per server.
///
/// The request goes upstream as HTTP/1.1 with hop-by-hop fields removed and X-Forwarded-*
/// added, its body streamed as it arrives; the response comes back re-framed by the session,
/// its body streamed with backpressure both ways. Errors: 502 (connect, reset, malformed), 504
/// (a timeout); after the response began, the client connection is closed instead. One
/// instance per route and worker; routes naming one upstream share its upstream_group.
class proxy_handler final : public http::handler,
                            public std::enable_shared_from_this<proxy_handler> {
public:
    /// A handler for the routes of `group` (one per upstream and worker, shared by its routes).
    /// `upgrades`: whether a client's request to switch protocols (WebSocket) is passed on;
    /// refused, the request goes upstream as an ordinary one, without its Upgrade field.
    explicit proxy_handler(std::shared_ptr<upstream_group> group, bool upgrades = true) noexcept;

    void on_request(http::exchange& ex) override;
    void stop() noexcept override;

    [[nodiscard]] upstream_group& group() const noexcept { return *group_; }
    [[nodiscard]] const upstream_settings& settings() const noexcept { return group_->settings(); }
    [[nodiscard]] bool upgrades() const noexcept { return upgrades_; }
    [[nodiscard]] const std::vector<std::shared_ptr<upstream_pool>>& pools() const noexcept {
        return group_->pools();
    }

private:
    std::shared_ptr<upstream_group> group_;
    bool upgrades_;
};

/// One worker's proxy handler with a group of its own (throws std::invalid_argument on a bad
/// server address), counting in `counters` (null: counters of its own, which /metrics does not
/// show).
std::shared_ptr<proxy_handler> make_proxy_handler(boost::asio::io_context& io, net::poller& poll,
                                                  timeouts::timeout_registry& registry,
                                                  const upstream_settings& settings,
                                                  upstream_counters* counters = nullptr);

} // namespace tarry::upstream

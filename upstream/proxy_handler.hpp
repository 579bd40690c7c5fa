#pragma once

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
/// (a timeout), 503 (every server marked down); after the response began, the client
/// connection is closed instead. One instance per worker.
class proxy_handler final : public http::handler,
                            public std::enable_shared_from_this<proxy_handler> {
public:
    proxy_handler(boost::asio::io_context& io, timeouts::timeout_registry& registry,
                  upstream_settings settings);

    void on_request(http::exchange& ex) override;
    void stop() noexcept override;
    /// Closes one idle pooled connection (the one idle longest, of the first server with any).

    [[nodiscard]] const upstream_settings& settings() const noexcept { return settings_; }
    [[nodiscard]] const std::vector<std::shared_ptr<upstream_pool>>& pools() const noexcept {
        return pools_;
    }
    /// The next server to try (round-robin or least connections) among those not marked
    /// down and not `except`; null if none.
    [[nodiscard]] std::shared_ptr<upstream_pool> pick(const upstream_pool* except = nullptr);

private:
    boost::asio::io_context& io_;
    upstream_settings settings_;
    std::vector<std::shared_ptr<upstream_pool>> pools_;
    std::size_t next_ = 0;
};

/// One worker's proxy handler (throws std::invalid_argument on a bad server address).
std::shared_ptr<proxy_handler> make_proxy_handler(boost::asio::io_context& io,
                                                  timeouts::timeout_registry& registry,
                                                  const upstream_settings& settings);

} // namespace tarry::upstream

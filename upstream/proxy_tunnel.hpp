#pragma once

#include "upstream_connection.hpp"
#include "upstream_metrics.hpp"
#include "upstream_pool.hpp"

#include <tarry/http/handler.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace tarry::http {
class exchange;
}

namespace tarry::upstream {

/// An upgrade relayed after the upstream answered 101 (a WebSocket): bytes flow both ways
/// until both sides have closed, each half-close passed on to the other side.
///
/// The proxy exchange that saw the 101 hands over its upstream connection and the client's
/// exchange and ends: from then on this is the client's deferred answer and the connection's
/// user, and nothing of the HTTP exchange (parser, replay copy, response fields) is kept. Each
/// direction holds at most max_pending bytes: the client is paused while that much waits for the
/// upstream, and the upstream is not read while the client's output has no room. The pair is
/// one timeout entry of kind tunnel (tunnel_idle_timeout), touched by a byte either way. A quiet
/// tunnel holds no buffer on either side.
class proxy_tunnel final : public http::deferred, public connection_user {
public:
    static constexpr std::size_t max_pending = 64 * std::size_t{1024};

    /// Takes over `conn` (already counted a tunnel by its pool) with the request bytes still on
    /// their way up: `pending`, and `writing` if `write_pending` (a write points into it, and
    /// follows it here).
    proxy_tunnel(http::exchange* ex, std::shared_ptr<upstream_pool> pool,
                 std::shared_ptr<upstream_connection> conn, timeouts::clock::duration idle_timeout,
                 std::string& pending, std::string& writing, bool write_pending) noexcept;
    proxy_tunnel(const proxy_tunnel&) = delete;
    proxy_tunnel& operator=(const proxy_tunnel&) = delete;
    ~proxy_tunnel();

    /// Switches the client's connection with the upstream's 101 `header`, passes `first` (the
    /// new protocol's bytes that came with it) on, and relays from then on. Keeps itself alive
    /// (self) until the tunnel ends.
    void start(std::shared_ptr<proxy_tunnel> self, std::string_view header,
               std::string_view first) noexcept;

    // http::deferred: the client's side
    std::size_t on_body(std::string_view bytes) override;
    void on_body_end() override;
    void on_writable() noexcept override;
    void on_abort() noexcept override;

    // connection_user: the upstream's side
    void on_connected(const boost::system::error_code&) noexcept override {}
    void on_written(const boost::system::error_code& ec) noexcept override;
    void on_read(const boost::system::error_code& ec, std::size_t n) noexcept override;
    void on_timeout() noexcept override;

private:
    void pump();
    void read_on();
    /// read_on() from a callback that may not throw: out of memory ends the tunnel.
    void keep_reading() noexcept;
    /// Closes both sides: the client's connection finishes if both sides closed cleanly
    /// (tunnel_close::done), else it is aborted.
    void end(tunnel_close why) noexcept;

    http::exchange* ex_;
    std::shared_ptr<proxy_tunnel> self_;
    std::shared_ptr<upstream_pool> pool_;
    std::shared_ptr<upstream_connection> conn_;
    std::string pending_; ///< client bytes not yet written upstream
    std::string writing_; ///< client bytes being written upstream
    timeouts::clock::duration idle_timeout_;
    bool write_pending_;
    bool body_end_ = false;    ///< the client half-closed
    bool body_paused_ = false; ///< on_body took fewer bytes than offered
    bool room_paused_ = false; ///< not reading the upstream: the client's output is full
    bool up_eof_ = false;      ///< the upstream half-closed
    bool up_shut_ = false;     ///< the client's half-close was passed upstream
};

/// The fields of an upstream's 101 passed to the client: its own less the hop-by-hop ones,
/// except Upgrade (the protocol it switched to). Appended to `out`.
void append_upgrade_fields(std::string& out, std::string_view header);

} // namespace tarry::upstream

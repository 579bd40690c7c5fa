#pragma once

#include "request_forwarding.hpp"
#include "response_parser.hpp"
#include "upstream_connection.hpp"
#include "upstream_metrics.hpp"
#include "upstream_pool.hpp"

#include <tarry/http/handler.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace tarry::http {
class exchange;
struct upstream_timing;
} // namespace tarry::http

namespace tarry::upstream {

class proxy_handler;

/// One proxied request: from the client's request head to the last byte of the upstream's
/// response, or to a 101, when it hands the connection and the client to a proxy_tunnel. It
/// keeps itself alive (self_) until the response is finished and the request body read, or the
/// client goes away (on_abort), and it never returns a connection to the pool unless its
/// exchange completed cleanly. However it ends, it ends in finish(outcome).
///
/// Its phase, one at a time:
///   connecting - a new upstream connection is connecting (connect_timeout); a refusal tries
///                the next server, up to four
///   sending    - connected (or taken from the pool): the request goes up; no response byte yet
///                (send_timeout between writes, response_timeout once the request is whole)
///   receiving  - a response byte came; its head is not whole yet (read_timeout between reads)
///   streaming  - the head went to the client; the body streams (read_timeout between reads,
///                none while the client's output is full: its send_timeout watches it)
///   answered   - the client has its whole answer (a response, or an error); only the rest of
///                the request body, if any, is still read (and dropped)
/// Besides the phase, the two directions flow independently, each with its own flags: a write
/// upstream in flight, the client's body ended or paused for room upstream, and the upstream
/// paused for room in the client's output.
///
/// Memory per exchange is bounded (nginx's proxy_buffering, bounded): a read from the upstream
/// takes at most the room left in the client's output queue (64 KiB), parsed straight from the
/// thread's read buffer (no connection holds one of its own); at most 64 KiB of
/// request body waits for the upstream before the client is paused (request_writer). A slow
/// client holds its upstream connection longer, not more memory.
class proxy_exchange final : public http::deferred,
                             public connection_user,
                             public response_body_sink {
public:
    enum class phase : std::uint8_t { connecting, sending, receiving, streaming, answered };

    /// The ways an exchange ends. Each says what becomes of the upstream connection (pooled,
    /// closed, handed over), what is counted, and what the client gets.
    enum class outcome : std::uint8_t {
        answered,    ///< the whole response came back: its connection is pooled if reusable
        overrun,     ///< ... with bytes after its end: its connection is closed
        upgraded,    ///< a 101: the connection and the client went to a proxy_tunnel
        no_server,   ///< no server to send it to: 503
        unreachable, ///< no server could be connected to (each refusal counted): 502
        reset,       ///< the upstream connection failed, or memory ran out: 502
        malformed,   ///< the response was not HTTP, or switched protocols unasked: 502
        timeout,     ///< the phase's timeout expired: 504
        client_gone, ///< the client's connection closed first (on_abort)
    };

    proxy_exchange(std::shared_ptr<proxy_handler> handler, http::exchange& ex);
    proxy_exchange(const proxy_exchange&) = delete;
    proxy_exchange& operator=(const proxy_exchange&) = delete;
    ~proxy_exchange();

    void start(std::shared_ptr<proxy_exchange> self);

    // http::deferred
    std::size_t on_body(std::string_view bytes) override;
    void on_body_end() override;
    void on_writable() noexcept override;
    void on_abort() noexcept override;

    // connection_user
    void on_connected(const boost::system::error_code& ec) noexcept override;
    void on_written(const boost::system::error_code& ec) noexcept override;
    void on_read(const boost::system::error_code& ec, std::size_t n) noexcept override;
    void on_timeout() noexcept override;

    // response_body_sink
    void on_response_body(std::string_view bytes) override;

private:
    void use(std::shared_ptr<upstream_pool> pool, bool fresh = false);
    void connected();
    void pump();
    void rearm();
    void read_on();
    /// read_on() from a callback that may not throw: out of memory (arming a timeout, queueing
    /// a read) fails the exchange instead of ending the worker.
    void keep_reading() noexcept;
    bool parse(const char* data, std::size_t size, std::size_t& used);
    void on_response_head();
    void switch_protocols(std::string_view first);
    void connection_failed(const boost::system::error_code& ec) noexcept;
    /// Ends the exchange: the upstream connection pooled, closed or already handed over, the
    /// outcome counted, the client answered (finish, an error, or an abort once the response
    /// began). The exchange lets go of itself then, or once the request body is read whole.
    void finish(outcome how, const boost::system::error_code& ec = {}) noexcept;
    /// The error log's line for a failure (rate-limited there): `how` and the error behind it.
    void log_failure(outcome how, const boost::system::error_code& ec) const noexcept;
    /// Whether the connection can carry another request: both directions ended cleanly, the
    /// whole request went out and the whole response came back, and the upstream keeps it open.
    [[nodiscard]] bool reusable() const noexcept;
    void give_back() noexcept;
    void drop_connection(upstream_close why) noexcept;
    void release() noexcept;
    [[nodiscard]] bool responded() const noexcept { return phase_ == phase::streaming; }
    /// Where the access log's upstream times go (null: the log is off, or the client left).
    [[nodiscard]] http::upstream_timing* record() noexcept;

    std::shared_ptr<proxy_handler> handler_;
    http::exchange* ex_;
    std::shared_ptr<proxy_exchange> self_;
    std::shared_ptr<upstream_pool> pool_;
    std::shared_ptr<upstream_connection> conn_;
    std::optional<response_parser> parser_;
    request_writer request_; ///< the request bytes on their way up, and its replay copy
    std::string rbuf_;       ///< the start of a response head that has not all arrived
    std::chrono::steady_clock::time_point started_{}; ///< for the response time histogram
    std::uint8_t tries_ = 0;                          ///< servers tried after connect failures
    phase phase_ = phase::connecting;
    // What the request is (set once).
    bool idempotent_ = false;
    bool head_request_ = false;
    bool upgrade_ = false; ///< the client asked to switch protocols, and the route allows it
    // The attempt on the current connection.
    bool reused_ = false;  ///< it came from the pool
    bool retried_ = false; ///< the request was replayed once already
    // The two directions.
    bool write_pending_ = false;
    bool body_end_ = false;    ///< the client's body ended
    bool body_paused_ = false; ///< on_body took fewer bytes than offered
    bool room_paused_ = false; ///< not reading the upstream: the client's output is full
};

} // namespace tarry::upstream

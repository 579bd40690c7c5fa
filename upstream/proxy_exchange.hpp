#pragma once

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
}

namespace tarry::upstream {

class proxy_handler;

/// One proxied request: from the client's request head to the last byte of the upstream's
/// response (or, after a 101, to the end of the tunnel). It keeps itself alive (self_) until the
/// response is finished and the request body read, or the client goes away (on_abort), and it
/// never returns a connection to the pool unless its exchange completed cleanly.
///
/// Its phase, one at a time:
///   connecting - a new upstream connection is connecting (connect_timeout); a refusal tries
///                the next server, up to four
///   sending    - connected (or taken from the pool): the request goes up; no response byte yet
///                (send_timeout between writes, response_timeout once the request is whole)
///   receiving  - a response byte came; its head is not whole yet (read_timeout between reads)
///   streaming  - the head went to the client; the body streams (read_timeout between reads,
///                none while the client's output is full: its send_timeout watches it)
///   tunnel     - the upstream answered an upgrade with 101: bytes flow both ways until both
///                sides have closed; one entry of kind tunnel (tunnel_idle_timeout) touched by
///                a byte either way
///   answered   - the client has its whole answer (a response, or an error); only the rest of
///                the request body, if any, is still read (and dropped)
/// Besides the phase, the two directions flow independently, each with its own flags: a write
/// upstream in flight, the client's body (or tunnel stream) ended or paused for room upstream,
/// and the upstream paused for room in the client's output.
///
/// Memory per exchange is bounded (nginx's proxy_buffering, bounded): a read from the upstream
/// takes at most the room left in the client's output queue (64 KiB), parsed straight from the
/// thread's read buffer (no connection holds one of its own); at most 64 KiB of
/// request body waits for the upstream before the client is paused. A slow client holds its
/// upstream connection longer, not more memory.
class proxy_exchange final : public http::deferred,
                             public connection_user,
                             public response_body_sink {
public:
    static constexpr std::size_t max_pending = 64 * std::size_t{1024};
    /// A request (head and body) up to this size is kept whole so it can be replayed once on a
    /// fresh connection when a reused one dies before answering.
    static constexpr std::size_t max_replay = 64 * std::size_t{1024};

    enum class phase : std::uint8_t { connecting, sending, receiving, streaming, tunnel, answered };

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
    /// `server` names the upstream for a request without Host (HTTP/1.0), as nginx does.
    void build_request_head(std::string_view server, std::string_view upgrade);
    void append_request(std::string_view bytes);
    void use(std::shared_ptr<upstream_pool> pool, bool fresh = false);
    void connected();
    void pump();
    void wrote() noexcept;
    void rearm();
    void read_on();
    /// read_on() from a callback that may not throw: out of memory (arming a timeout, queueing
    /// a read) fails the exchange, or ends the tunnel, instead of ending the worker.
    void keep_reading() noexcept;
    bool parse(const char* data, std::size_t size, std::size_t& used);
    void on_response_head();
    void start_tunnel(const char* rest, std::size_t size);
    void tunnel_read(const boost::system::error_code& ec, std::size_t n) noexcept;
    void end_tunnel(tunnel_close why) noexcept;
    void complete(bool clean) noexcept;
    void connection_failed(const boost::system::error_code& ec) noexcept;
    void fail(unsigned status, upstream_error kind) noexcept;
    void drop_connection(upstream_close why) noexcept;
    void answer_error(unsigned status) noexcept;
    void release() noexcept;
    [[nodiscard]] bool responded() const noexcept {
        return phase_ == phase::streaming || phase_ == phase::tunnel;
    }

    std::shared_ptr<proxy_handler> handler_;
    http::exchange* ex_;
    std::shared_ptr<proxy_exchange> self_;
    std::shared_ptr<upstream_pool> pool_;
    std::shared_ptr<upstream_connection> conn_;
    std::optional<response_parser> parser_;
    std::string replay_;  ///< the whole request so far, while it is replayable
    std::string pending_; ///< request bytes not yet written
    std::string writing_; ///< request bytes being written
    std::string rbuf_;    ///< the start of a response head that has not all arrived
    std::string fields_;  ///< the response fields passed to the client
    std::chrono::steady_clock::time_point started_{}; ///< for the response time histogram
    std::uint8_t tries_ = 0;                          ///< servers tried after connect failures
    phase phase_ = phase::connecting;
    // What the request is (set once).
    bool idempotent_ = false;
    bool head_request_ = false;
    bool chunked_up_ = false; ///< the request body goes upstream chunk-framed
    bool upgrade_ = false;    ///< the client asked to switch protocols, and the route allows it
    // The attempt on the current connection.
    bool reused_ = false;    ///< it came from the pool
    bool retried_ = false;   ///< the request was replayed once already
    bool replayable_ = true; ///< replay_ holds the whole request so far
    // The two directions.
    bool write_pending_ = false;
    bool body_end_ = false;    ///< the client's body (in a tunnel: its stream) ended
    bool body_paused_ = false; ///< on_body took fewer bytes than offered
    bool room_paused_ = false; ///< not reading the upstream: the client's output is full
    bool up_eof_ = false;      ///< in a tunnel: the upstream half-closed
    bool up_shut_ = false;     ///< in a tunnel: the client's half-close was passed upstream
};

} // namespace tarry::upstream

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
/// response. It keeps itself alive (self_) until the response is finished and the request
/// body read, or the client goes away (on_abort), and it never returns a connection to the
/// pool unless its exchange completed cleanly.
///
/// Buffering (nginx's proxy_buffering, bounded): at most one read of the response (64 KiB)
/// beyond the session's output queue is held; when the client is slower than the upstream we
/// stop reading the upstream until the client drains. Memory per connection stays bounded; the
/// cost is that a slow client holds its upstream connection longer. Larger buffers (or temp
/// files) can free upstream connections early, later. The request body is bounded the same way:
/// at most 64 KiB waits for the upstream before the client is paused.
class proxy_exchange final : public http::deferred,
                             public connection_user,
                             public response_body_sink {
public:
    static constexpr std::size_t max_pending = 64 * std::size_t{1024};
    /// A request (head and body) up to this size is kept whole so it can be replayed once on a
    /// fresh connection when a reused one dies before answering.
    static constexpr std::size_t max_replay = 64 * std::size_t{1024};

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
    void build_request_head(std::string_view server);
    void append_request(std::string_view bytes);
    void use(std::shared_ptr<upstream_pool> pool, bool fresh = false);
    void connected();
    void pump();
    void rearm();
    bool parse();
    void on_response_head();
    void complete() noexcept;
    void connection_failed(const boost::system::error_code& ec) noexcept;
    void fail(unsigned status, upstream_error kind) noexcept;
    void drop_connection(upstream_close why) noexcept;
    void answer_error(unsigned status) noexcept;
    void release() noexcept;

    std::shared_ptr<proxy_handler> handler_;
    http::exchange* ex_;
    std::shared_ptr<proxy_exchange> self_;
    std::shared_ptr<upstream_pool> pool_;
    std::shared_ptr<upstream_connection> conn_;
    std::optional<response_parser> parser_;
    std::string replay_;  ///< the whole request so far, while it is replayable
    std::string pending_; ///< request bytes not yet written
    std::string writing_; ///< request bytes being written
    std::string rbuf_;    ///< response bytes not yet parsed
    std::string fields_;  ///< the response fields passed to the client
    std::chrono::steady_clock::time_point started_{}; ///< for the response time histogram
    int tries_ = 0;                                   ///< servers tried after connect failures
    bool idempotent_ = false;
    bool head_request_ = false;
    bool replayable_ = true;
    bool retried_ = false;
    bool reused_ = false;
    bool connecting_ = false;
    bool ready_ = false; ///< connected (or reused): requests bytes may be written
    bool write_pending_ = false;
    bool chunked_up_ = false;  ///< the request body goes upstream chunk-framed
    bool body_end_ = false;    ///< the client's request body is all in pending_/written
    bool body_paused_ = false; ///< on_body took fewer bytes than offered
    bool got_byte_ = false;    ///< a byte of the response arrived
    bool responded_ = false;   ///< the response head went to the client
    bool room_paused_ = false; ///< not reading the upstream: the client's output is full
    bool done_ = false;        ///< answered; waiting only for the end of the request body
};

} // namespace tarry::upstream

#pragma once

#include "exchange.hpp"
#include "handler.hpp"
#include "recycler.hpp"
#include "request_parser.hpp"
#include "response_head.hpp"
#include "response_record.hpp"
#include "router.hpp"
#include "unique_fd.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tarry::http {

struct session_settings {
    std::size_t max_header_bytes = 16 * std::size_t{1024};
    std::uint64_t max_body_bytes = 1024 * std::uint64_t{1024};
    std::uint32_t max_requests = 1000;  ///< per connection; 0: unlimited
    unsigned keep_alive_timeout_s = 64; ///< advertised in Keep-Alive; 0: field omitted
    std::size_t max_queued_bytes =
        64 * std::size_t{1024};     ///< stop parsing pipelined requests past this
    const router* routes = nullptr; ///< null, or no route matches: the built-in answer
    /// Each response's record goes to session_transport::completed() when it is over (the
    /// access log is on). Off, the session keeps no record and reads no clock for one.
    bool record_responses = false;
};

/// What a session needs of its connection for answers that come later, outside consume().
class session_transport {
public:
    /// The connection's output queue (taken from the free list if it holds none).
    virtual std::string& output() = 0;
    [[nodiscard]] virtual std::string_view date() noexcept = 0;
    /// A deferred answer wrote, finished, or resumed its request body: drive the connection.
    virtual void wake() noexcept = 0;
    /// The client's address ("192.0.2.1", "2001:db8::1"), valid until the next call; empty if
    /// unknown. Looked up when asked: most requests never need it.
    [[nodiscard]] virtual std::string_view peer() noexcept { return {}; }
    /// The request came over TLS (its scheme is https): a proxy says so upstream.
    [[nodiscard]] virtual bool secure() const noexcept { return false; }
    /// Over TLS, which certificate the handshake chose by SNI (0: the default, then in the
    /// order configured); -1 on a plain connection.
    [[nodiscard]] virtual int certificate() const noexcept { return -1; }
    /// A response head was written (now, or by a handler answering later): for the access log
    /// and the response metrics. `request` is null when the bytes never made a request; `route`
    /// is the counters of the route that answered (null for the session's own answers).
    virtual void responded(const request_head* request, route_stats* route, unsigned status,
                           std::uint64_t body_bytes) noexcept {
        (void)request, (void)route, (void)status, (void)body_bytes;
    }
    /// With record_responses: when a request's first byte came, asked once per request.
    [[nodiscard]] virtual std::chrono::steady_clock::time_point request_started() noexcept {
        return {};
    }
    /// With record_responses: a response is over (its last byte is in the output, or it was
    /// cut short), or a request was abandoned by its client before its answer; for the access
    /// log. `r` and what it points to are valid during the call only.
    virtual void completed(const response_record& r) noexcept { (void)r; }

protected:
    session_transport() = default;
    session_transport(const session_transport&) = default;
    session_transport& operator=(const session_transport&) = default;
    ~session_transport() = default;
};

/// The protocol half of one connection, without I/O: bytes in, responses out.
///
/// consume() parses as many complete requests as the input holds, hands each to the handler its
/// route names, and appends the responses to `out` in order (pipelining), until the output
/// passes max_queued_bytes, a file body must be streamed, a handler answers later, or the
/// connection is to close. The parser and request fields live in a pooled request_state taken
/// when a request starts and given back when it ends, so an idle session is a few bytes.
class session {
public:
    enum class phase {
        idle,    ///< between requests: no byte of the next one consumed
        headers, ///< a request started; its header is not complete
        body,    ///< reading a request body (for its handler, or to discard it)
        waiting, ///< the request is read; its handler has not finished answering
    };

    explicit session(const session_settings& settings,
                     session_transport* transport = nullptr) noexcept
        : settings_(&settings), transport_(transport) {}
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    ~session();

    /// Returns how many bytes of [data, data + size) were consumed. Bytes of an incomplete
    /// header are not consumed: call again with them and more. `all`: the client ended (a FIN
    /// or a close_notify), nothing will follow these bytes; the request they end is answered
    /// with Connection: close, and one they cannot complete is never started.
    std::size_t consume(const char* data, std::size_t size, std::string& out, std::string_view date,
                        bool all = false);

    /// Answers with an error status and closes (408 on a header or body timeout). A deferred
    /// answer in progress is aborted.
    /// `received`: the start of the bytes that failed to make a request, for the log; `text`:
    /// the body's line, in place of the status's reason.
    void fail(unsigned status, std::string& out, std::string_view date,
              std::string_view received = {}, std::string_view text = {});

    /// Graceful stop: the next response says Connection: close; an idle session closes.
    void drain() noexcept;
    /// The next response says Connection: close, but an idle session stays open for it (a
    /// connection past its age, or one a spread-out stop closes later if it stays idle).
    void retire() noexcept { draining_ = true; }
    [[nodiscard]] bool retired() const noexcept { return draining_; }

    /// The connection is going away: a deferred answer is told and released.
    void abort() noexcept;

    /// The output queue was written out: a deferred answer waiting for room hears of it.
    void output_drained() noexcept {
        if (deferred* d = deferred_answer(); d != nullptr && !r_.finished) d->on_writable();
    }

    /// Settings apply from the next request (a reload).
    void set_settings(const session_settings& s) noexcept { settings_ = &s; }

    [[nodiscard]] phase current_phase() const noexcept {
        if (!state_ || !state_->parser) return phase::idle;
        if (state_->mode != tunnel::none) return phase::waiting; // until the tunnel ends
        if (!state_->parser->is_header_done()) return phase::headers;
        if (!state_->parser->is_done()) return phase::body;
        return r_.finished ? phase::idle : phase::waiting;
    }
    /// The connection closes once the output is written (see answering()).
    [[nodiscard]] bool closing() const noexcept { return closing_; }
    /// The request was answered before its body came: the rest is read only to discard it.
    [[nodiscard]] bool discarding() const noexcept {
        return state_ && r_.finished && !r_.body_done && !r_.body_to_handler;
    }
    /// A handler is still answering: more output is to come before any close.
    [[nodiscard]] bool answering() const noexcept {
        return deferred_answer() != nullptr && !r_.finished;
    }
    [[nodiscard]] bool has_file() const noexcept { return file_ != nullptr; }
    [[nodiscard]] file_body& file() noexcept { return *file_; }
    /// The file body is sent.
    void file_done() noexcept;
    /// Requests answered (modulo 2^32: compare and subtract as std::uint32_t).
    [[nodiscard]] std::uint32_t requests() const noexcept { return requests_; }
    /// A deferred answer refused body bytes: consume() takes no more until it resumes.
    [[nodiscard]] bool body_paused() const noexcept { return r_.body_paused; }
    /// Frees the request states and file bodies this thread keeps for reuse (recycler::release).
    static void release_kept() noexcept;

    /// The connection is a tunnel (see exchange::upgrade): no more HTTP on it.
    [[nodiscard]] bool tunneling() const noexcept { return state_ && state_->mode != tunnel::none; }
    /// In a tunnel, the client half-closed and every byte it sent was taken: the answer hears
    /// of it (deferred::on_body_end). True the first time, when it was told.
    bool input_ended();
    /// In a tunnel whose other side half-closed: true once, when the connection should shut its
    /// writing side (after writing what is queued).
    [[nodiscard]] bool take_output_shutdown() noexcept {
        if (!state_ || state_->mode != tunnel::shut_asked) return false;
        state_->mode = tunnel::shut;
        return true;
    }

private:
    enum class tunnel : std::uint8_t {
        none,       ///< HTTP
        open,       ///< switched protocols: bytes both ways
        shut_asked, ///< the other side half-closed: shut ours once the output is written
        shut,       ///< our writing side is shut
    };
    /// The request in progress's flags, reset together when it ends.
    struct response_state {
        bool sent_continue = false;
        bool dispatched = false; ///< the request went to its handler
        bool responding = false; ///< its response head is written, the response is not finished
        bool finished = false;   ///< its response is finished
        bool chunked = false;    ///< the response body is chunk-framed
        bool head_only = false;  ///< the response carries no body (HEAD, 304, ...)
        bool body_to_handler = false;
        bool body_paused = false;
        bool body_done = false;    ///< the request body has been read whole
        bool body_in_hand = false; ///< bytes after the header had arrived when it was dispatched
    };
    /// The request in progress, and the exchange its handler answers through.
    struct request_state final : request_body_sink, exchange {
        request_head head;
        // The response's record, kept with record_responses (see response_record).
        unsigned status = 0;          ///< its head was written with this status (0: not yet)
        std::uint64_t sent = 0;       ///< body bytes put in the output
        std::uint64_t file_bytes = 0; ///< a file body's length, sent after the output
        std::uint64_t tunnel_in = 0;  ///< a tunnel's bytes from the client
        std::chrono::steady_clock::time_point started{};
        std::string_view received; ///< a head that never parsed, while fail() completes it
        bool unparsed = false;     ///< the bytes made no request: head is not one
        bool proxied = false;      ///< upstream holds a proxy's times
        upstream_timing upstream;
        tunnel mode = tunnel::none; ///< a tunnel after a 101
        bool delivering = false;    ///< the answer's on_body() is running
        bool resumed = false;       ///< ... and it called resume_body(): it has room again
        std::optional<request_parser> parser;
        std::shared_ptr<handler> held; ///< the route's handler, while an answer is deferred
        route_stats* stats = nullptr;  ///< the route's counters, once dispatched
        deferred* answer = nullptr;    ///< the handler's state while it answers later
        session* owner = nullptr;
        std::size_t on_body(std::string_view bytes) override;

        // exchange
        [[nodiscard]] const request_head& request() const noexcept override { return head; }
        [[nodiscard]] std::string_view peer() const noexcept override;
        [[nodiscard]] bool secure() const noexcept override;
        [[nodiscard]] int certificate() const noexcept override;
        void respond(response_head h) override;
        void write(std::string_view bytes) override;
        void send_file(unique_fd fd, std::uint64_t offset, std::uint64_t length) override;
        void finish() override;
        [[nodiscard]] std::size_t room() const noexcept override;
        void defer(deferred& d) override;
        void read_body() override;
        void resume_body() override;
        void abort() override;
        [[nodiscard]] std::string_view upgrade_asked() const noexcept override;
        void upgrade(response_head h) override;
        void shutdown_output() override;
        [[nodiscard]] upstream_timing* upstream_record() noexcept override;
        void answer_text(unsigned code, std::string_view body,
                         std::string_view extra_fields) override;
    };
    using states = recycler<request_state, 256>;
    /// A file body, and the request it answers while its line waits for the file's end.
    struct file_state final : file_body {
        states::pointer request;
    };
    using files = recycler<file_state, 64>;
    /// What consume() was given, while it runs (one pointer, not two, in every session).
    struct consume_run {
        std::string& out;
        std::string_view date;
        bool all; ///< the client ended: nothing more will come
        /// With `all`: what follows the current request's header (or its body, once read
        /// whole), up to the end of the input; null until its header is read in this call.
        const char* rest = nullptr;
        std::size_t rest_size = 0;
    };

    [[nodiscard]] deferred* deferred_answer() const noexcept {
        return state_ ? state_->answer : nullptr;
    }
    void set_deferred(deferred* d) noexcept {
        if (state_) state_->answer = d;
    }
    /// The request in progress as its handler sees it (only while there is one).
    [[nodiscard]] exchange& as_exchange() noexcept { return *state_; }
    /// News for the connection (output, room, an end): it drives again. Not within consume(),
    /// which goes on by itself, nor without a transport.
    void wake_transport() noexcept {
        if (run_ == nullptr && transport_ != nullptr) transport_->wake();
    }

    void dispatch();
    std::size_t tunnel_in(const char* data, std::size_t size);
    /// The answer took fewer body bytes than offered: paused, unless it said meanwhile that it
    /// has room again (then the rest is offered at once).
    void paused_or_again(bool resumed) noexcept;
    void start_response(response_head& head);
    void finish_request() noexcept;
    /// The request state's record to the transport (with record_responses), if it responded.
    void complete(request_state& st, std::uint64_t file_sent = 0) noexcept;
    /// Gives a request state back to the free list (or frees it).
    static void give_back(states::pointer st) noexcept;
    void end_response() noexcept;
    void emit(std::string& out, response_head& head, std::string_view date);
    [[nodiscard]] std::string& output();
    [[nodiscard]] bool keep_alive_now() const noexcept {
        const request_parser& parser = *state_->parser;
        // A final answer before a body the client was told to wait for (100-continue) leaves
        // the body unsent or half-sent: nothing tells where the next request would start.
        const bool unsent_body =
            state_->head.expect_continue && !r_.sent_continue && !parser.is_done();
        // This request is number requests_ + 1: the answered ones come before it.
        return parser.keep_alive() && !draining_ && !unsent_body && !last_of_input(parser) &&
               (settings_->max_requests == 0 || requests_ + 1ULL < settings_->max_requests);
    }
    /// Answered within consume(), after the client's end: nothing follows this request but
    /// its own body and empty lines.
    [[nodiscard]] bool last_of_input(const request_parser& parser) const noexcept {
        if (run_ == nullptr || !run_->all) [[likely]]
            return false;
        return ends_input(parser, std::string_view(run_->rest, run_->rest_size));
    }
    [[nodiscard]] static bool ends_input(const request_parser& parser,
                                         std::string_view rest) noexcept;

    // An idle session is these 56 bytes (with the connection's, what an idle keep-alive
    // connection costs): per-request state lives in state_, taken from a free list.
    const session_settings* settings_;
    session_transport* transport_;
    states::pointer state_;
    files::pointer file_;        ///< a file body still to stream, once answered
    consume_run* run_ = nullptr; ///< set while consume() runs
    std::uint32_t requests_ = 0; ///< answered
    bool closing_ = false;
    bool draining_ = false;
    response_state r_;
};

} // namespace tarry::http

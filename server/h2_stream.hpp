#pragma once

// One HTTP/2 request as its handler sees it: an http::exchange over one stream of an
// h2_session. respond() is the stream's HEADERS (the connection-specific fields left out, no
// chunked framing, Content-Length kept), write() its DATA as the stream's and the socket's room
// allow (the rest kept here until on_writable), send_file() the file read (pread) into DATA
// frames as room comes (no sendfile under framing), finish() its END_STREAM, abort() an
// RST_STREAM(INTERNAL_ERROR); the request body comes from the stream's DATA under its window.
//
// An extended CONNECT (RFC 8441: a WebSocket over HTTP/2) asks for an upgrade as an HTTP/1.1
// GET with Upgrade does (upgrade_asked() is its :protocol), and upgrade() makes the stream the
// tunnel: a 200 HEADERS without END_STREAM, then DATA carry the tunnel's bytes both ways under
// the stream's flow control. The half-closes are END_STREAM each way (shutdown_output(), and
// the client's as on_body_end()); a tunnel that fails is RST_STREAM(CANCEL), as RFC 8441 5 has
// an abrupt TCP close become.

#include <tarry/h2/connection.hpp>
#include <tarry/http/exchange.hpp>
#include <tarry/http/router.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::server {

class h2_session;

/// Fills `head` from an HTTP/2 request (RFC 9113 8.3.1): the method, :path as the target (a
/// plain CONNECT's :authority), :authority as Host, and a header block in HTTP/1.1's form for
/// find_field() (into `block`: the request line, Host, the fields, several cookie fields joined
/// with "; " as RFC 9113 8.2.3 asks, and Transfer-Encoding: chunked for a body of unknown
/// length, so that a proxy frames it upstream). Version 20: the access log says HTTP/2.0.
///
/// An extended CONNECT (RFC 8441) keeps its method, CONNECT, so that a handler that takes no
/// tunnel refuses it as any method it does not take; its block is the HTTP/1.1 request that
/// opens the same tunnel, a GET (what a proxy sends upstream), with no body framing (the bytes
/// after it are the tunnel's) and, for a WebSocket, a Sec-WebSocket-Key of our own: RFC 8441's
/// client sends none, and the upstream's Sec-WebSocket-Accept goes no further than us.
void to_request_head(const h2::request& r, http::request_head& head, std::string& block);

/// Appends the response fields of `head` for HEADERS: names lowered, Server and Date (unless
/// the head carries its own), Content-Type, Content-Length (unless unknown), then the extra
/// fields without the connection-specific ones (RFC 9113 8.2.2). Names are lowered into
/// `text`, which must not reallocate while the fields are used (it is reserved here).
void to_response_fields(const http::response_head& head, std::string_view date,
                        std::vector<h2::field>& fields, std::string& text);

class h2_stream final : public http::exchange {
public:
    h2_stream(h2_session& session, std::uint32_t id) noexcept : session_(&session), id_(id) {}

    [[nodiscard]] std::uint32_t id() const noexcept { return id_; }

    // http::exchange
    [[nodiscard]] const http::request_head& request() const noexcept override { return head_; }
    [[nodiscard]] std::string_view peer() const noexcept override;
    [[nodiscard]] bool secure() const noexcept override;
    [[nodiscard]] int certificate() const noexcept override;
    void respond(http::response_head h) override;
    void write(std::string_view bytes) override;
    void send_file(http::unique_fd fd, std::uint64_t offset, std::uint64_t length) override;
    void finish() override;
    [[nodiscard]] std::size_t room() const noexcept override;
    void defer(http::deferred& d) override { answer_ = &d; }
    void read_body() override { body_to_handler_ = true; }
    void resume_body() override;
    void abort() override;
    [[nodiscard]] std::string_view upgrade_asked() const noexcept override {
        return upgraded_ ? std::string_view{} : std::string_view(protocol_);
    }
    void upgrade(http::response_head h) override;
    void shutdown_output() override;
    [[nodiscard]] http::upstream_timing* upstream_record() noexcept override;

private:
    friend class h2_session;

    void answer_text(unsigned status, std::string_view body,
                     std::string_view extra_fields) override;
    /// Body bytes and the end as far as room goes; what does not fit waits in pending_.
    void send(std::string_view bytes, bool end);
    /// What waits (pending bytes, the file) goes on as room allows; the record ends once all
    /// of the answer is handed to the connection.
    void pump();
    /// The deferred answer hears that there is room again, if there is.
    void tell_writable();
    /// What the connection can take for this stream now: its window and queue, and the room
    /// left in the connection's output queue.
    [[nodiscard]] std::size_t space() const noexcept;
    /// The answer is over: its access-log record, and the record retired.
    void done() noexcept;
    [[nodiscard]] http::response_record record() const noexcept;

    h2_session* session_;
    std::uint32_t id_;
    http::request_head head_;
    http::deferred* answer_ = nullptr;
    std::shared_ptr<http::handler> held_; ///< the route's handler, while its answer is deferred
    http::route_stats* stats_ = nullptr;
    std::string pending_;                 ///< body bytes the connection could not take yet
    std::optional<http::file_body> file_; ///< the rest of a file body
    std::uint64_t sent_ = 0;              ///< body bytes handed to the connection
    std::uint64_t received_ = 0;          ///< request body bytes, against max_body_bytes
    std::chrono::steady_clock::time_point started_{};
    http::upstream_timing upstream_;
    std::string protocol_; ///< an extended CONNECT's :protocol (RFC 8441), else empty
    unsigned status_ = 0;
    bool proxied_ = false;
    bool head_only_ = false;       ///< HEAD, 204, 304: the HEADERS end the stream
    bool finished_ = false;        ///< the handler finished (send_file too)
    bool end_sent_ = false;        ///< END_STREAM is with the connection
    bool body_to_handler_ = false; ///< read_body() was called
    bool body_done_ = false;       ///< the request body ended (or there was none)
    bool delivering_ = false;      ///< the answer's on_body() is running
    bool resumed_ = false;         ///< ... and it called resume_body()
    bool gone_ = false;            ///< reset, or the connection went: nothing more is sent
    bool over_ = false;            ///< done(): the record is retired
    bool upgraded_ = false;        ///< an extended CONNECT became a tunnel (upgrade())
    bool out_shut_ = false;        ///< the tunnel's other side half-closed: END_STREAM after
                                   ///< what is pending, the client's bytes still come
};

} // namespace tarry::server

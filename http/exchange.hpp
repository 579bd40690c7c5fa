#pragma once

#include "handler.hpp"
#include "request_parser.hpp"
#include "response_head.hpp"
#include "response_record.hpp"
#include "unique_fd.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tarry::http {

/// A file body still to be sent after the queued output (the connection streams it).
struct file_body {
    unique_fd fd;
    std::uint64_t offset = 0;
    std::uint64_t remaining = 0;
};

/// One request as its handler sees it: the request, and the ways to answer it. Valid from
/// handler::on_request() until the response is finished (or the deferred answer is aborted).
///
/// Each protocol implements it: HTTP/1.1's session (one request at a time on a connection, its
/// pooled request state), and an HTTP/2 stream (server/h2_stream), so that every handler
/// answers both without knowing which it speaks to.
///
/// A response is respond() with its head, then any number of write()s, then finish(); or
/// respond_text() for a small complete answer. A body whose length the head does not give is
/// sent chunked (or, to an HTTP/1.0 client, delimited by the close; over HTTP/2, by the
/// stream's end).
class exchange {
public:
    exchange(const exchange&) = delete;
    exchange& operator=(const exchange&) = delete;

    [[nodiscard]] virtual const request_head& request() const noexcept = 0;
    /// The client's address (see session_transport::peer), valid until the next call.
    [[nodiscard]] virtual std::string_view peer() const noexcept = 0;
    /// The request came over TLS (see session_transport::secure).
    [[nodiscard]] virtual bool secure() const noexcept = 0;
    /// The certificate its TLS connection was given (see session_transport::certificate); -1
    /// when plain or unknown.
    [[nodiscard]] virtual int certificate() const noexcept { return -1; }

    /// Writes the status line and fields. The protocol adds Date, Server (unless the head says
    /// otherwise), the framing (Content-Length or Transfer-Encoding) and, for HTTP/1.1,
    /// Connection/Keep-Alive.
    virtual void respond(response_head head) = 0;
    /// Appends body bytes (ignored for HEAD). Mind room(): past it, wait for on_writable().
    virtual void write(std::string_view bytes) = 0;
    /// Sends `length` bytes of `fd` from `offset` as the rest of the body, and finishes.
    virtual void send_file(unique_fd fd, std::uint64_t offset, std::uint64_t length) = 0;
    /// The response is complete.
    virtual void finish() = 0;
    /// A whole small response with a text/plain body: respond + write + finish.
    void respond_text(unsigned status, std::string_view body, std::string_view extra_fields = {}) {
        answer_text(status, body, extra_fields);
    }

    /// Bytes the output can take before the handler should wait for deferred::on_writable().
    [[nodiscard]] virtual std::size_t room() const noexcept = 0;

    /// The answer comes later: the protocol keeps the request (and the route's handler) until
    /// finish(), and tells `d` of the body, of output room and of the client going away.
    virtual void defer(deferred& d) = 0;
    /// Hands the request body to the deferred answer (sending 100 Continue if it was asked
    /// for). Without it, a body is read and discarded.
    virtual void read_body() = 0;
    /// The deferred answer takes body bytes again after refusing some.
    virtual void resume_body() = 0;
    /// The response cannot be completed (its source failed after the head was sent): HTTP/1.1
    /// closes the connection once what is queued is written, HTTP/2 resets the stream. The
    /// exchange is gone afterwards.
    virtual void abort() = 0;

    /// Whether the client asked to switch protocols: a GET with an Upgrade field that its
    /// Connection field names (RFC 9110 7.8). The Upgrade value, or empty (always over HTTP/2).
    [[nodiscard]] virtual std::string_view upgrade_asked() const noexcept = 0;
    /// Switches the connection to a tunnel (a 101 answer: RFC 9110 15.2.2). The session writes
    /// the 101 head with `head.extra_fields` (which must carry the Upgrade field) and
    /// `Connection: upgrade`, then stops speaking HTTP on this connection: write() appends bytes
    /// as they are, the client's bytes go to deferred::on_body() as they arrive (fewer taken
    /// pauses them), and deferred::on_body_end() says the client half-closed. shutdown_output()
    /// passes the other side's half-close on; finish() (or abort()) ends the tunnel and closes
    /// the connection. Only after upgrade_asked() said yes.
    virtual void upgrade(response_head head) = 0;
    /// In a tunnel: once what is queued is written, the client's side of the connection is
    /// shut for writing (it still sends).
    virtual void shutdown_output() = 0;

    /// Where a proxy notes its upstream's times and status for the access log; null when no
    /// record is kept (the log is off). Valid until the response is finished.
    [[nodiscard]] virtual upstream_timing* upstream_record() noexcept = 0;

protected:
    exchange() = default;
    ~exchange() = default;
    virtual void answer_text(unsigned status, std::string_view body,
                             std::string_view extra_fields) = 0;
};

} // namespace tarry::http

#pragma once

// The seam between a client connection and the protocol it speaks.
//
// A connection (connection.hpp) owns the socket's I/O, the phases and their timeouts, and the
// close; the protocol owns everything between the bytes that came and the bytes to send:
// parsing, the requests and their handlers, the responses. The connection asks the protocol
// only what client_protocol below names, so a second protocol (HTTP/2) plugs in by answering
// the same questions. HTTP/1.1's http::session answers them today; it knows nothing of this
// file (http/ does not depend on server/), so the one answer phrased in the connection's terms,
// what the protocol waits for, is an adapter here.

#include <tarry/http/session.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tarry::server {

/// What the protocol waits for, which decides the connection's phase, and so its timeout.
enum class protocol_wait : std::uint8_t {
    input,   ///< whatever comes next: a request's head, or the next request (the connection's
             ///< input says which: header, silent or keep_alive)
    body,    ///< a request body its handler reads: body_timeout between two reads
    discard, ///< the rest of a body answered already, read to be thrown away
    paused,  ///< a request body its handler holds, paused: the handler's timeouts bound it
    answer,  ///< the request is read whole (or tunnelled): its handler answers later
};

/// HTTP/1.1's answer.
[[nodiscard]] inline protocol_wait waits_for(const http::session& s) noexcept {
    switch (s.current_phase()) {
    case http::session::phase::waiting:
        return protocol_wait::answer; // a tunnel too, paused or not
    case http::session::phase::body:
        if (s.body_paused()) return protocol_wait::paused;
        return s.discarding() ? protocol_wait::discard : protocol_wait::body;
    case http::session::phase::idle:
    case http::session::phase::headers:
        break;
    }
    return protocol_wait::input;
}

/// What a connection asks of the protocol it drives.
template <class P>
concept client_protocol = requires(P& p, const P& cp, const char* data, std::size_t size,
                                   std::string& out, std::string_view date) {
    // Bytes in, responses out: how many of the bytes were taken (an incomplete head is not;
    // it comes again with more). The last argument: the client ended, nothing follows.
    { p.consume(data, size, out, date, true) } -> std::same_as<std::size_t>;
    { waits_for(cp) } -> std::same_as<protocol_wait>;
    // The connection closes once its output is written, and no handler is still answering.
    { cp.closing() } -> std::same_as<bool>;
    { cp.answering() } -> std::same_as<bool>;
    // Answered requests, for the keep-alive deadline and the durations measured.
    { cp.requests() } -> std::convertible_to<std::uint32_t>;
    // The output queue went out: a handler waiting for room hears of it.
    p.output_drained();
    // The connection's life: a graceful stop, a retirement (close after the next response),
    // the connection going away, an error answer at a timeout (408).
    p.drain();
    p.retire();
    { cp.retired() } -> std::same_as<bool>;
    p.abort();
    p.fail(408U, out, date);
    // A body from a file, which the connection streams after the queued output (sendfile).
    { cp.has_file() } -> std::same_as<bool>;
    { p.file() } -> std::same_as<http::file_body&>;
    p.file_done();
    // A tunnel (an upgrade): its bytes both ways as they come, and half-closes passed on.
    { cp.tunneling() } -> std::same_as<bool>;
    { p.input_ended() } -> std::same_as<bool>;
    { p.take_output_shutdown() } -> std::same_as<bool>;
};

static_assert(client_protocol<http::session>);

} // namespace tarry::server

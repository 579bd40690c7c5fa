#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace tarry::server {

/// Why a connection ended. Counted per reason; only `error` is ever an error.
enum class close_reason : std::size_t {
    client_close,       ///< the peer closed (or reset) between or during requests
    keep_alive_timeout, ///< idle between requests for keep_alive_timeout
    header_timeout,     ///< headers not complete within header_timeout
    body_timeout,       ///< a request body stalled for body_timeout
    send_timeout,       ///< the client did not drain a response for send_timeout
    done,               ///< the last response said Connection: close (request, limit, error)
    shutdown,           ///< graceful stop or its deadline
    pressure,           ///< an idle connection reclaimed for a new one (fd limit)
    error,              ///< an I/O error other than a reset
    proxy_header,       ///< a proxy_protocol listener got no valid PROXY header
    handshake,  ///< a TLS handshake failed or timed out (tarry_tls_handshake_failures_total)
    tls,        ///< a TLS protocol error after the handshake (an alert was sent)
    per_client, ///< refused: its client held max_connections_per_client already
    /// HTTP/2: our SETTINGS, or the PING of http2_ping_interval, unanswered for
    /// http2_ack_timeout (GOAWAY sent)
    http2_ack_timeout,
    count_
};

inline constexpr std::array<std::string_view, static_cast<std::size_t>(close_reason::count_)>
    close_reason_names{"client_close", "keep_alive_timeout", "header_timeout",
                       "body_timeout", "send_timeout",       "done",
                       "shutdown",     "pressure",           "error",
                       "proxy_header", "handshake",          "tls",
                       "per_client",   "http2_ack_timeout"};
// A std::array with too few initialisers compiles: an empty last name means one is missing.
static_assert(!close_reason_names.back().empty());

} // namespace tarry::server

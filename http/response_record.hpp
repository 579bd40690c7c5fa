#pragma once

#include "request_parser.hpp"

#include <chrono>
#include <cstdint>
#include <string_view>

namespace tarry::http {

/// What the upstream of a proxied response did, for the access log (nginx's $upstream_*): each
/// time from the moment the proxy began (picked a server) to that event, in microseconds, -1
/// for an event that did not happen. The last server tried is the one reported.
struct upstream_timing {
    std::int64_t connect_us = -1;  ///< connected ($upstream_connect_time; 0 on a pooled one)
    std::int64_t header_us = -1;   ///< the response head came ($upstream_header_time)
    std::int64_t response_us = -1; ///< the response ended, or failed ($upstream_response_time)
    unsigned status = 0;           ///< the upstream's status ($upstream_status); 0: none came
};

/// One response once it is over (its last byte handed to the output, or the exchange cut
/// short), as the access log writes it. Protocol-neutral: whatever frames the response fills
/// the same record.
struct response_record {
    /// The request, or null when the bytes never made one (a malformed or oversized head).
    const request_head* request = nullptr;
    /// Without a request: the start of what the client sent (its first line, at most
    /// received_max bytes), as it came; empty when there was nothing.
    std::string_view received;
    unsigned status = 0;
    /// The body bytes sent, as nginx's $body_bytes_sent: a chunked body's framing counts (the
    /// bytes after the head), a HEAD's or a 304's is 0, a file's is what was sent of it.
    std::uint64_t body_bytes = 0;
    /// A tunnel (after a 101): the client's bytes passed through it.
    std::uint64_t tunnel_bytes_in = 0;
    /// When the request's first byte came (the transport's clock).
    std::chrono::steady_clock::time_point started{};
    /// Null unless the response was proxied.
    const upstream_timing* upstream = nullptr;

    /// The most of a request that never parsed that is kept for the log.
    static constexpr std::size_t received_max = 1024;
};

} // namespace tarry::http

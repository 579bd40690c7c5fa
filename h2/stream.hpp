#pragma once

// One HTTP/2 stream as the server's connection keeps it (RFC 9113, 5.1), from the request's
// HEADERS until both sides ended it or it was reset. Idle and closed streams are not kept:
// an identifier above the highest one seen is idle, one at or below it and not in the table is
// closed, so the table holds open and half-closed streams only, and is freed when it empties.

#include "window.hpp"

#include <cstdint>
#include <string>

namespace tarry::h2 {

struct stream {
    explicit stream(std::uint32_t stream_id) noexcept : id(stream_id) {}

    std::uint32_t id;
    bool remote_closed = false; ///< END_STREAM received (half-closed (remote))
    bool local_closed = false;  ///< END_STREAM sent (half-closed (local))
    bool responded = false;     ///< the response's HEADERS went out
    bool end_queued = false;    ///< the owner ended its side: END_STREAM after `out`
    bool end_pending = false;   ///< END_STREAM received, not yet told (paused body bytes first)
    bool want_room = false;     ///< the owner was refused room: tell it when there is some
    bool paused = false;        ///< the owner took fewer body bytes than given
    bool tunnel = false;        ///< an extended CONNECT (RFC 8441): DATA carry a tunnel's bytes
    std::uint8_t watching = 0;  ///< the owner's deadlines on for it (bits by h2::watch)
    window send;                ///< the peer's window for what we send
    window recv;                ///< ours for what it sends
    std::int64_t content_length = -1;
    std::uint64_t received = 0; ///< body bytes received, against content_length
    std::string in;             ///< body bytes the owner did not take yet (paused)
    std::string out;            ///< DATA waiting for room in the windows, from out_at
    std::size_t out_at = 0;
    std::string trailers; ///< a field block to send once `out` went out

    [[nodiscard]] std::size_t queued() const noexcept { return out.size() - out_at; }
};

} // namespace tarry::h2

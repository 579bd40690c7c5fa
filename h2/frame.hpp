#pragma once

// HTTP/2 frames without I/O (RFC 9113, sections 4 and 6): a reader that cuts the bytes a
// connection received into frames, and writers that append frames to a connection's output.
//
// HOW the reader keeps memory small. It owns no buffer. The caller passes the bytes it has
// (a per-worker read buffer, plus whatever it kept from the last read); read() returns one event
// and how many bytes it consumed, and the caller calls again with the rest:
//
//   in:  [ header | payload ][ header | payload ][ head ]      <- bytes from the socket
//         ^ frame event       ^ frame event      ^ need_more: consumed 0, keep these bytes
//
// A frame event's payload is a view into the caller's bytes, valid as long as they are. Only an
// incomplete tail stays with the caller, and only until it completes: at most 9 + max_frame_size
// bytes, and none at all while the connection is idle between frames.
//
// DATA is the exception that keeps even that bound off the common path: its payload is handed
// over in pieces as it arrives (`data` events: the first carries the header as soon as it and
// the pad length are in, with whatever payload came along, possibly none; the last is marked),
// so a 16 KB DATA frame arriving over several reads is never gathered in one place. The reader
// remembers the DATA frame in progress in a few bytes (its header, the payload and padding still
// to come); padding is consumed and never shown. Extension frames of unknown types are reported
// once by their header and their payload skipped the same way.
//
// WHY a stateless check here and the rest in the session: every rule the RFC states of a frame
// alone (lengths, stream 0 or not, padding, self-dependency, a zero window increment) is checked
// before an event is returned, with the error the RFC names; rules that need the connection
// (stream states, CONTINUATION order, flow control, SETTINGS timing) belong to the session.

#include "frame_types.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tarry::h2 {

using bytes = std::span<const std::uint8_t>;

inline bytes as_bytes(std::string_view s) noexcept {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

inline std::uint32_t read_u32(const std::uint8_t* p) noexcept {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           std::uint32_t{p[3]};
}

struct frame_header {
    std::uint32_t length = 0; ///< payload bytes (24 bits)
    std::uint8_t type = 0;    ///< a frame_type, or an extension's
    std::uint8_t flags = 0;
    std::uint32_t stream = 0; ///< the reserved bit cleared

    [[nodiscard]] frame_type kind() const noexcept { return static_cast<frame_type>(type); }
    [[nodiscard]] bool is(frame_type t) const noexcept { return type == static_cast<uint8_t>(t); }
    [[nodiscard]] bool has(std::uint8_t f) const noexcept { return (flags & f) != 0; }
};

/// The 9-byte frame header at `p`.
frame_header parse_frame_header(const std::uint8_t* p) noexcept;

/// The rules of section 6 that the header alone decides, for a frame within `max_frame_size`:
/// a stream identifier where none may be or none where one must be, and the fixed lengths.
frame_error check_frame_header(const frame_header& h) noexcept;

class frame_reader {
public:
    enum class event : std::uint8_t {
        need_more, ///< no event; keep the bytes past `consumed` and call again with more
        frame,     ///< a whole frame other than DATA
        data,      ///< a piece of a DATA frame's payload
        error,     ///< `error` says which; a connection error ends the connection
    };

    struct result {
        event what = event::need_more;
        std::size_t consumed = 0; ///< always drop these bytes before the next call
        frame_header header{};
        /// frame: the payload without padding; for HEADERS also without the priority fields
        /// (deprecated, checked and dropped), i.e. the field block fragment; for PUSH_PROMISE
        /// the promised stream identifier and the fragment; empty for an extension's frame.
        /// data: this piece of the payload (padding never included).
        bytes payload{};
        bool first = false; ///< data: the frame's first event (its whole length counts against
                            ///< flow control, padding included: RFC 9113, 6.9.1)
        bool last = false;  ///< data: the frame's last event (then END_STREAM applies)
        /// error: what the RFC asks. A `frame` event may carry a stream error too: a HEADERS
        /// frame that depends on itself, whose field block must still be decoded (for the
        /// HPACK table) before the stream is reset.
        frame_error error{};
    };

    explicit frame_reader(std::uint32_t max_frame_size = default_max_frame_size) noexcept
        : max_frame_size_(max_frame_size) {}

    /// The SETTINGS_MAX_FRAME_SIZE this endpoint advertised, once the peer acknowledged it.
    void set_max_frame_size(std::uint32_t n) noexcept { max_frame_size_ = n; }
    [[nodiscard]] std::uint32_t max_frame_size() const noexcept { return max_frame_size_; }

    /// The next event from `in`, the bytes not yet consumed.
    result read(bytes in) noexcept;

    /// Between frames: no DATA frame or skipped payload in progress.
    [[nodiscard]] bool between_frames() const noexcept { return state_ == state::header; }

private:
    enum class state : std::uint8_t { header, data_payload, data_padding, skip };

    result start(bytes in) noexcept;
    result continue_data(bytes in) noexcept;
    result finish_frame(const frame_header& h, bytes payload, std::size_t consumed) noexcept;

    frame_header current_{}; ///< the DATA frame in progress
    std::uint32_t left_ = 0; ///< its payload still to come, or the bytes still to skip
    std::uint8_t pad_left_ = 0;
    state state_ = state::header;
    std::uint32_t max_frame_size_;
};

/// Calls f(id, value) for each setting of a SETTINGS payload (a multiple of 6 bytes).
template <class F> void for_each_setting(bytes payload, F&& f) {
    for (std::size_t at = 0; at + 6 <= payload.size(); at += 6) {
        const auto id = static_cast<std::uint16_t>((payload[at] << 8) | payload[at + 1]);
        f(id, read_u32(payload.data() + at + 2));
    }
}

/// Applies every setting of a SETTINGS payload to `to`, in order; the first value's error.
error_code apply_settings(settings& to, bytes payload) noexcept;

struct goaway_payload {
    std::uint32_t last_stream = 0;
    std::uint32_t code = 0; ///< an error_code, possibly unknown
    bytes debug{};
};
/// The fields of a GOAWAY payload (at least 8 bytes, as the reader checked).
goaway_payload parse_goaway(bytes payload) noexcept;
/// The increment of a WINDOW_UPDATE payload, or the code of a RST_STREAM payload (4 bytes).
inline std::uint32_t read_u31(bytes payload) noexcept {
    return read_u32(payload.data()) & max_stream_id;
}

// Writers: each appends one frame (HEADERS: one block) to `out`, the connection's output.

void write_frame_header(std::string& out, std::uint32_t length, frame_type type, std::uint8_t flags,
                        std::uint32_t stream);
void write_settings(std::string& out, std::span<const setting> values);
/// A SETTINGS frame with the values of `ours` that differ from `known`, what the peer has of
/// them (the RFC's initial values until an earlier SETTINGS was acknowledged); an empty SETTINGS
/// frame if none does (the connection preface needs one anyway).
void write_settings(std::string& out, const settings& ours, const settings& known = {});
void write_settings_ack(std::string& out);
void write_ping(std::string& out, bytes opaque8, bool ack);
inline void write_ping_ack(std::string& out, bytes opaque8) {
    write_ping(out, opaque8, true);
}
void write_goaway(std::string& out, std::uint32_t last_stream, error_code code,
                  std::string_view debug = {});
void write_rst_stream(std::string& out, std::uint32_t stream, error_code code);
void write_window_update(std::string& out, std::uint32_t stream, std::uint32_t increment);
/// A field block as one HEADERS frame, or HEADERS then CONTINUATION frames of at most
/// `max_frame_size` bytes each (the peer's SETTINGS_MAX_FRAME_SIZE).
void write_headers(std::string& out, std::uint32_t stream, std::string_view block, bool end_stream,
                   std::uint32_t max_frame_size = default_max_frame_size);
/// One DATA frame (at most the peer's max_frame_size bytes), or only its header, for a payload
/// the caller sends from elsewhere (a file).
void write_data(std::string& out, std::uint32_t stream, std::string_view payload, bool end_stream);
void write_data_header(std::string& out, std::uint32_t stream, std::uint32_t length,
                       bool end_stream);

} // namespace tarry::h2

#pragma once

// The vocabulary of HTTP/2's framing layer (RFC 9113 sections 4, 6 and 7): frame types, flags,
// error codes and SETTINGS. No code beyond the checks of a SETTINGS value.

#include <cstdint>
#include <string_view>

namespace tarry::h2 {

/// The client connection preface (RFC 9113, 3.4), followed by the client's SETTINGS frame.
inline constexpr std::string_view client_preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

inline constexpr std::size_t frame_header_size = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value and lower bound, and its upper bound (RFC 9113, 6.5.2).
inline constexpr std::uint32_t default_max_frame_size = 16384;
inline constexpr std::uint32_t largest_max_frame_size = (1U << 24) - 1;
/// The largest flow-control window and stream identifier (31 bits).
inline constexpr std::uint32_t max_window = 0x7fffffff;
inline constexpr std::uint32_t max_stream_id = 0x7fffffff;

enum class frame_type : std::uint8_t {
    data = 0x0,
    headers = 0x1,
    priority = 0x2,
    rst_stream = 0x3,
    settings = 0x4,
    push_promise = 0x5,
    ping = 0x6,
    goaway = 0x7,
    window_update = 0x8,
    continuation = 0x9,
};
/// Types past CONTINUATION are extensions: a receiver ignores those it does not know (4.1).
inline constexpr std::uint8_t last_known_frame_type = 0x9;

/// Frame flags; which apply depends on the type (section 6).
namespace flag {
inline constexpr std::uint8_t end_stream = 0x01;  ///< DATA, HEADERS
inline constexpr std::uint8_t ack = 0x01;         ///< SETTINGS, PING
inline constexpr std::uint8_t end_headers = 0x04; ///< HEADERS, PUSH_PROMISE, CONTINUATION
inline constexpr std::uint8_t padded = 0x08;      ///< DATA, HEADERS, PUSH_PROMISE
inline constexpr std::uint8_t priority = 0x20;    ///< HEADERS
} // namespace flag

/// Error codes of RST_STREAM and GOAWAY (section 7). Unknown codes received are kept as numbers.
enum class error_code : std::uint32_t {
    no_error = 0x0,
    protocol_error = 0x1,
    internal_error = 0x2,
    flow_control_error = 0x3,
    settings_timeout = 0x4,
    stream_closed = 0x5,
    frame_size_error = 0x6,
    refused_stream = 0x7,
    cancel = 0x8,
    compression_error = 0x9,
    connect_error = 0xa,
    enhance_your_calm = 0xb,
    inadequate_security = 0xc,
    http_1_1_required = 0xd,
};

/// "PROTOCOL_ERROR" and so on, for logs and metrics; "UNKNOWN" past HTTP_1_1_REQUIRED.
std::string_view to_string(error_code code) noexcept;

/// An error the RFC asks a receiver to treat as a connection error (stream 0: GOAWAY, then
/// close) or as a stream error (RST_STREAM on `stream`, the connection goes on).
struct frame_error {
    error_code code = error_code::no_error;
    std::uint32_t stream = 0; ///< 0: a connection error

    [[nodiscard]] bool connection_error() const noexcept { return stream == 0; }
    friend bool operator==(const frame_error&, const frame_error&) = default;
};

enum class settings_id : std::uint16_t {
    header_table_size = 0x1,
    enable_push = 0x2,
    max_concurrent_streams = 0x3,
    initial_window_size = 0x4,
    max_frame_size = 0x5,
    max_header_list_size = 0x6,
    enable_connect_protocol = 0x8, ///< RFC 8441
};

/// One endpoint's SETTINGS, at their initial values (RFC 9113, 6.5.2). 28 bytes: a connection
/// keeps the peer's, and what it sent and the peer acknowledged.
struct settings {
    static constexpr std::uint32_t unlimited = 0xffffffff;

    std::uint32_t header_table_size = 4096;
    std::uint32_t enable_push = 1;
    std::uint32_t max_concurrent_streams = unlimited;
    std::uint32_t initial_window_size = 65535;
    std::uint32_t max_frame_size = default_max_frame_size;
    std::uint32_t max_header_list_size = unlimited;
    std::uint32_t enable_connect_protocol = 0;

    /// Takes one received setting: the RFC's error for a value out of range (ENABLE_PUSH and
    /// ENABLE_CONNECT_PROTOCOL not 0 or 1: PROTOCOL_ERROR; INITIAL_WINDOW_SIZE above 2^31-1:
    /// FLOW_CONTROL_ERROR; MAX_FRAME_SIZE outside 2^14..2^24-1: PROTOCOL_ERROR), no_error
    /// otherwise. Unknown identifiers are ignored (6.5.2).
    error_code apply(std::uint16_t id, std::uint32_t value) noexcept;

    friend bool operator==(const settings&, const settings&) = default;
};

/// One identifier/value pair of a SETTINGS frame.
struct setting {
    settings_id id;
    std::uint32_t value;
};

} // namespace tarry::h2

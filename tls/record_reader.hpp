#pragma once

#include "record_protection.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tarry::tls {

/// Records that carry nothing for the application (empty application data, warning alerts,
/// KeyUpdates), taken in a row (no application data in between) before the connection is closed
/// with unexpected_message: each costs an AEAD open (a KeyUpdate three key derivations, and an
/// answer when requested), and a peer pouring them in would hold the worker in one recv().
/// OpenSSL's limits for the first two (MAX_EMPTY_RECORDS; its 5th warning alert is fatal);
/// fewer KeyUpdates, the dearest (a client rotates its keys as it writes: one between data
/// records, rarely two).
inline constexpr unsigned max_empty_records = 32;
inline constexpr unsigned max_warning_alerts = 4;
inline constexpr unsigned max_key_updates = 4;

/// Which of those limits a connection reached (metrics).
enum class noop_limit : std::uint8_t { empty_records, warning_alerts, key_updates, none };
inline constexpr std::array<std::string_view, 3> noop_limit_names{"empty_data", "warning_alert",
                                                                  "key_update"};

/// TLS alert descriptions (RFC 8446, 6).
enum alert_description : std::uint8_t {
    close_notify_alert = 0,
    unexpected_message = 10,
    bad_record_mac = 20,
    record_overflow = 22,
    illegal_parameter = 47,
    decode_error = 50,
    internal_error = 80,
    user_canceled = 90,
};

/// What one record read brought (record_reader::read).
struct record_event {
    enum kind : std::uint8_t {
        need_more,    ///< no whole record at the front of the input yet (`used` is 0)
        data,         ///< application data: `length` bytes of plaintext at input + `offset`
        nothing,      ///< taken, nothing for the application: an empty record, user_canceled, a
                      ///< fragment of a KeyUpdate
        key_update,   ///< the peer's KeyUpdate: the read key is updated; `requested`: it asks
                      ///< for ours (record_writer::answer_key_update)
        close_notify, ///< the end of the peer's input
        peer_alert,   ///< a fatal alert from the peer (`alert`): the connection is over
        error,        ///< a protocol error: send `alert` (fatal) and close
    };
    kind what = need_more;
    std::uint8_t alert = 0;
    bool requested = false;
    std::uint16_t used = 0; ///< input bytes this record took (taken off the front by the caller)
    std::uint16_t offset = 0;
    std::uint16_t length = 0;
};
// Returned in registers, on the path of every record: a record's size fits in 16 bits.
static_assert(record_header_bytes + max_ciphertext <= UINT16_MAX && sizeof(record_event) <= 16);

/// The receiving half of tarry's TLS 1.3 records after the handshake, without I/O (as picotls's
/// ptls_receive): the caller hands it the ciphertext it has, and it opens the record at the
/// front in place and says what it brought (record_event). Everything TLS 1.3 allows after the
/// handshake is taken: application data (padding stripped), KeyUpdate (fragmented over records,
/// as RFC 8446, 5.1 allows), close_notify, user_canceled, and from a server NewSessionTicket
/// (skipped: a session is resumed from the tickets OpenSSL read during the handshake's first
/// exchange, see client_stream); anything else is a protocol error,
/// with the alert RFC 8446 names (docs/tls.md: "received -> answer"), and so is a run of records
/// that carry nothing past the limits above.
///
/// What it keeps: the read key (record_protection) and four bytes of state between records.
/// After an error, a peer's alert or close_notify, nothing more is to be read.
class record_reader {
public:
    /// From the peer's traffic secret, `seq` records already opened under it. `from_server`:
    /// the peer is a server (we are its client), whose NewSessionTickets may come at any time.
    bool init(aead a, std::span<const std::uint8_t> secret, std::uint64_t seq = 0,
              bool from_server = false) noexcept {
        from_server_ = from_server;
        return read_.init(a, secret, seq);
    }
    /// The record at the front of `in` (`n` bytes, a record or more, or part of one), opened in
    /// place: its plaintext stays in `in`.
    record_event read(std::uint8_t* in, std::size_t n) noexcept;

    /// The limit on records without data this connection went past (after an error event).
    [[nodiscard]] noop_limit limit_reached() const noexcept;
    [[nodiscard]] std::uint64_t sequence() const noexcept { return read_.sequence(); }

    /// KeyUpdates received over this thread's life (metrics).
    static std::uint64_t key_updates() noexcept;

private:
    /// One opened record other than application data.
    record_event take_record(std::uint8_t type, const std::uint8_t* body, std::size_t len) noexcept;
    /// The bytes of handshake messages in a record (KeyUpdate only).
    record_event take_handshake(const std::uint8_t* body, std::size_t len) noexcept;
    /// An application data record that is empty, or ends a run of records without data.
    record_event take_quiet_data(std::size_t len) noexcept;
    /// Whether a handshake message split over records has more to come (RFC 8446, 5.1:
    /// nothing else may come in between).
    [[nodiscard]] bool mid_message() const noexcept {
        return run_.key_update_part != 0 || ticket_head_ != 0;
    }

    record_protection read_;
    /// Records without application data since the last that carried some (the limits above),
    /// and the bytes of a KeyUpdate split over records seen so far.
    struct quiet_run {
        std::uint8_t empty_records = 0;
        std::uint8_t warning_alerts = 0;
        std::uint8_t key_updates = 0;
        std::uint8_t key_update_part = 0; ///< of its 5 bytes (4 fixed, then request_update)
        bool operator==(const quiet_run&) const = default;
    };
    quiet_run run_;
    /// A NewSessionTicket being skipped (from a server): the bytes of its body still to come,
    /// and how many of its 4-byte header came (0: none is being skipped).
    std::uint32_t ticket_left_ = 0;
    std::uint8_t ticket_head_ = 0;
    bool from_server_ = false;
};

} // namespace tarry::tls

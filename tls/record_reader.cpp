#include "record_reader.hpp"

#include <algorithm>

namespace tarry::tls {
namespace {

thread_local std::uint64_t key_updates_received = 0;

constexpr std::uint8_t new_session_ticket_type = 4;
constexpr std::uint8_t key_update_type = 24;

record_event fail(std::uint8_t description, std::size_t used = 0) noexcept {
    record_event e;
    e.what = record_event::error;
    e.alert = description;
    e.used = static_cast<std::uint16_t>(used);
    return e;
}

record_event taken(record_event::kind what = record_event::nothing) noexcept {
    record_event e;
    e.what = what;
    return e;
}

} // namespace

std::uint64_t record_reader::key_updates() noexcept {
    return key_updates_received;
}

record_event record_reader::read(std::uint8_t* in, std::size_t n) noexcept {
    if (n < record_header_bytes) return {};
    const std::size_t len = std::size_t{in[3]} << 8 | in[4];
    // change_cipher_spec, or anything unprotected, after the handshake
    if (in[0] != application_data) return fail(unexpected_message);
    if (len > max_ciphertext) return fail(record_overflow);
    if (n < record_header_bytes + len) return {};
    const std::size_t used = record_header_bytes + len;
    const auto opened = read_.open(in, used);
    if (!opened) return fail(bad_record_mac, used);
    if (opened->length > max_plaintext) return fail(record_overflow, used);
    record_event e;
    if (opened->type == application_data) {
        if (opened->length == 0 || run_ != quiet_run{}) [[unlikely]] {
            e = take_quiet_data(opened->length);
            if (e.what == record_event::error || opened->length == 0) {
                e.used = static_cast<std::uint16_t>(used);
                return e;
            }
        }
        e.what = record_event::data;
        e.offset = record_header_bytes;
        e.length = static_cast<std::uint16_t>(opened->length);
    } else {
        e = take_record(opened->type, in + record_header_bytes, opened->length);
    }
    e.used = static_cast<std::uint16_t>(used);
    return e;
}

record_event record_reader::take_quiet_data(std::size_t len) noexcept {
    // RFC 8446, 5.1: nothing comes between the fragments of a handshake message.
    if (mid_message()) return fail(unexpected_message);
    if (len != 0) {
        run_ = {}; // data: the run of records without it is over
        return taken();
    }
    if (++run_.empty_records > max_empty_records) return fail(unexpected_message);
    return taken();
}

record_event record_reader::take_record(std::uint8_t type, const std::uint8_t* body,
                                        std::size_t len) noexcept {
    // RFC 8446, 5.4: only data records may be empty; 5.1: nothing comes between the fragments
    // of a handshake message.
    if ((len == 0 && type != application_data) || (mid_message() && type != handshake_record))
        return fail(unexpected_message);
    if (type == alert) {
        if (len != 2) return fail(decode_error);
        if (body[1] == close_notify_alert) return taken(record_event::close_notify);
        if (body[1] != user_canceled) { // every other alert is fatal in TLS 1.3
            record_event e = taken(record_event::peer_alert);
            e.alert = body[1];
            return e;
        }
        // A close_notify follows; a run of them is a peer keeping us busy.
        if (++run_.warning_alerts > max_warning_alerts) return fail(unexpected_message);
        return taken();
    }
    if (type != handshake_record) return fail(unexpected_message);
    return take_handshake(body, len);
}

record_event record_reader::take_handshake(const std::uint8_t* body, std::size_t len) noexcept {
    // Handshake messages after the handshake: KeyUpdate, and from a server NewSessionTicket
    // (skipped); a server never asks for the others. A KeyUpdate's five bytes may come split
    // over records (RFC 8446, 5.1); all but the last are fixed, so how many came is all there is
    // to keep between records. A KeyUpdate ends its record: the next one uses the new key.
    static constexpr std::uint8_t head[4] = {key_update_type, 0, 0, 1}; // a 1-byte body
    for (std::size_t i = 0; i < len; ++i) {
        const std::uint8_t c = body[i];
        if (ticket_head_ != 0) { // a ticket's header (type, 24-bit length), then its body
            if (ticket_head_ < 4) {
                ticket_left_ = ticket_left_ << 8 | c;
                ++ticket_head_;
            } else {
                const std::size_t skip = std::min<std::size_t>(ticket_left_, len - i);
                ticket_left_ -= static_cast<std::uint32_t>(skip);
                i += skip - 1;
            }
            if (ticket_head_ == 4 && ticket_left_ == 0) ticket_head_ = 0;
            continue;
        }
        if (from_server_ && run_.key_update_part == 0 && c == new_session_ticket_type) {
            // Each costs an AEAD open, as an empty record does: counted with them.
            if (++run_.empty_records > max_empty_records) return fail(unexpected_message);
            ticket_head_ = 1;
            continue;
        }
        if (run_.key_update_part < sizeof head) {
            // Another message (unexpected), or a KeyUpdate whose length is not 1.
            if (c != head[run_.key_update_part])
                return fail(run_.key_update_part == 0 ? unexpected_message : decode_error);
            ++run_.key_update_part;
            continue;
        }
        run_.key_update_part = 0;
        if (i + 1 != len) return fail(unexpected_message); // a key change ends its record
        if (c > 1) return fail(illegal_parameter);
        if (++run_.key_updates > max_key_updates) return fail(unexpected_message);
        if (!read_.update()) return fail(internal_error);
        ++key_updates_received;
        record_event e = taken(record_event::key_update);
        e.requested = c == 1;
        return e;
    }
    return taken();
}

noop_limit record_reader::limit_reached() const noexcept {
    if (run_.empty_records > max_empty_records) return noop_limit::empty_records;
    if (run_.warning_alerts > max_warning_alerts) return noop_limit::warning_alerts;
    if (run_.key_updates > max_key_updates) return noop_limit::key_updates;
    return noop_limit::none;
}

} // namespace tarry::tls

#include "record_writer.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

namespace tarry::tls {
namespace {

thread_local std::uint64_t key_updates_sent = 0;

constexpr std::uint8_t key_update_type = 24;
/// Bounds kept free for control records when data is sealed: a KeyUpdate in answer, an alert.
constexpr std::size_t control_room = 4;

} // namespace

void record_output::clear() noexcept {
    off = len = ahead = sent = bounds_n = 0;
    key_update_waiting = false;
}

void record_output::consumed(std::size_t n) noexcept {
    off += n;
    std::size_t done = 0;
    while (done != bounds_n && bounds[done].end <= off) {
        sent += bounds[done].plain;
        ahead -= bounds[done].plain;
        if (bounds[done].key_update) key_update_waiting = false;
        ++done;
    }
    if (done != 0) {
        std::memmove(bounds, bounds + done, (bounds_n - done) * sizeof bounds[0]);
        bounds_n -= done;
    }
    if (off == len) off = len = 0; // (every record is out: no bound is left)
}

bool record_output::append(const std::uint8_t* data, std::size_t n) noexcept {
    if (capacity - len < n || bounds_n + control_room >= std::size(bounds)) return false;
    std::memcpy(bytes + len, data, n);
    len += n;
    bounds[bounds_n++] = {len, 0, false};
    return true;
}

std::uint64_t record_writer::key_updates() noexcept {
    return key_updates_sent;
}

record_writer::sealed record_writer::seal(record_output& out, const std::uint8_t* data,
                                          std::size_t n) noexcept {
    // The caller's first out.sent bytes are on the wire already (the records went out while
    // the caller was not told), the next out.ahead sealed and waiting: a retry starts with the
    // same bytes, never fewer.
    if (out.sent + out.ahead > n) return sealed::shrunk;
    // Seal what fits behind what waits, leaving room for control records.
    while (out.sent + out.ahead < n && out.bounds_n + control_room < std::size(out.bounds)) {
        if (write_.worn() && !key_update(out)) return sealed::exhausted;
        const std::size_t chunk = std::min(n - out.sent - out.ahead, max_plaintext);
        if (record_output::capacity - out.len < chunk + record_overhead) break;
        const std::size_t size =
            write_.seal(application_data, data + out.sent + out.ahead, chunk, out.bytes + out.len);
        if (size == 0) return sealed::exhausted;
        out.len += size;
        out.bounds[out.bounds_n++] = {out.len, chunk, false};
        out.ahead += chunk;
    }
    return sealed::ok;
}

bool record_writer::control(record_output& out, std::uint8_t type, const std::uint8_t* body,
                            std::size_t len, bool key_update) noexcept {
    if (out.bounds_n == std::size(out.bounds) ||
        record_output::capacity - out.len < len + record_overhead)
        return false;
    const std::size_t size = write_.seal(type, body, len, out.bytes + out.len);
    if (size == 0) return false;
    out.len += size;
    out.bounds[out.bounds_n++] = {out.len, 0, key_update};
    if (key_update) out.key_update_waiting = true;
    return true;
}

bool record_writer::alert(record_output& out, std::uint8_t level,
                          std::uint8_t description) noexcept {
    const std::uint8_t a[] = {level, description};
    return control(out, tls::alert, a, sizeof a, false);
}

bool record_writer::key_update(record_output& out) noexcept {
    const std::uint8_t ku[] = {key_update_type, 0, 0, 1, 0}; // update_not_requested
    if (!control(out, handshake_record, ku, sizeof ku, true) || !write_.update()) return false;
    ++key_updates_sent;
    return true;
}

} // namespace tarry::tls

#pragma once

#include "record_protection.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace tarry::tls {

/// Records sealed and not yet on the wire, each remembered with the caller's plaintext it
/// carries, so that bytes are reported sent only once their record is all out: the output half of
/// a connection's record buffers (taken while bytes move, given back when it is empty).
struct record_output {
    static constexpr std::size_t records = 2;
    static constexpr std::size_t capacity = records * (max_plaintext + record_overhead) + 256;
    struct bound {
        std::size_t end;   ///< the record's last byte + 1, in bytes
        std::size_t plain; ///< the caller's bytes it carries (0: an alert, a KeyUpdate)
        bool key_update;   ///< our KeyUpdate
    };
    std::size_t off = 0; ///< bytes[off, len) wait for the wire
    std::size_t len = 0;
    std::size_t ahead = 0; ///< the caller's bytes sealed, not yet on the wire
    std::size_t sent = 0;  ///< the caller's bytes on the wire, not yet reported
    std::size_t bounds_n = 0;
    bool key_update_waiting = false; ///< a KeyUpdate of ours is sealed, not yet on the wire
    bound bounds[records + 14];
    std::uint8_t bytes[capacity];

    /// Empty again (the arrays are left as they are).
    void clear() noexcept;
    [[nodiscard]] bool empty() const noexcept { return off == len; }
    /// What waits for the wire.
    [[nodiscard]] std::span<const std::uint8_t> pending() const noexcept {
        return {bytes + off, len - off};
    }
    /// `n` bytes of pending() went on the wire: the caller's bytes of the records now all out
    /// are counted in `sent`.
    void consumed(std::size_t n) noexcept;
    /// The caller's bytes on the wire not yet reported, reported now.
    std::size_t take_sent() noexcept {
        const std::size_t n = sent;
        sent = 0;
        return n;
    }
    /// Bytes that are not our records (OpenSSL's session tickets), to go out in their place in
    /// the queue; false when there is no room.
    bool append(const std::uint8_t* data, std::size_t n) noexcept;
};

/// The sending half of tarry's TLS 1.3 records after the handshake, without I/O (as picotls's
/// ptls_send): it seals the caller's bytes, alerts and KeyUpdates into a record_output, and the
/// caller puts that on the wire and says how much went (record_output::consumed).
///
/// The retry contract is SSL_write's: bytes sealed but not yet on the wire stay sealed, so the
/// caller's next call must start with the same bytes (a retry may add more behind them, never
/// give fewer). Our KeyUpdate is sealed under the old key ahead of any more data, and the write
/// key updated behind it; one is sent on our own before the key has sealed rekey_after records.
///
/// What it keeps: the write key (record_protection).
class record_writer {
public:
    /// From our traffic secret, `seq` records already sealed under it.
    bool init(aead a, std::span<const std::uint8_t> secret, std::uint64_t seq = 0) noexcept {
        return write_.init(a, secret, seq);
    }

    enum class sealed : std::uint8_t {
        ok,       ///< what fits is sealed (out.sent + out.ahead of the caller's bytes, at most n)
        shrunk,   ///< fewer bytes than are sealed or sent already: not the retry of the last call
        exhausted ///< the key cannot seal more (a KeyUpdate failed), or the cipher failed
    };
    /// Seals what fits of the caller's `n` bytes at `data` behind what waits in `out`: those
    /// past the first out.sent + out.ahead, which are on the wire or sealed already.
    sealed seal(record_output& out, const std::uint8_t* data, std::size_t n) noexcept;
    /// An alert (level 1 warning, 2 fatal); false when it does not fit.
    bool alert(record_output& out, std::uint8_t level, std::uint8_t description) noexcept;
    /// Our KeyUpdate (update_not_requested), then our write key updated.
    bool key_update(record_output& out) noexcept;
    /// Our KeyUpdate in answer to the peer's request, unless one of ours still waits to go out
    /// (RFC 8446, 4.6.3: several requests are answered by one).
    bool answer_key_update(record_output& out) noexcept {
        return out.key_update_waiting || key_update(out);
    }

    [[nodiscard]] std::uint64_t sequence() const noexcept { return write_.sequence(); }

    /// KeyUpdates sent over this thread's life (metrics).
    static std::uint64_t key_updates() noexcept;

private:
    /// One control record (alert, KeyUpdate) into `out`.
    bool control(record_output& out, std::uint8_t type, const std::uint8_t* body, std::size_t len,
                 bool key_update) noexcept;

    record_protection write_;
};

} // namespace tarry::tls

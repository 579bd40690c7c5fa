#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace tarry::tls {

/// The AEAD algorithms of the TLS 1.3 cipher suites OpenSSL enables by default (RFC 8446, B.4).
enum class aead : std::uint8_t { aes_128_gcm, aes_256_gcm, chacha20_poly1305 };

/// The AEAD of a TLS 1.3 cipher suite by its IANA number (0x1301 ...), if it is one of these.
std::optional<aead> aead_of_suite(std::uint16_t suite) noexcept;

inline constexpr std::size_t record_header_bytes = 5;
inline constexpr std::size_t tag_bytes = 16;
/// The most plaintext one record carries (RFC 8446, 5.1).
inline constexpr std::size_t max_plaintext = 1 << 14;
/// The most a TLS 1.3 record's protected part may be (RFC 8446, 5.2: 2^14 + 256).
inline constexpr std::size_t max_ciphertext = max_plaintext + 256;
/// What one sealed record adds to its plaintext: header, inner content type, tag.
inline constexpr std::size_t record_overhead = record_header_bytes + 1 + tag_bytes;

/// TLS content types (RFC 8446, 5.1).
enum content_type : std::uint8_t {
    change_cipher_spec = 20,
    alert = 21,
    handshake_record = 22,
    application_data = 23,
};

/// One direction of a TLS 1.3 connection's record protection after the handshake: the traffic
/// secret (kept for KeyUpdate), the key and IV derived from it, and the record sequence number.
/// This is all an idle connection keeps of TLS: about a hundred bytes per direction, where an
/// OpenSSL object is kilobytes.
///
/// The cipher works in a per-thread EVP_CIPHER_CTX keyed for each record: no per-connection
/// OpenSSL state at all.
class record_protection {
public:
    /// From a traffic secret (RFC 8446, 7.3); false if the secret's size does not fit the AEAD.
    bool init(aead a, std::span<const std::uint8_t> secret, std::uint64_t seq = 0) noexcept;
    /// The next generation of keys (KeyUpdate, RFC 8446, 7.2); the sequence starts again at 0.
    bool update() noexcept;

    /// Seals `n` bytes of `type` into one record at `out` (room for n + record_overhead).
    /// Returns the record's size, or 0 if the sequence is exhausted or the cipher failed.
    std::size_t seal(std::uint8_t type, const std::uint8_t* plain, std::size_t n,
                     std::uint8_t* out) noexcept;

    struct opened {
        std::uint8_t type;
        std::size_t length; ///< plaintext, at record + record_header_bytes
    };
    /// Opens one whole record (header included) in place; nothing when it does not
    /// authenticate (bad_record_mac); type 0 when it carries no content type.
    std::optional<opened> open(std::uint8_t* record, std::size_t size) noexcept;

    [[nodiscard]] std::uint64_t sequence() const noexcept { return seq_; }
    /// Records left before this key must be replaced (RFC 8446, 5.5 limits AES-GCM keys).
    [[nodiscard]] bool worn() const noexcept { return seq_ >= rekey_after; }
    [[nodiscard]] aead algorithm() const noexcept { return aead_; }

    /// Well below RFC 8446's 2^24.5 records per AES-GCM key; also far from the 2^64 wrap.
    static constexpr std::uint64_t rekey_after = std::uint64_t{1} << 23;

private:
    void nonce(std::uint8_t out[12]) const noexcept;

    std::uint64_t seq_ = 0;
    std::uint8_t secret_[48]{};
    std::uint8_t key_[32]{};
    std::uint8_t iv_[12]{};
    std::uint8_t secret_len_ = 0;
    aead aead_ = aead::aes_128_gcm;
};

} // namespace tarry::tls

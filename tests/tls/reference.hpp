#pragma once

// An independent TLS 1.3 record sealer for the tests, built on OpenSSL's own HKDF (EVP_KDF) and
// AEADs: the record layer under test is compared with it byte for byte, and it makes records
// that record_protection::seal cannot (padding past 2^14, oversized plaintext).

#include <tarry/tls/record_protection.hpp>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::tls::test {

using bytes = std::vector<std::uint8_t>;

/// Bytes from hex as the RFCs print them: "17 03 03 00 43 ...", spaces ignored.
inline bytes hex(std::string_view h) {
    auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    bytes out;
    int hi = -1;
    for (char c : h) {
        const int d = digit(c);
        if (d < 0) continue;
        if (hi < 0) {
            hi = d;
        } else {
            out.push_back(static_cast<std::uint8_t>(hi << 4 | d));
            hi = -1;
        }
    }
    if (hi >= 0) throw std::invalid_argument("odd number of hex digits");
    return out;
}

inline bytes of(std::string_view s) {
    return bytes(s.begin(), s.end());
}

inline std::string text(std::span<const std::uint8_t> b) {
    return std::string(b.begin(), b.end());
}

/// Bytes 0, 1, 2 ... (mod 251, so that records of any length differ everywhere).
inline bytes pattern(std::size_t n, std::size_t offset = 0) {
    bytes b(n);
    for (std::size_t i = 0; i < n; ++i)
        b[i] = static_cast<std::uint8_t>((i + offset) % 251);
    return b;
}

inline const char* digest_name(aead a) {
    return a == aead::aes_256_gcm ? "SHA384" : "SHA256";
}

inline std::size_t hash_bytes(aead a) {
    return a == aead::aes_256_gcm ? 48 : 32;
}

inline std::size_t key_size(aead a) {
    return a == aead::aes_128_gcm ? 16 : 32;
}

inline const char* cipher_name(aead a) {
    switch (a) {
    case aead::aes_128_gcm:
        return "AES-128-GCM";
    case aead::aes_256_gcm:
        return "AES-256-GCM";
    case aead::chacha20_poly1305:
        break;
    }
    return "ChaCha20-Poly1305";
}

/// HKDF-Expand-Label (RFC 8446, 7.1) with an empty context, by OpenSSL's HKDF.
inline bytes expand_label(aead a, std::span<const std::uint8_t> secret, std::string_view label,
                          std::size_t length) {
    // HkdfLabel: uint16 length, label<7..255> = "tls13 " + label, context<0..255> (empty),
    // sized once and filled in place. Grown by push_back and then insert, GCC 12 at -O3 reports
    // the label's copy as a write at offset 4 of the 4-byte buffer the third push_back allocated:
    // it follows insert's in-place branch, taken only when the range fits in the capacity, for a
    // label that never does (-Wstringop-overflow, a false positive like GCC bug 106199). A buffer
    // of its final size has no capacity branch to misread.
    const std::string full = "tls13 " + std::string(label);
    bytes info(2 + 1 + full.size() + 1);
    info[0] = static_cast<std::uint8_t>(length >> 8);
    info[1] = static_cast<std::uint8_t>(length);
    info[2] = static_cast<std::uint8_t>(full.size());
    std::copy(full.begin(), full.end(), info.begin() + 3);
    info.back() = 0; // the context's length
    EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
    EVP_KDF_CTX* ctx = kdf != nullptr ? EVP_KDF_CTX_new(kdf) : nullptr;
    EVP_KDF_free(kdf);
    if (ctx == nullptr) throw std::runtime_error("no HKDF");
    int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    std::string md = digest_name(a);
    bytes key(secret.begin(), secret.end());
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, md.data(), 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, key.data(), key.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
        OSSL_PARAM_construct_end()};
    bytes out(length);
    const int ok = EVP_KDF_derive(ctx, out.data(), out.size(), params);
    EVP_KDF_CTX_free(ctx);
    if (ok != 1) throw std::runtime_error("HKDF failed");
    return out;
}

/// The next traffic secret (KeyUpdate, RFC 8446, 7.2).
inline bytes next_secret(aead a, std::span<const std::uint8_t> secret) {
    return expand_label(a, secret, "traffic upd", hash_bytes(a));
}

/// One record: `inner` is the whole TLSInnerPlaintext (content, type, padding), sealed with the
/// key and IV of `secret` at sequence number `seq`.
inline bytes reference_seal(aead a, std::span<const std::uint8_t> secret, std::uint64_t seq,
                            std::span<const std::uint8_t> inner) {
    const bytes key = expand_label(a, secret, "key", key_size(a));
    bytes nonce = expand_label(a, secret, "iv", 12);
    for (int i = 0; i < 8; ++i)
        nonce[4 + static_cast<std::size_t>(i)] ^= static_cast<std::uint8_t>(seq >> (56 - 8 * i));
    const std::size_t body = inner.size() + tag_bytes;
    // Sized once, as HkdfLabel is: the 5-byte header grown by resize draws the same kind of
    // false positive (-Warray-bounds on the appended bytes) from GCC 12 at -O3.
    bytes out(record_header_bytes + body);
    out[0] = application_data;
    out[1] = 3;
    out[2] = 3;
    out[3] = static_cast<std::uint8_t>(body >> 8);
    out[4] = static_cast<std::uint8_t>(body);
    EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, cipher_name(a), nullptr);
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    int len = 0;
    int fin = 0;
    const bool ok = cipher != nullptr && ctx != nullptr &&
                    EVP_EncryptInit_ex2(ctx, cipher, key.data(), nonce.data(), nullptr) == 1 &&
                    EVP_EncryptUpdate(ctx, nullptr, &len, out.data(), record_header_bytes) == 1 &&
                    EVP_EncryptUpdate(ctx, out.data() + record_header_bytes, &len, inner.data(),
                                      static_cast<int>(inner.size())) == 1 &&
                    EVP_EncryptFinal_ex(ctx, out.data() + record_header_bytes + len, &fin) == 1 &&
                    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, tag_bytes,
                                        out.data() + record_header_bytes + inner.size()) == 1;
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(cipher);
    if (!ok) throw std::runtime_error("AEAD failed");
    return out;
}

/// Traffic secrets for the tests (any bytes do; these differ per AEAD only in length).
inline bytes client_secret(aead a) {
    return pattern(hash_bytes(a), 7);
}

inline bytes server_secret(aead a) {
    return pattern(hash_bytes(a), 101);
}

inline const char* aead_name(aead a) {
    switch (a) {
    case aead::aes_128_gcm:
        return "aes_128_gcm";
    case aead::aes_256_gcm:
        return "aes_256_gcm";
    case aead::chacha20_poly1305:
        break;
    }
    return "chacha20_poly1305";
}

} // namespace tarry::tls::test

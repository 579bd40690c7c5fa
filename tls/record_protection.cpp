#include "record_protection.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstring>
#include <memory>
#include <string_view>

namespace tarry::tls {
namespace {

struct cipher_ctx_free {
    void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};

/// The algorithms, fetched once (an implicit fetch per record would cost a lookup each time).
const EVP_CIPHER* cipher_of(aead a) noexcept {
    static EVP_CIPHER* const ciphers[] = {
        EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr),
        EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr),
        EVP_CIPHER_fetch(nullptr, "ChaCha20-Poly1305", nullptr),
    };
    return ciphers[static_cast<std::size_t>(a)];
}

const EVP_MD* digest_of(aead a) noexcept {
    return a == aead::aes_256_gcm ? EVP_sha384() : EVP_sha256();
}

std::size_t key_bytes(aead a) noexcept {
    return a == aead::aes_128_gcm ? 16 : 32;
}

/// This thread's cipher context: keyed anew for every record, so connections hold none.
EVP_CIPHER_CTX* thread_ctx() noexcept {
    thread_local const std::unique_ptr<EVP_CIPHER_CTX, cipher_ctx_free> ctx{EVP_CIPHER_CTX_new()};
    return ctx.get();
}

struct mac_ctx_free {
    void operator()(EVP_MAC_CTX* c) const noexcept { EVP_MAC_CTX_free(c); }
};

EVP_MAC_CTX* new_hmac(const char* digest) noexcept {
    static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac == nullptr) return nullptr;
    EVP_MAC_CTX* c = EVP_MAC_CTX_new(mac);
    if (c == nullptr) return nullptr;
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>(digest), 0),
        OSSL_PARAM_construct_end()};
    if (EVP_MAC_CTX_set_params(c, params) != 1) {
        EVP_MAC_CTX_free(c);
        return nullptr;
    }
    return c;
}

/// This thread's HMAC for `md` (SHA-256 or SHA-384), its digest set once: OpenSSL 3's one-shot
/// HMAC() fetches the MAC and the digest anew on every call (provider look-ups under a lock),
/// and a connection's keys take four expansions.
EVP_MAC_CTX* thread_hmac(const EVP_MD* md) noexcept {
    thread_local const std::unique_ptr<EVP_MAC_CTX, mac_ctx_free> sha256{new_hmac("SHA256")};
    thread_local const std::unique_ptr<EVP_MAC_CTX, mac_ctx_free> sha384{new_hmac("SHA384")};
    return EVP_MD_get_size(md) == 48 ? sha384.get() : sha256.get();
}

/// HKDF-Expand-Label (RFC 8446, 7.1) for an output no longer than the hash: one HMAC block.
bool expand_label(const EVP_MD* md, std::span<const std::uint8_t> secret, std::string_view label,
                  std::uint8_t* out, std::size_t length) noexcept {
    std::uint8_t info[2 + 1 + 6 + 32 + 1 + 1];
    const std::size_t label_len = 6 + label.size();
    if (label_len > 38 || length > static_cast<std::size_t>(EVP_MD_get_size(md))) return false;
    std::size_t n = 0;
    info[n++] = static_cast<std::uint8_t>(length >> 8);
    info[n++] = static_cast<std::uint8_t>(length);
    info[n++] = static_cast<std::uint8_t>(label_len);
    std::memcpy(info + n, "tls13 ", 6);
    n += 6;
    std::memcpy(info + n, label.data(), label.size());
    n += label.size();
    info[n++] = 0; // empty context
    info[n++] = 1; // T(1) = HMAC(secret, info || 0x01)
    std::uint8_t block[EVP_MAX_MD_SIZE];
    std::size_t block_len = 0;
    EVP_MAC_CTX* h = thread_hmac(md);
    if (h == nullptr || EVP_MAC_init(h, secret.data(), secret.size(), nullptr) != 1 ||
        EVP_MAC_update(h, info, n) != 1 || EVP_MAC_final(h, block, &block_len, sizeof block) != 1)
        return false;
    std::memcpy(out, block, length);
    OPENSSL_cleanse(block, sizeof block);
    return true;
}

} // namespace

std::optional<aead> aead_of_suite(std::uint16_t suite) noexcept {
    switch (suite) {
    case 0x1301:
        return aead::aes_128_gcm;
    case 0x1302:
        return aead::aes_256_gcm;
    case 0x1303:
        return aead::chacha20_poly1305;
    default:
        return std::nullopt;
    }
}

bool record_protection::init(aead a, std::span<const std::uint8_t> secret,
                             std::uint64_t seq) noexcept {
    const EVP_MD* md = digest_of(a);
    if (secret.size() != static_cast<std::size_t>(EVP_MD_get_size(md)) ||
        secret.size() > sizeof secret_ || cipher_of(a) == nullptr)
        return false;
    aead_ = a;
    secret_len_ = static_cast<std::uint8_t>(secret.size());
    std::memcpy(secret_, secret.data(), secret.size());
    seq_ = seq;
    return expand_label(md, secret, "key", key_, key_bytes(a)) &&
           expand_label(md, secret, "iv", iv_, sizeof iv_);
}

bool record_protection::update() noexcept {
    std::uint8_t next[sizeof secret_];
    const EVP_MD* md = digest_of(aead_);
    if (!expand_label(md, {secret_, secret_len_}, "traffic upd", next, secret_len_)) return false;
    const bool ok = init(aead_, {next, secret_len_});
    OPENSSL_cleanse(next, sizeof next);
    return ok;
}

void record_protection::nonce(std::uint8_t out[12]) const noexcept {
    std::memcpy(out, iv_, 12);
    for (int i = 0; i < 8; ++i)
        out[4 + i] ^= static_cast<std::uint8_t>(seq_ >> (56 - 8 * i));
}

std::size_t record_protection::seal(std::uint8_t type, const std::uint8_t* plain, std::size_t n,
                                    std::uint8_t* out) noexcept {
    if (n > max_plaintext || seq_ == ~std::uint64_t{0}) return 0;
    const std::size_t body = n + 1 + tag_bytes;
    out[0] = application_data;
    out[1] = 0x03;
    out[2] = 0x03;
    out[3] = static_cast<std::uint8_t>(body >> 8);
    out[4] = static_cast<std::uint8_t>(body);
    std::uint8_t iv[12];
    nonce(iv);
    EVP_CIPHER_CTX* c = thread_ctx();
    int len = 0;
    std::uint8_t* p = out + record_header_bytes;
    if (EVP_EncryptInit_ex2(c, cipher_of(aead_), key_, iv, nullptr) != 1 ||
        EVP_EncryptUpdate(c, nullptr, &len, out, record_header_bytes) != 1 ||
        EVP_EncryptUpdate(c, p, &len, plain, static_cast<int>(n)) != 1)
        return 0;
    p += len;
    if (EVP_EncryptUpdate(c, p, &len, &type, 1) != 1) return 0;
    p += len;
    if (EVP_EncryptFinal_ex(c, p, &len) != 1) return 0;
    p += len;
    if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, tag_bytes, p) != 1) return 0;
    ++seq_;
    return record_header_bytes + body;
}

std::optional<record_protection::opened> record_protection::open(std::uint8_t* record,
                                                                 std::size_t size) noexcept {
    if (size < record_header_bytes + 1 + tag_bytes || seq_ == ~std::uint64_t{0})
        return std::nullopt;
    std::uint8_t* body = record + record_header_bytes;
    const std::size_t sealed = size - record_header_bytes - tag_bytes;
    std::uint8_t iv[12];
    nonce(iv);
    EVP_CIPHER_CTX* c = thread_ctx();
    int len = 0;
    int fin = 0;
    if (EVP_DecryptInit_ex2(c, cipher_of(aead_), key_, iv, nullptr) != 1 ||
        EVP_DecryptUpdate(c, nullptr, &len, record, record_header_bytes) != 1 ||
        EVP_DecryptUpdate(c, body, &len, body, static_cast<int>(sealed)) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, tag_bytes, body + sealed) != 1 ||
        EVP_DecryptFinal_ex(c, body + len, &fin) != 1)
        return std::nullopt;
    ++seq_;
    // TLSInnerPlaintext: content, the type, then zero padding (RFC 8446, 5.4).
    std::size_t end = sealed;
    while (end != 0 && body[end - 1] == 0)
        --end;
    if (end == 0) return opened{0, 0}; // no content type: the caller answers unexpected_message
    return opened{body[end - 1], end - 1};
}

} // namespace tarry::tls

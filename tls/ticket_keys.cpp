#include "ticket_keys.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tarry::tls {

ticket_keys::ticket_keys(std::chrono::seconds lifetime) : lifetime_(lifetime) {
    rotate(clock::now());
}

std::uint64_t ticket_keys::generations() const {
    const std::lock_guard lock(mu_);
    return generations_;
}

void ticket_keys::rotate(clock::time_point now) {
    key k{};
    if (RAND_bytes(k.name.data(), static_cast<int>(k.name.size())) != 1 ||
        RAND_bytes(k.aes.data(), static_cast<int>(k.aes.size())) != 1 ||
        RAND_bytes(k.hmac.data(), static_cast<int>(k.hmac.size())) != 1)
        throw std::runtime_error("no randomness for a session ticket key");
    k.made = now;
    keys_.push_front(k);
    ++generations_;
}

void ticket_keys::forget_old(clock::time_point now) noexcept {
    // A key seals for a quarter of the lifetime, then opens for a whole lifetime more.
    const auto keep = lifetime_ + lifetime_ / 4;
    while (keys_.size() > 1 && now - keys_.back().made > keep)
        keys_.pop_back();
}

int ticket_keys::crypt(unsigned char name[16], unsigned char iv[16], EVP_CIPHER_CTX* cipher,
                       EVP_MAC_CTX* mac, int enc, clock::time_point now) {
    const std::lock_guard lock(mu_);
    try {
        if (now - keys_.front().made >= lifetime_ / 4) rotate(now);
    } catch (...) {
        // No randomness: keep sealing with the current key.
    }
    forget_old(now);
    const key* k = &keys_.front();
    int result = 1;
    if (enc == 1) {
        std::memcpy(name, k->name.data(), 16);
        if (RAND_bytes(iv, 16) != 1) return -1;
    } else {
        const auto it = std::find_if(keys_.begin(), keys_.end(), [&](const key& c) {
            return std::memcmp(c.name.data(), name, 16) == 0;
        });
        if (it == keys_.end()) return 0;
        k = &*it;
        if (it != keys_.begin()) result = 2; // valid, but renew it under the current key
    }
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(
            OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(k->hmac.data()), k->hmac.size()),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
        OSSL_PARAM_construct_end()};
    if (EVP_MAC_CTX_set_params(mac, params) != 1) return -1;
    const int ok = enc == 1
                       ? EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, k->aes.data(), iv)
                       : EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, k->aes.data(), iv);
    return ok == 1 ? result : -1;
}

} // namespace tarry::tls

#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;
typedef struct evp_mac_ctx_st EVP_MAC_CTX;

namespace tarry::tls {

/// The keys session tickets (TLS 1.3 and 1.2) are sealed with, shared by every worker and kept
/// across reloads (the server makes one ring for its life), so a client resumes whichever worker
/// its next connection lands on and after a SIGHUP.
///
/// Rotation as h2o does it: a new key seals tickets every quarter of the ticket lifetime; a key
/// still opens tickets for a lifetime after it stopped sealing, so no ticket dies before its
/// lifetime. Keys live in memory only (a restart makes clients do one full handshake).
class ticket_keys {
public:
    using clock = std::chrono::steady_clock;

    explicit ticket_keys(std::chrono::seconds lifetime = std::chrono::hours(1));
    ticket_keys(const ticket_keys&) = delete;
    ticket_keys& operator=(const ticket_keys&) = delete;

    /// OpenSSL's ticket key callback (SSL_CTX_set_tlsext_ticket_key_evp_cb), at `now`: sealing
    /// (enc = 1) with the current key; opening with the key `name` names: 1, or 2 to ask for a
    /// fresh ticket under the current key, or 0 when no key has that name (a full handshake).
    int crypt(unsigned char name[16], unsigned char iv[16], EVP_CIPHER_CTX* cipher,
              EVP_MAC_CTX* mac, int enc, clock::time_point now);

    [[nodiscard]] std::chrono::seconds lifetime() const noexcept { return lifetime_; }
    /// Keys made so far (rotations + 1).
    [[nodiscard]] std::uint64_t generations() const;

private:
    struct key {
        std::array<unsigned char, 16> name;
        std::array<unsigned char, 32> aes;
        std::array<unsigned char, 32> hmac;
        clock::time_point made;
    };
    void rotate(clock::time_point now);
    /// Drops the keys whose tickets have all expired (the newest always stays).
    void forget_old(clock::time_point now) noexcept;

    const std::chrono::seconds lifetime_;
    mutable std::mutex mu_; // taken once per full or resumed handshake, never per request
    std::deque<key> keys_;  ///< newest first
    std::uint64_t generations_ = 0;
};

} // namespace tarry::tls

// The session ticket key ring: sealing with the newest key, a new key every quarter of the
// lifetime, older keys still opening (and asking for a renewal) for a lifetime after, then gone.
#include <tarry/tls/ticket_keys.hpp>

#include <gtest/gtest.h>

#include <openssl/evp.h>

#include <array>
#include <memory>

namespace tarry::tls::test {
namespace {

using namespace std::chrono_literals;
using clock = ticket_keys::clock;

struct cipher_free {
    void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
struct mac_free {
    void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};

/// One call of the callback as OpenSSL makes it, with fresh contexts.
struct call {
    std::array<unsigned char, 16> name{};
    std::array<unsigned char, 16> iv{};
    int result = 0;
};

call crypt(ticket_keys& keys, int enc, clock::time_point now,
           const std::array<unsigned char, 16>& name = {}) {
    static EVP_MAC* const hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    const std::unique_ptr<EVP_CIPHER_CTX, cipher_free> cipher(EVP_CIPHER_CTX_new());
    const std::unique_ptr<EVP_MAC_CTX, mac_free> mac(EVP_MAC_CTX_new(hmac));
    call c;
    c.name = name;
    c.result = keys.crypt(c.name.data(), c.iv.data(), cipher.get(), mac.get(), enc, now);
    return c;
}

TEST(TicketKeysTest, SealsWithOneKeyUntilAQuarterOfTheLifetimeThenRotates) {
    ticket_keys keys(1h);
    const auto t0 = clock::now();
    const call a = crypt(keys, 1, t0);
    ASSERT_EQ(a.result, 1);
    const call b = crypt(keys, 1, t0 + 14min);
    ASSERT_EQ(b.result, 1);
    EXPECT_EQ(a.name, b.name) << "one key for the first quarter";
    EXPECT_NE(a.iv, b.iv) << "a fresh IV per ticket";
    EXPECT_EQ(keys.generations(), 1U);
    const call c = crypt(keys, 1, t0 + 16min);
    ASSERT_EQ(c.result, 1);
    EXPECT_NE(c.name, a.name) << "a new key after a quarter of the lifetime";
    EXPECT_EQ(keys.generations(), 2U);
}

TEST(TicketKeysTest, AnOlderKeyStillOpensAndAsksForRenewalThenExpires) {
    ticket_keys keys(1h);
    const auto t0 = clock::now();
    const call first = crypt(keys, 1, t0);
    const call current = crypt(keys, 1, t0 + 20min); // rotated
    ASSERT_NE(first.name, current.name);
    EXPECT_EQ(crypt(keys, 0, t0 + 20min, current.name).result, 1) << "the current key opens";
    EXPECT_EQ(crypt(keys, 0, t0 + 20min, first.name).result, 2)
        << "an older key opens, and asks for a ticket under the current one";
    // A key sealed until t0 + 15 min; its tickets live an hour: it opens until then at least.
    EXPECT_EQ(crypt(keys, 0, t0 + 74min, first.name).result, 2);
    EXPECT_EQ(crypt(keys, 0, t0 + 80min, first.name).result, 0)
        << "past a lifetime and a quarter it is gone: a full handshake";
    std::array<unsigned char, 16> unknown{};
    unknown.fill(0xAB);
    EXPECT_EQ(crypt(keys, 0, t0 + 80min, unknown).result, 0);
}

} // namespace
} // namespace tarry::tls::test

#include "client_table.hpp"

#include <array>
#include <cstring>
#include <random>

namespace tarry::server {

namespace {

/// Keeps the first `bits` bits of `bytes`, zeroes the rest.
template <std::size_t N> void cut(std::array<std::uint8_t, N>& bytes, unsigned bits) noexcept {
    for (auto& b : bytes) {
        const unsigned have = bits >= 8 ? 8 : bits;
        b = static_cast<std::uint8_t>(b & (0xff00u >> have));
        bits -= have;
    }
}

/// The process's hash key for IPv6 clients, drawn once.
std::uint64_t v6_seed() {
    static const std::uint64_t seed = [] {
        std::random_device rd;
        return (std::uint64_t{rd()} << 32) | rd();
    }();
    return seed;
}

std::uint64_t mix(std::uint64_t x) noexcept {
    // splitmix64's finaliser: every input bit moves every output bit.
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

} // namespace

client_key client_prefixes::of_v4(std::uint32_t network_order) const noexcept {
    std::array<std::uint8_t, 4> b{};
    std::memcpy(b.data(), &network_order, 4);
    cut(b, v4);
    std::uint32_t cut_address = 0;
    std::memcpy(&cut_address, b.data(), 4);
    return cut_address;
}

client_key client_prefixes::of_v6(const in6_addr& a) const noexcept {
    std::array<std::uint8_t, 16> b{};
    std::memcpy(b.data(), &a, 16);
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
        // An IPv4 client of a dual-stack socket: its IPv4 prefix.
        std::array<std::uint8_t, 4> v4_part{};
        std::memcpy(v4_part.data(), b.data() + 12, 4);
        cut(v4_part, v4);
        std::memcpy(b.data() + 12, v4_part.data(), 4);
    } else {
        cut(b, v6);
    }
    std::uint64_t hi = 0;
    std::uint64_t lo = 0;
    std::memcpy(&hi, b.data(), 8);
    std::memcpy(&lo, b.data() + 8, 8);
    const std::uint64_t h = mix(mix(hi ^ v6_seed()) ^ lo);
    return v6_key(static_cast<std::uint32_t>(h));
}

std::optional<client_key> client_prefixes::of(const sockaddr_storage& a) const noexcept {
    if (a.ss_family == AF_INET)
        return of_v4(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr);
    if (a.ss_family == AF_INET6) return of_v6(reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
    return std::nullopt;
}

bool client_table::admit(client_key k, std::size_t limit) {
    auto [at, fresh] = counts_.try_emplace(k, 0);
    if (limit != 0 && at->second >= limit) return false; // never a fresh entry: limit >= 1
    ++at->second;
    return true;
}

void client_table::leave(client_key k) noexcept {
    const auto at = counts_.find(k);
    if (at == counts_.end()) return;
    if (--at->second == 0) counts_.erase(at);
}

std::uint32_t client_table::held(client_key k) const noexcept {
    const auto at = counts_.find(k);
    return at == counts_.end() ? 0 : at->second;
}

} // namespace tarry::server

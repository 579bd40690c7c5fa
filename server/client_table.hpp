#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace tarry::server {

/// Whom a connection is counted against: its client's address cut to a prefix. An IPv4 client
/// is its (cut) address itself; a client of an IPv6 socket (an IPv4-mapped one too) is a keyed
/// 32-bit hash of its cut address with bit 32 set, small enough that a connection keeps it in
/// the 4 bytes that hold an IPv4 peer.
/// The hash's key is random per process, so a client cannot choose addresses that share
/// another's count; by accident two IPv6 clients share one about once in 2^32 pairs.
using client_key = std::uint64_t;

/// How much of an address names one client: the whole of it, or a network (/24: an office
/// behind one NAT pool; /64: one IPv6 subscriber, who holds the whole prefix).
struct client_prefixes {
    unsigned v4 = 32;
    unsigned v6 = 64;

    [[nodiscard]] client_key of_v4(std::uint32_t network_order) const noexcept;
    [[nodiscard]] client_key of_v6(const in6_addr& a) const noexcept;
    /// A TCP peer's key; none for other families (a Unix socket's clients are not counted).
    [[nodiscard]] std::optional<client_key> of(const sockaddr_storage& a) const noexcept;
    friend bool operator==(const client_prefixes&, const client_prefixes&) = default;
};

/// Whether `k` is an IPv6 client's (its low 32 bits then are the hash a connection keeps).
[[nodiscard]] constexpr bool is_v6(client_key k) noexcept {
    return (k >> 32) != 0;
}
/// The key of an IPv6 client from the 32 bits a connection keeps of it.
[[nodiscard]] constexpr client_key v6_key(std::uint32_t kept) noexcept {
    return (client_key{1} << 32) | kept;
}

/// One worker's connections per client: the count that max_connections_per_client limits, and
/// that pressure reads to take idle connections from the client holding the most. A client
/// is in the table while it holds a connection (its entry goes with its last), so the table
/// costs a few dozen bytes per client, nothing per connection. One thread: the worker's.
class client_table {
public:
    /// Counts one more connection of `k` unless it holds `limit` already (0: no limit).
    /// Whether it was counted. Throws std::bad_alloc for a new client without memory.
    bool admit(client_key k, std::size_t limit);
    /// A connection `admit` counted is gone.
    void leave(client_key k) noexcept;
    /// The connections `k` holds on this worker.
    [[nodiscard]] std::uint32_t held(client_key k) const noexcept;
    /// The clients holding at least one connection.
    [[nodiscard]] std::size_t clients() const noexcept { return counts_.size(); }
    /// Forgets every count (before counting the live connections again under new prefixes).
    void clear() noexcept { counts_.clear(); }

private:
    std::unordered_map<client_key, std::uint32_t> counts_;
};

} // namespace tarry::server

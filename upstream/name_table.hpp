#pragma once

#include <boost/asio/ip/address.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tarry::upstream {

/// The addresses each DNS name of the upstreams resolves to now, shared by every worker's
/// groups. Written rarely (an answer that changed: by whoever resolves, a main thread), read
/// by each group when the generation it last saw is behind: the request path pays one atomic
/// load for it, and takes the lock only when something changed.
class name_table {
public:
    /// `host`'s addresses from now on; the generation moves only if they differ.
    void set(const std::string& host, std::vector<boost::asio::ip::address> addresses) {
        const std::lock_guard lock(mu_);
        auto& slot = by_host_[host];
        if (slot == addresses) return;
        slot = std::move(addresses);
        generation_.fetch_add(1, std::memory_order_release);
    }
    /// `host`'s addresses; nullopt when it was never resolved.
    [[nodiscard]] std::optional<std::vector<boost::asio::ip::address>>
    get(const std::string& host) const {
        const std::lock_guard lock(mu_);
        const auto it = by_host_.find(host);
        if (it == by_host_.end()) return std::nullopt;
        return it->second;
    }
    /// Moves on every change: a reader that saw this value has seen every change before it.
    [[nodiscard]] std::uint64_t generation() const noexcept {
        return generation_.load(std::memory_order_acquire);
    }

private:
    mutable std::mutex mu_;
    std::map<std::string, std::vector<boost::asio::ip::address>> by_host_;
    std::atomic<std::uint64_t> generation_{0};
};

} // namespace tarry::upstream

#pragma once

#include "handler.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::http {

/// A status's class as an index: 0 for 1xx .. 4 for 5xx (out-of-range codes clamp).
constexpr std::size_t status_class(unsigned status) noexcept {
    return std::min<unsigned>(std::max(status / 100, 1U), 5U) - 1;
}

/// What one route answered, by status class (1xx .. 5xx). Written by its worker's thread only
/// (a relaxed load and store, no locked instruction), read by the metrics endpoint's.
struct route_stats {
    std::array<std::atomic<std::uint64_t>, 5> responses{};
    void count(std::size_t status_class) noexcept {
        auto& c = responses[status_class];
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
};

/// Chooses the handler for a request: the route with the longest path prefix of the target.
///
/// Built whole and then only read: a reload builds a new router and swaps it in, and a request
/// answered later keeps its handler alive (exchange::defer holds a reference), so requests in
/// flight finish on the routes they started with.
class router {
public:
    struct route {
        std::string prefix;
        std::shared_ptr<handler> target;
        route_stats* stats = nullptr; ///< where its responses are counted; null: nowhere
    };

    /// Adds a route. A prefix given twice replaces the earlier one. `stats` outlives the router
    /// and every request it routes.
    void add(std::string prefix, std::shared_ptr<handler> target, route_stats* stats = nullptr);

    /// The route for `target` (origin-form path, query allowed), or null if none matches.
    [[nodiscard]] const route* find(std::string_view target) const noexcept {
        // A handful of routes: a linear scan over prefixes sorted longest first beats any
        // tree. "/" matches every origin-form target, so it needs no comparison.
        for (const route& r : routes_) {
            if (r.prefix.size() == 1) return &r;
            if (target.size() >= r.prefix.size() &&
                target.compare(0, r.prefix.size(), r.prefix) == 0)
                return &r;
        }
        return nullptr;
    }

    [[nodiscard]] const std::vector<route>& routes() const noexcept { return routes_; }

private:
    std::vector<route> routes_; ///< longest prefix first, so the first match is the best
};

} // namespace tarry::http

#pragma once

#include "handler.hpp"
#include "host_names.hpp"
#include "request_parser.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
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

/// Chooses the handler for a request: the site its Host names (or HTTP/2's :authority, which
/// the request head carries the same way), then the route of that site with the longest path
/// prefix of the target.
///
/// Sites are matched by name without case, port and trailing dot (host_names.hpp); a Host that
/// names no site goes to the default site, or to the unknown-host answer when one is set (a
/// 421 or 404). Without sites there is only the default site and no name is looked at.
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

    /// The site routes go to when none is named: the first, which always exists.
    static constexpr std::size_t default_site = 0;

    router() : sites_(1) {}

    /// Adds a route to the default site (see the other add()).
    void add(std::string prefix, std::shared_ptr<handler> target, route_stats* stats = nullptr) {
        add(default_site, std::move(prefix), std::move(target), stats);
    }
    /// Adds a route to `site`. A prefix given twice replaces the earlier one. `stats` outlives
    /// the router and every request it routes.
    void add(std::size_t site, std::string prefix, std::shared_ptr<handler> target,
             route_stats* stats = nullptr);

    /// A new site answering `names` (exact, or "*." and a suffix); returns its index. A name
    /// another site already has stays that site's.
    std::size_t add_site(const std::vector<std::string>& names);
    /// Requests whose Host names no site go to `site` instead of the first.
    void set_default_site(std::size_t site) noexcept { fallback_ = site; }
    /// Requests whose Host names no site are answered by `target` (a 421 or a 404), not by
    /// the default site.
    void set_unknown_host(std::shared_ptr<handler> target, route_stats* stats = nullptr) {
        unknown_ = route{"/", std::move(target), stats};
        every_.push_back(unknown_);
    }

    /// The route for `req`: its site by `req.host`, then its target's longest prefix; null if
    /// none matches.
    [[nodiscard]] const route* find(const request_head& req) const noexcept {
        if (names_.empty()) return find_in(sites_[fallback_], req.target);
        if (const auto site = names_.find(req.host)) return find_in(sites_[*site], req.target);
        if (unknown_.target) return &unknown_;
        return find_in(sites_[fallback_], req.target);
    }
    /// The default site's route for `target` (origin-form path, query allowed), or null.
    [[nodiscard]] const route* find(std::string_view target) const noexcept {
        return find_in(sites_[fallback_], target);
    }
    /// The index of the site `host` names, or none (the default site, or the unknown-host
    /// answer, then takes the request).
    [[nodiscard]] std::optional<std::size_t> site_of(std::string_view host) const noexcept {
        return names_.find(host);
    }

    /// Every route of every site, for what concerns all handlers (a stop).
    [[nodiscard]] const std::vector<route>& routes() const noexcept { return every_; }
    [[nodiscard]] std::size_t sites() const noexcept { return sites_.size(); }

private:
    static const route* find_in(const std::vector<route>& routes,
                                std::string_view target) noexcept {
        // A handful of routes: a linear scan over prefixes sorted longest first beats any
        // tree. "/" matches every origin-form target, so it needs no comparison.
        for (const route& r : routes) {
            if (r.prefix.size() == 1) return &r;
            if (target.size() >= r.prefix.size() &&
                target.compare(0, r.prefix.size(), r.prefix) == 0)
                return &r;
        }
        return nullptr;
    }

    std::vector<std::vector<route>> sites_; ///< each longest prefix first: the first match wins
    name_table names_;                      ///< server name to index in sites_
    std::size_t fallback_ = default_site;
    route unknown_;            ///< the unknown-host answer; no target: the default site
    std::vector<route> every_; ///< every route of every site, in the order added
};

} // namespace tarry::http

#include "router.hpp"

#include <algorithm>

namespace tarry::http {

void router::add(std::string prefix, std::shared_ptr<handler> target, route_stats* stats) {
    const auto same = std::find_if(routes_.begin(), routes_.end(),
                                   [&](const route& r) { return r.prefix == prefix; });
    if (same != routes_.end()) {
        same->target = std::move(target);
        same->stats = stats;
        return;
    }
    routes_.push_back(route{std::move(prefix), std::move(target), stats});
    std::stable_sort(routes_.begin(), routes_.end(), [](const route& a, const route& b) {
        return a.prefix.size() > b.prefix.size();
    });
}

} // namespace tarry::http

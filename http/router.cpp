#include "router.hpp"

#include <algorithm>

namespace tarry::http {

void router::add(std::size_t site, std::string prefix, std::shared_ptr<handler> target,
                 route_stats* stats) {
    every_.push_back(route{prefix, target, stats});
    std::vector<route>& routes = sites_.at(site);
    const auto same = std::find_if(routes.begin(), routes.end(),
                                   [&](const route& r) { return r.prefix == prefix; });
    if (same != routes.end()) {
        same->target = std::move(target);
        same->stats = stats;
        return;
    }
    routes.push_back(route{std::move(prefix), std::move(target), stats});
    std::stable_sort(routes.begin(), routes.end(), [](const route& a, const route& b) {
        return a.prefix.size() > b.prefix.size();
    });
}

std::size_t router::add_site(const std::vector<std::string>& names) {
    const std::size_t index = sites_.size();
    sites_.emplace_back();
    for (const std::string& name : names)
        names_.add(name, index);
    return index;
}

} // namespace tarry::http

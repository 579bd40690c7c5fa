#include "upstream_group.hpp"

#include <stdexcept>

namespace tarry::upstream {

upstream_group::upstream_group(boost::asio::io_context& io, net::poller& poll,
                               timeouts::timeout_registry& registry, upstream_settings settings,
                               upstream_counters* counters)
    : settings_(std::move(settings)) {
    if (settings_.servers.empty()) throw std::invalid_argument("upstream has no server");
    for (const auto& s : settings_.servers)
        pools_.push_back(std::make_shared<upstream_pool>(
            io, poll, registry, settings_, s, counters ? counters->of(s.name) : nullptr));
}

std::shared_ptr<upstream_pool> upstream_group::pick(const upstream_pool* except) {
    const std::size_t n = pools_.size();
    std::shared_ptr<upstream_pool> best;
    std::size_t best_at = 0;
    std::shared_ptr<upstream_pool> oldest_down; // the fallback when every server is down
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t at = (next_ + i) % n;
        const auto& p = pools_[at];
        if (p.get() == except) continue;
        if (p->down()) {
            if (!oldest_down || p->down_until() < oldest_down->down_until()) oldest_down = p;
            continue;
        }
        if (settings_.balance == upstream_settings::balance_mode::round_robin) {
            next_ = (at + 1) % n;
            return p;
        }
        if (!best || p->busy_count() < best->busy_count()) {
            best = p;
            best_at = at;
        }
    }
    if (best) {
        next_ = (best_at + 1) % n; // ties rotate: the next search starts past this one
        return best;
    }
    return oldest_down;
}

void upstream_group::failed(upstream_pool& pool) noexcept {
    if (pools_.size() > 1) pool.mark_failed();
}

void upstream_group::stop() noexcept {
    for (auto& p : pools_)
        p->stop();
}

} // namespace tarry::upstream

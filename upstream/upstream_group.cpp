#include "upstream_group.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <stdexcept>

namespace tarry::upstream {

upstream_group::upstream_group(boost::asio::io_context& io, net::poller& poll,
                               timeouts::timeout_registry& registry, upstream_settings settings,
                               upstream_counters* counters, std::shared_ptr<const name_table> names)
    : io_(io), poll_(poll), registry_(registry), counters_(counters), names_(std::move(names)),
      settings_(std::move(settings)) {
    if (settings_.servers.empty()) throw std::invalid_argument("upstream has no server");
    const auto named = [](const server_address& s) { return s.named(); };
    if (std::none_of(settings_.servers.begin(), settings_.servers.end(), named))
        names_.reset(); // another upstream's names changing is nothing to this one
    for (const auto& s : settings_.servers)
        if (s.named() && !names_)
            throw std::invalid_argument("upstream server " + s.name +
                                        " is a DNS name, and no resolver was given");
    refresh();
}

void upstream_group::refresh() {
    // The generation first: a change landing while the table is read moves it again, and the
    // next pick looks once more.
    seen_ = names_ ? names_->generation() : 0;
    std::vector<std::shared_ptr<upstream_pool>> next;
    const auto add = [&](const server_address& s, const server_address::endpoint_type& ep) {
        const auto kept = std::find_if(pools_.begin(), pools_.end(), [&](const auto& p) {
            return p && p->name() == s.name && p->endpoint() == ep;
        });
        if (kept != pools_.end()) {
            next.push_back(std::move(*kept));
            return;
        }
        auto p = std::make_shared<upstream_pool>(io_, poll_, registry_, settings_,
                                                 server_address{s.name, ep, {}, 0, s.tls_name},
                                                 counters_ ? counters_->of(s.name) : nullptr);
        if (stopped_) p->stop();
        next.push_back(std::move(p));
    };
    for (const server_address& s : settings_.servers) {
        if (!s.named()) {
            add(s, s.endpoint);
            continue;
        }
        if (const auto addresses = names_->get(s.host))
            for (const auto& a : *addresses)
                add(s, server_address::endpoint_type(boost::asio::ip::tcp::endpoint(a, s.port)));
    }
    for (auto& p : pools_)
        if (p) p->stop(upstream_close::removed); // in-flight exchanges hold it till they end
    pools_ = std::move(next);
    if (next_ >= pools_.size()) next_ = 0;
}

std::shared_ptr<upstream_pool> upstream_group::pick(const upstream_pool* except) {
    if (names_ && names_->generation() != seen_) refresh();
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
    stopped_ = true;
    for (auto& p : pools_)
        p->stop();
}

} // namespace tarry::upstream

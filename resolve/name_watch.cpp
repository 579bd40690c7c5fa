#include "name_watch.hpp"

#include <spdlog/spdlog.h>

namespace tarry::resolve {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

std::map<std::string, answer> resolve_now(const dns_resolver::options& opts,
                                          const std::vector<std::string>& hosts) {
    std::map<std::string, answer> out;
    if (hosts.empty()) return out;
    asio::io_context io;
    dns_resolver r(io, opts);
    for (const std::string& h : hosts)
        r.resolve(h, [&out, h](answer a) { out[h] = std::move(a); });
    io.run();
    return out;
}

name_watch::name_watch(asio::io_context& io, dns_resolver::options opts, refresh_bounds bounds,
                       publish_fn publish)
    : io_(io), resolver_(std::make_unique<dns_resolver>(io, opts)), opts_(std::move(opts)),
      bounds_(bounds), publish_(std::move(publish)), timer_(io) {}

name_watch::~name_watch() {
    stop();
}

void name_watch::watch(const std::map<std::string, answer>& names, dns_resolver::options opts,
                       refresh_bounds bounds) {
    if (opts.servers != opts_.servers || opts.timeout != opts_.timeout ||
        opts.tries != opts_.tries) {
        auto next = std::make_unique<dns_resolver>(io_, opts); // may throw: nothing changed yet
        resolver_ = std::move(next); // lookups of the old one end without their callbacks
        opts_ = std::move(opts);
        const std::lock_guard lock(mu_);
        for (auto& [host, e] : entries_)
            e.in_flight = false;
    }
    bounds_ = bounds;
    const auto now = clock::now();
    {
        const std::lock_guard lock(mu_);
        std::map<std::string, entry> next;
        for (const auto& [host, a] : names) {
            entry e;
            if (const auto old = entries_.find(host); old != entries_.end()) e = old->second;
            e.in_use = a;
            e.in_flight = false;
            e.due = now + bounds_.after(a.ttl);
            e.state.host = host;
            e.state.addresses = a.addresses.size();
            e.state.stale = !a.ok();
            next.emplace(host, std::move(e));
        }
        entries_ = std::move(next);
    }
    stopped_ = false;
    arm();
}

void name_watch::stop() noexcept {
    stopped_ = true;
    timer_.cancel();
    if (resolver_) resolver_->cancel();
}

std::vector<name_state> name_watch::states() const {
    const std::lock_guard lock(mu_);
    std::vector<name_state> out;
    for (const auto& [host, e] : entries_)
        out.push_back(e.state);
    return out;
}

void name_watch::arm() {
    if (stopped_) return;
    clock::time_point next = clock::time_point::max();
    {
        const std::lock_guard lock(mu_);
        for (const auto& [host, e] : entries_)
            if (!e.in_flight && e.due < next) next = e.due;
    }
    if (next == clock::time_point::max()) {
        timer_.cancel(); // nothing to wait for: the loop may end
        return;
    }
    timer_.expires_at(next);
    timer_.async_wait(
        [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
            if (ec || alive.expired()) return;
            run_due();
        });
}

void name_watch::run_due() {
    if (stopped_) return;
    const auto now = clock::now();
    std::vector<std::string> due;
    {
        const std::lock_guard lock(mu_);
        for (auto& [host, e] : entries_) {
            if (e.in_flight || e.due > now) continue;
            e.in_flight = true;
            ++e.state.lookups;
            due.push_back(host);
        }
    }
    for (const std::string& host : due) {
        resolver_->resolve(host, [this, host, alive = std::weak_ptr<bool>(alive_)](answer a) {
            if (alive.expired() || stopped_) return;
            answered(host, std::move(a));
        });
    }
    arm();
}

void name_watch::answered(const std::string& host, answer a) {
    std::vector<asio::ip::address> changed;
    bool publish = false;
    {
        const std::lock_guard lock(mu_);
        const auto it = entries_.find(host);
        if (it == entries_.end()) return; // forgotten meanwhile (a reload)
        entry& e = it->second;
        e.in_flight = false;
        const auto now = clock::now();
        if (!a.ok()) {
            ++e.state.failures;
            // Once per failure, not per lookup: a DNS server that is down for an hour is one
            // line, and one more when the name resolves again.
            if (!e.state.stale)
                spdlog::warn("resolving {} failed ({}); keeping its last answer ({}) until it "
                             "resolves again",
                             host, a.error, to_string(e.in_use.addresses));
            e.state.stale = true;
            e.due = now + bounds_.floor;
        } else {
            if (e.state.stale) spdlog::info("{} resolves again: {}", host, to_string(a.addresses));
            e.state.stale = false;
            if (a.addresses != e.in_use.addresses) {
                ++e.state.changes;
                spdlog::info("{} now resolves to {} (was {})", host, to_string(a.addresses),
                             to_string(e.in_use.addresses));
                changed = a.addresses;
                publish = true;
            }
            e.due = now + bounds_.after(a.ttl);
            e.in_use = std::move(a);
            e.state.addresses = e.in_use.addresses.size();
        }
    }
    if (publish && publish_) publish_(host, changed);
    arm();
}

} // namespace tarry::resolve

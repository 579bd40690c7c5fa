#include "upstream_pool.hpp"

namespace tarry::upstream {

upstream_pool::upstream_pool(boost::asio::io_context& io, net::poller& poll,
                             timeouts::timeout_registry& registry,
                             const upstream_settings& settings, server_address server,
                             std::shared_ptr<upstream_metrics> counters)
    : io_(io), poll_(poll), registry_(registry), settings_(settings), name_(std::move(server.name)),
      endpoint_(server.endpoint),
      metrics_(counters ? std::move(counters) : std::make_shared<upstream_metrics>()) {
    if (settings_.tls) tls_ = {settings_.tls.get(), server.tls_name, &session_};
}

upstream_pool::~upstream_pool() {
    // A reload's old pool goes when the last request through it ends; the counters are its
    // server's and outlive it, so what it closes as it goes is counted, as a shutdown.
    stop();
}

std::shared_ptr<upstream_connection> upstream_pool::take() {
    if (idle_.empty()) return nullptr;
    auto c = unlink_idle(idle_.back());
    c->disarm();
    metrics_->busy.add();
    metrics_->reused.add();
    if (++busy_ > peak_busy_) peak_busy_ = busy_;
    return c;
}

std::shared_ptr<upstream_connection> upstream_pool::open() {
    auto c = std::make_shared<upstream_connection>(io_, poll_, registry_, weak_from_this());
    metrics_->opened.add();
    metrics_->busy.add();
    if (++busy_ > peak_busy_) peak_busy_ = busy_;
    return c;
}

void upstream_pool::give_back(std::shared_ptr<upstream_connection> c,
                              timeouts::clock::duration keep, bool hinted) {
    c->set_user(nullptr);
    if (!stopped_) purge(timeouts::clock::now()); // c still counts as busy: it is demand
    --busy_;
    metrics_->busy.add(-1);
    if (stopped_) {
        c->close();
        metrics_->closed(stop_reason_);
        return;
    }
    if (keep <= timeouts::clock::duration::zero() || settings_.max_idle == 0) {
        c->close();
        metrics_->closed(hinted ? upstream_close::keep_alive_hint : upstream_close::max_idle);
        return;
    }
    if (!c->quiet()) { // the upstream closed it, or sent bytes it should not have
        c->close();
        metrics_->closed(upstream_close::upstream_close);
        return;
    }
    if (idle_count_ >= settings_.max_idle) remove_idle(idle_.front(), upstream_close::max_idle);
    c->arm(upstream_kinds::pooled, keep);
    c->hinted = hinted;
    upstream_connection& raw = *c;
    idle_.push_back(raw);
    raw.pooled = std::move(c);
    ++idle_count_;
    metrics_->idle.add();
}

void upstream_pool::discard(upstream_connection& c, upstream_close why) noexcept {
    c.set_user(nullptr);
    c.close();
    --busy_;
    metrics_->busy.add(-1);
    metrics_->closed(why);
}

void upstream_pool::to_tunnel() noexcept {
    --busy_;
    metrics_->busy.add(-1);
    metrics_->tunnels.add();
}

void upstream_pool::end_tunnel(upstream_connection& c, tunnel_close why) noexcept {
    c.set_user(nullptr);
    c.close();
    metrics_->tunnels.add(-1);
    metrics_->tunnel_closes[static_cast<std::size_t>(why)].add();
}

void upstream_pool::stop(upstream_close why) noexcept {
    if (!stopped_) stop_reason_ = why; // the first reason stands: a removed pool stays removed
    stopped_ = true;
    while (!idle_.empty())
        remove_idle(idle_.front(), stop_reason_);
}

bool upstream_pool::shed(upstream_connection& c) noexcept {
    return remove_idle(c, upstream_close::pressure);
}

void upstream_pool::mark_failed() noexcept {
    down_until_ = timeouts::clock::now() + settings_.fail_timeout;
}

bool upstream_pool::down() const noexcept {
    return timeouts::clock::now() < down_until_;
}

std::shared_ptr<upstream_connection> upstream_pool::unlink_idle(upstream_connection& c) noexcept {
    c.pool_hook.unlink();
    --idle_count_;
    metrics_->idle.add(-1);
    return std::move(c.pooled);
}

bool upstream_pool::remove_idle(upstream_connection& c, upstream_close why) noexcept {
    if (!c.pool_hook.is_linked() || !c.pooled) return false; // not idle here
    const auto keep = unlink_idle(c);                        // c stays alive until this returns
    keep->close();
    metrics_->closed(why);
    return true;
}

void upstream_pool::purge(timeouts::clock::time_point now) noexcept {
    if (now - period_start_ < settings_.purge_period) return;
    // Half of the connections beyond the most that were busy at once in the period that ends,
    // oldest idle first: a pool shrinks towards its demand over a few periods, never at once.
    const std::size_t total = idle_count_ + busy_;
    if (total > peak_busy_) {
        std::size_t surplus = (std::min(total - peak_busy_, idle_count_) + 1) / 2;
        while (surplus-- != 0 && !idle_.empty())
            remove_idle(idle_.front(), upstream_close::surplus);
    }
    period_start_ = now;
    peak_busy_ = busy_;
}

void upstream_pool::on_idle_event(upstream_connection& c) noexcept {
    remove_idle(c, upstream_close::upstream_close);
}

void upstream_pool::on_idle_expired(upstream_connection& c) noexcept {
    remove_idle(c, c.hinted ? upstream_close::keep_alive_hint : upstream_close::idle_timeout);
}

} // namespace tarry::upstream

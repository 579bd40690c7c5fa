#include "timer_list.hpp"

#include "timeout_registry.hpp"

#include <boost/asio/post.hpp>

#include <new>

namespace tarry::timeouts {

timer_list::timer_list(timeout_registry& registry, boost::asio::io_context& io,
                       const timeout_kind& kind, clock::duration timeout)
    : idle_list(kind, timeout), registry_(&registry), timer_(io) {}

expiry_stats& timer_list::stats() noexcept {
    return registry_->lanes_[kind().id()].stats;
}

void timer_list::ensure_armed_for(clock::time_point at) {
    if (!armed_ && !expiring_) arm(empty() ? at : front()->deadline());
}

void timer_list::rearm() {
    disarm();
    ensure_armed();
}

void timer_list::arm(clock::time_point at) {
    if (detail::fault_injection::failing_waits != 0) {
        --detail::fault_injection::failing_waits;
        throw std::bad_alloc();
    }
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this(), g = generation_](boost::system::error_code ec) {
        if (!ec) self->on_wake(g);
    });
    armed_ = true; // only now: a wait that failed to queue leaves the list visibly unarmed
}

void timer_list::disarm() noexcept {
    if (!armed_) return;
    armed_ = false;
    ++generation_;
    timer_.cancel();
}

void timer_list::detach() noexcept {
    registry_ = nullptr;
    disarm();
}

std::size_t timer_list::run_expiry(clock::time_point now, std::size_t budget) noexcept {
    expiring_ = true;
    const std::size_t n = expire(now, budget, &stats());
    expiring_ = false;
    return n;
}

bool timer_list::post_continuation() noexcept {
    try {
        if (detail::fault_injection::failing_posts != 0) {
            --detail::fault_injection::failing_posts;
            throw std::bad_alloc();
        }
        boost::asio::post(timer_.get_executor(),
                          [self = shared_from_this(), g = generation_] { self->on_wake(g); });
    } catch (...) {
        return false;
    }
    armed_ = true;
    return true;
}

void timer_list::on_wake(unsigned generation) noexcept {
    if (generation != generation_ || registry_ == nullptr) return;
    armed_ = false;
    ++stats().wakeups;
    for (;;) {
        // A fresh reading, never a cached loop time: an entry can expire late, never early.
        const clock::time_point now = clock::now();
        if (run_expiry(now, registry_->expire_batch()) != 0 && registry_ != nullptr)
            stats().record_wake(clock::now() - now);
        if (registry_ == nullptr || armed_) return; // detached, or re-armed meanwhile
        if (!due(now)) break;
        // More is due than one batch: let other handlers run, then go on.
        if (post_continuation()) return;
        // Out of memory: no handler could be queued. Expire the next batch here instead. The
        // loop is held longer than a batch, but nothing that is due is left without a wake,
        // and expiring frees memory (a server's callbacks close connections).
        ++stats().schedule_failures;
    }
    try {
        ensure_armed();
    } catch (...) {
        // Out of memory again, and nothing is due: the list stays unarmed (armed() is false)
        // until the next enroll into it, which retries. Counted, so it can be seen.
        ++stats().schedule_failures;
    }
}

} // namespace tarry::timeouts

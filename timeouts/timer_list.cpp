#include "timer_list.hpp"

#include "timeout_registry.hpp"

#include <boost/asio/post.hpp>

namespace tarry::timeouts {

timer_list::timer_list(timeout_registry& registry, boost::asio::io_context& io,
                       clock::duration timeout)
    : idle_list(timeout), registry_(&registry), timer_(io) {}

void timer_list::ensure_armed() {
    if (!armed_ && !expiring_ && !empty()) arm(front()->deadline());
}

void timer_list::arm(clock::time_point at) {
    armed_ = true;
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this(), g = generation_](boost::system::error_code ec) {
        if (!ec) self->on_wake(g);
    });
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

std::size_t timer_list::expire_batch(clock::time_point now, std::size_t budget) noexcept {
    expiring_ = true;
    const std::size_t n = expire(now, budget, &registry_->stats_);
    expiring_ = false;
    return n;
}

void timer_list::on_wake(unsigned generation) noexcept {
    if (generation != generation_ || registry_ == nullptr) return;
    armed_ = false;
    ++registry_->stats_.wakeups;
    // A fresh reading, never a cached loop time: an entry can expire late, never early.
    const clock::time_point now = clock::now();
    if (expire_batch(now, registry_->expire_batch()) != 0 && registry_ != nullptr)
        registry_->stats_.record_wake(clock::now() - now);
    if (registry_ == nullptr || armed_) return; // detached, or re-armed from a callback
    if (due(now)) {
        // More is due than one batch: let other handlers run, then go on.
        armed_ = true;
        boost::asio::post(timer_.get_executor(),
                          [self = shared_from_this(), g = generation_] { self->on_wake(g); });
        return;
    }
    try {
        ensure_armed();
    } catch (...) {
        // async_wait can only throw on allocation failure; nothing sensible to do but leave
        // the list unarmed until the next enroll.
        armed_ = false;
    }
}

} // namespace tarry::timeouts

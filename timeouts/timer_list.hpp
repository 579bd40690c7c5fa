#pragma once

#include "idle_list.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>

namespace tarry::timeouts {

class timeout_registry;

/// An idle_list with the one steady_timer that expires it. Internal to timeout_registry.
///
/// The timer has a pending wait exactly while the list is non-empty (or a batch continuation is
/// queued). Each wait carries a generation number: cancelling bumps it, so a completion that was
/// already queued when the list emptied finds itself stale and does nothing. The wait also holds
/// the list by shared_ptr, so a completion that outlives the registry finds the list detached
/// rather than freed.
class timer_list final : public idle_list, public std::enable_shared_from_this<timer_list> {
public:
    timer_list(timeout_registry& registry, boost::asio::io_context& io, clock::duration timeout);

    /// Arms the timer for the head if the list has entries and nothing is pending.
    void ensure_armed();
    /// Cancels any pending wait and arms for the current head (the head moved earlier).
    void rearm() {
        disarm();
        ensure_armed();
    }
    /// Forgets the registry and cancels the timer; entries must already be detached.
    void detach() noexcept;
    /// Expires up to `budget` entries due at `now`, counting them in the registry's stats.
    std::size_t expire_batch(clock::time_point now, std::size_t budget) noexcept;

    [[nodiscard]] bool expiring() const noexcept { return expiring_; }
    [[nodiscard]] bool armed() const noexcept { return armed_; }

private:
    void on_emptied() noexcept override { disarm(); }
    void disarm() noexcept;
    void arm(clock::time_point at);
    void on_wake(unsigned generation) noexcept;

    timeout_registry* registry_;
    boost::asio::steady_timer timer_;
    unsigned generation_ = 0;
    bool armed_ = false;    // a wait or a continuation is pending for this generation
    bool expiring_ = false; // callbacks are running; arming is left to the end of the batch
};

} // namespace tarry::timeouts

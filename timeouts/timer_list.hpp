#pragma once

/// @file
/// timer_list: an idle_list with the one steady_timer that expires it. Internal to
/// timeout_registry; installed because the registry's header names it.

#include "idle_list.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <memory>

namespace tarry::timeouts {

class timeout_registry;

namespace detail {

/// Test hook: while a count is non-zero, each attempt to queue a timer wait (`failing_waits`) or
/// a batch continuation (`failing_posts`) uses one up and fails with `std::bad_alloc`, as an
/// allocation inside Asio would. Read only when a wait or continuation is queued (at most once
/// per wake, and on an enroll into an empty list), never on touch. Per thread, like a registry.
struct fault_injection {
    static inline thread_local std::size_t failing_waits = 0;
    static inline thread_local std::size_t failing_posts = 0;
};

} // namespace detail

/// An idle_list with the one steady_timer that expires it. Internal to timeout_registry.
///
/// The timer has a pending wait exactly while the list is non-empty (or a batch continuation is
/// queued), unless queueing one failed for lack of memory. Each wait carries a generation
/// number: cancelling bumps it, so a completion that was already queued when the list emptied
/// finds itself stale and does nothing. The wait also holds the list by shared_ptr, so a
/// completion that outlives the registry finds the list detached rather than freed.
class timer_list final : public idle_list, public std::enable_shared_from_this<timer_list> {
public:
    /// An empty, unarmed list of `registry` for (`kind`, `timeout`), whose timer runs on `io`.
    timer_list(timeout_registry& registry, boost::asio::io_context& io, const timeout_kind& kind,
               clock::duration timeout);

    /// Arms the timer for the head if the list has entries and nothing is pending.
    /// Throws std::bad_alloc if the wait cannot be queued; the list then stays unarmed.
    void ensure_armed() {
        if (!empty()) ensure_armed_for(front()->deadline());
    }
    /// Arms the timer, if nothing is pending, for the head or, on an empty list, for `at` (the
    /// deadline of an entry about to be appended): lets an enroll queue the wait before it moves
    /// anything. Throws std::bad_alloc as ensure_armed() does.
    void ensure_armed_for(clock::time_point at);
    /// Cancels any pending wait and arms for the current head (the head moved earlier).
    void rearm();
    /// Forgets the registry and cancels the timer; entries must already be detached.
    void detach() noexcept;
    /// Expires up to `budget` entries due at `now`, counting them in the registry's stats.
    std::size_t run_expiry(clock::time_point now, std::size_t budget) noexcept;

    /// Whether its callbacks are running (the list is then neither armed nor pruned).
    [[nodiscard]] bool expiring() const noexcept { return expiring_; }
    /// Whether a wait or a batch continuation is pending.
    [[nodiscard]] bool armed() const noexcept { return armed_; }

private:
    void on_emptied() noexcept override { disarm(); }
    void disarm() noexcept;
    void arm(clock::time_point at);
    bool post_continuation() noexcept;
    expiry_stats& stats() noexcept; ///< its kind's, in the registry
    void on_wake(unsigned generation) noexcept;

    timeout_registry* registry_;
    boost::asio::steady_timer timer_;
    unsigned generation_ = 0;
    bool armed_ = false;    // a wait or a continuation is pending for this generation
    bool expiring_ = false; // callbacks are running; arming is left to the end of the batch
};

} // namespace tarry::timeouts

#pragma once

// HOW AND WHY
//
// A server holding thousands of keep-alive connections must notice the ones that went quiet, and
// must do it while the busy ones bump their "last active" time on every read and write. libev's
// manual ("Be smart about timeouts") lists four ways to keep such an activity timeout:
//
//   1. stop and restart a timer on every activity: simple, and two heap operations each time;
//   2. re-arm the timer on every activity: one heap operation (O(log n)) each time; this is what
//      Boost.Beast's tcp_stream does with its per-connection steady_timer;
//   3. let the timer fire at the old deadline and, if there was activity since, re-arm it then:
//      cheaper, still one heap entry per connection;
//   4. when many timeouts share one duration, keep them in a doubly-linked list in activity
//      order, with a single timer on the head: activity is an O(1) unlink and append.
//
// We use the fourth, as Node.js timers and h2o (<= 2.2) do. Appending with idle_start = now keeps
// each list sorted by deadline for free, because every entry in it has the same duration. Asio
// keeps its timers in a binary heap where a re-arm costs O(log n) plus a cancelled handler; here
// a touch is two pointer swaps and a clock read, whatever the number of connections.
//
//   registry (one per io_context, i.e. per thread)
//     |
//     +-- 65s list:  [head: oldest] <-> [..] <-> [tail: newest]    one steady_timer @ head deadline
//     +-- 60s list:  [..] <-> [..]                                 one steady_timer
//     +-- 250ms list: (empty)                                      no pending wait
//
// How the promises are kept:
//
// - Touch never touches a timer. The list's timer wakes at the head's deadline as it was when
//   armed. If the head was touched since, nothing is due and the timer is re-armed for the new
//   head: one timer operation per timeout period per list, not per activity.
// - Never early. Expiry compares deadlines with a fresh steady_clock reading taken when the timer
//   fires, never with a cached loop time, so a timer that fires late or a loop that was busy can
//   only make an expiry late.
// - Entries are unlinked before their callback runs and the head is re-read every round, so a
//   callback may re-enroll its own entry, or destroy the next one.
// - Bounded work per wake: at most `expire_batch` entries expire per handler; if more are due,
//   the rest continue in a posted handler, so other I/O runs in between (a mass expiry of 100k
//   connections never blocks the loop for long).
// - Nothing idle keeps io_context::run() alive. Asio has no uv_unref, so the rule is: a list's
//   timer has a pending wait only while the list has entries. It is armed when the list goes
//   from empty to non-empty and cancelled when the last entry leaves.
// - Lifetimes. Destroying an enrolled entry unlinks it; destroying the registry detaches every
//   entry (they become unenrolled, none expires) and cancels the timers. A completion that is
//   already queued holds its list alive and finds it detached.
//
// Thread model: one registry per io_context, run by one thread. No locks anywhere.

#include "expiry_stats.hpp"
#include "idle_entry.hpp"
#include "idle_list.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <cstddef>
#include <memory>

namespace tarry::timeouts {

class timer_list;

class timeout_registry {
public:
    /// Expiry callbacks per wake before the rest is deferred. One expiry in the server (close a
    /// socket on loopback, free a connection) measured 11-20 us (tarry_timeout_wake_seconds in
    /// /metrics during a 15000-connection flood), so 16 keeps a wake near a quarter millisecond:
    /// a busy client's p99 behind a mass expiry was 0.25-0.6 ms with 16, 1-1.8 ms with 64.
    static constexpr std::size_t default_expire_batch = 16;

    explicit timeout_registry(boost::asio::io_context& io,
                              std::size_t expire_batch = default_expire_batch);
    timeout_registry(const timeout_registry&) = delete;
    timeout_registry& operator=(const timeout_registry&) = delete;
    ~timeout_registry();

    /// Puts `e` at the tail of the list for `timeout`, as active now, moving it out of the list
    /// it was in. Creates the list (and its timer) on first use of a duration.
    void enroll(idle_entry& e, clock::duration timeout) { enroll(e, timeout, clock::now()); }
    void enroll(idle_entry& e, clock::duration timeout, clock::time_point now);

    /// Marks `e` active now: O(1), no timer operation. No effect on an unenrolled entry.
    static void touch(idle_entry& e) noexcept { touch(e, clock::now()); }
    static void touch(idle_entry& e, clock::time_point now) noexcept {
        if (idle_list* l = e.list()) l->touch(e, now);
    }

    /// Removes `e` from its list, if any: O(1).
    static void unenroll(idle_entry& e) noexcept {
        if (idle_list* l = e.list()) l->remove(e);
    }

    /// Moves every entry of the `from` list into the `to` list, each keeping its idle_start, so
    /// the time already waited counts against the new duration (a reload). O(n + m).
    void retime(clock::duration from, clock::duration to);

    /// The list for `timeout`, or nullptr.
    [[nodiscard]] idle_list* find(clock::duration timeout) const noexcept;

    /// Expires, in every list, the entries due at `now`, as the timers would but without a batch
    /// limit. For callers that keep their own clock (tests, simulations); timers keep running.
    std::size_t expire_due(clock::time_point now);

    /// Calls `f(idle_list&)` for each live list.
    template <class F> void for_each_list(F&& f) const {
        for (const auto& [rep, list] : lists_)
            f(as_idle_list(*list));
    }

    [[nodiscard]] std::size_t list_count() const noexcept { return lists_.size(); }
    [[nodiscard]] std::size_t expire_batch() const noexcept { return expire_batch_; }
    void set_expire_batch(std::size_t n) noexcept { expire_batch_ = n == 0 ? 1 : n; }
    [[nodiscard]] const expiry_stats& stats() const noexcept { return stats_; }

private:
    friend class timer_list;
    static idle_list& as_idle_list(timer_list& l) noexcept;
    void prune_empty_lists();
    timer_list& list_for(clock::duration timeout);

    boost::asio::io_context& io_;
    std::size_t expire_batch_;
    expiry_stats stats_;
    boost::unordered_flat_map<clock::rep, std::shared_ptr<timer_list>> lists_;
};

} // namespace tarry::timeouts

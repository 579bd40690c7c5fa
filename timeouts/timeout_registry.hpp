#pragma once

/**
@file
@brief The timeouts core's entry point: idle lists per kind and duration, one Asio timer per list.

# How and why

A server holding thousands of keep-alive connections must notice the ones that went quiet,
and must do it while the busy ones bump their "last active" time on every read and write.
libev's manual ("Be smart about timeouts") lists four ways to keep such an activity timeout:

 1. stop and restart a timer on every activity: simple, and two heap operations each time;
 2. re-arm the timer on every activity: one heap operation (O(log n)) each time; this is what
    Boost.Beast's `tcp_stream` does with its per-connection `steady_timer`;
 3. let the timer fire at the old deadline and, if there was activity since, re-arm it then:
    cheaper, still one heap entry per connection;
 4. when many timeouts share one duration, keep them in a doubly-linked list in activity
    order, with a single timer on the head: activity is an O(1) unlink and append.

We use the fourth, as Node.js timers and h2o (<= 2.2) do. Appending with `idle_start = now`
keeps each list sorted by deadline for free, because every entry in it has the same
duration: the head is always the next to expire, and nothing is ever compared.

## One list per kind and duration

A server times many *kinds* of things: client connections waiting for a first byte, reading a
header, idle between requests, lingering; upstream connections connecting, waiting for a
response, idle in a pool; next, TLS handshakes and tunnels. Several of them often share a
duration (60 s is everyone's favourite), and a list keyed by duration alone would then hold
several kinds: code that walks it (reclaim the oldest idle connection, move the idle ones on a
reload, count them for metrics) would have to guess what each entry is, and a wrong guess reads
a foreign object. So a list is identified by (timeout_kind, duration), as h2o 2.2 keeps one
`h2o_timeout_t` per kind in its context: a walk sees one kind only, and turning an entry back
into its object is checked (idle_entry::owner<T>(), and an enroll into a kind of another owner
fails). Kinds are small ids: the registry keeps a lane per kind, an array indexed by the id,
each holding that kind's lists (almost always one, a few after a reload changed a duration),
so finding a list is an index and a compare, cheaper than hashing the duration.

## One timer per list, not per connection

Asio keeps every `steady_timer` of an `io_context` in one binary heap ordered by expiry. Give
each connection its own timer and that heap holds one node per connection: every activity
re-arms one (O(log n) sift, plus a cancelled handler that must still be run), and 100,000
idle connections are 100,000 heap nodes and 100,000 pending operations. Here the heap holds
one timer per *list*, that is per kind and distinct duration: a handful (keep-alive, header,
body, send, pooled upstream), whatever the number of connections. The work is split by what each
structure is good at: the intrusive list orders the connections of one duration (by appending,
O(1)); Asio's heap orders the lists by their heads' deadlines (O(log lists), which is O(1) in
practice). A touch is a clock read and two pointer swaps and never reaches the heap.

@verbatim
  timeout_registry (one per io_context)                  Asio's timer heap: O(lists) nodes

  lane keep_alive  65s:  D <-> E <-> F <-> G  ------->  timer @ D's deadline
  lane header      60s:  A <-> B              ------->  timer @ A's deadline
  lane pooled      60s:  P                    ------->  timer @ P's deadline (same duration,
  lane linger      5s:   C                    ------->  timer @ C's deadline  another list)
  lane send        60s:  (empty)                        no pending wait
                         ^head (oldest)  ^tail (newest)

  touch(E): E.idle_start = now; unlink E; append after G.    No timer operation.
  The 65s timer wakes at D's deadline: D is unlinked, then its callback runs. The head is
  now F (E moved behind G), so the timer is re-armed once, for F's deadline.
@endverbatim

## How the promises are kept

- **Touch never touches a timer.** A list's timer wakes at the head's deadline as it was when
  armed. If the head was touched since, nothing is due and the timer is re-armed for the new
  head: one timer operation per timeout period per list, not per activity.
- **Never early.** Expiry compares deadlines with a fresh `steady_clock` reading taken when
  the timer fires, never with a cached loop time, so a timer that fires late or a loop that
  was busy can only make an expiry late.
- **Callbacks may do almost anything.** An entry is unlinked before its callback runs and the
  head is re-read every round, so a callback may re-enroll its own entry, or unenroll or
  destroy the next one.
- **Bounded work per wake.** At most `expire_batch()` entries expire per handler; if more are
  due, the rest continue in a posted handler, so other I/O runs in between (a mass expiry of
  100k connections never blocks the loop for long).
- **Nothing idle keeps `io_context::run()` alive.** Asio has no `uv_unref`, so the rule is:
  a list's timer has a pending wait only while the list has entries. It is armed when the
  list goes from empty to non-empty and cancelled when the last entry leaves.
- **Lifetimes.** Destroying an enrolled entry unlinks it; destroying the registry detaches
  every entry (they become unenrolled, none expires) and cancels the timers. A completion
  that is already queued holds its list alive and finds it detached.

## Retiming a duration

When a configuration reload changes a timeout from 65 s to 10 s, connections already idle
must move to the new duration *keeping the time they have waited* (one idle for 30 s closes
at once, not 10 s later), and nothing else may move: an upstream connection that happens to
have the old duration keeps it. `retime(kind, from, to)` does that without sorting and without
temporary storage: both lists are sorted by `idle_start`, so the source is spliced into the target
in one forward walk, like the merge step of a merge sort, each entry taking the new
duration. The source list ends empty (its timer cancelled) and the target's timer is re-armed
for its new head, which may be earlier than before.

@verbatim
  keep_alive 65s: a(t=0) <-> c(t=20)    keep_alive 10s: b(t=10) <-> d(t=30)
  retime(keep_alive, 65s, 10s)  ->  keep_alive 10s: a(0) <-> b(10) <-> c(20) <-> d(30),
                                    timer at 0 + 10s; pooled 65s: untouched
@endverbatim

## When memory runs out

Touch, unenroll and expiry never allocate. Enroll allocates when it creates the list for a
kind and duration not in use (a lane slot, the list and its timer) and, like every call that may
queue a timer wait, inside Asio (the wait operation; usually served from Asio's per-thread recycling
cache). Those calls are not `noexcept`: they throw `std::bad_alloc`, and enroll then leaves the
entry exactly where it was. Inside a timer's handler, which cannot throw, a continuation that cannot
be posted is replaced by expiring the next batch inline (the loop is held longer, but nothing due is
left without a wake), and a re-arm that fails leaves the list unarmed until the next enroll into it;
both are counted in `expiry_stats::schedule_failures`.

## Threads

One registry per `io_context`, used only by the thread that runs it: there are no locks
anywhere, and nothing here is thread-safe. A server with N threads has N registries.
*/

/**
@mainpage tarry::timeouts

Idle timeouts for Asio programs (`find_package(tarry CONFIG)`, target `tarry::timeouts`,
headers `<tarry/timeouts/...>`). Start with timeout_registry.hpp, whose description explains how
the core works and why; then tarry::timeouts::timeout_registry (enroll, touch, unenroll, retime),
tarry::timeouts::idle_entry (the hook an object embeds, and what its callback may do) and
tarry::timeouts::timeout_kind (what a list holds).
*/

#include "expire_batch.hpp"
#include "expiry_stats.hpp"
#include "idle_entry.hpp"
#include "idle_list.hpp"
#include "timeout_kind.hpp"

#include <boost/asio/io_context.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

namespace tarry::timeouts {

class timer_list;

/// @brief Idle timeouts for the objects of one `io_context`: one list and one timer per kind and
/// duration.
///
/// Objects embed an idle_entry and `enroll()` it with a kind and a duration; `touch()` marks
/// activity; when an entry has been idle for its whole duration it is unlinked and its callback
/// runs on the `io_context`'s thread. See the file's description for how and why.
///
/// **Threads.** A registry belongs to one `io_context` run by one thread; every call on it, and
/// on the entries enrolled in it, is made on that thread. Nothing here takes a lock or is
/// thread-safe. Use one registry per `io_context` (per worker thread).
///
/// **Lifetimes.** The `io_context` must outlive the registry, and every kind used must outlive
/// it (kinds are namespace-scope constants). Entries and the registry may die in either order:
/// destroying an enrolled entry unlinks it; destroying the registry detaches every entry (each
/// becomes unenrolled, none expires) and cancels its timers. An entry's address is its identity,
/// so an entry is never copied or moved while enrolled.
///
/// **Callbacks** (idle_entry::callback) run from a timer's handler, after the entry has been
/// unlinked. A callback may enroll, touch or unenroll its own entry or any other, destroy its
/// own object or any other enrolled object (the next entry included), and enroll into a
/// kind or duration not yet used. It must not throw (the type is `noexcept`) and must not
/// destroy the registry synchronously: post that to the `io_context` instead.
///
/// **Costs.** Touch and unenroll are O(1) and never allocate or reprogram a timer. A timer
/// operation happens only when a list goes from empty to non-empty (one `async_wait`), when it
/// becomes empty (one `cancel`), and once per wake (re-arm for the new head).
class timeout_registry {
public:
    /// Expiry callbacks per wake before the rest is deferred to a posted handler. An expiry in
    /// the server closes a socket and frees a connection, so the batch bounds how long one wake
    /// holds the loop, and so how long a busy client waits behind a mass expiry: 16 keeps that
    /// wait small where 64 did not (the measurements: load/README.md, "Expiry batch size").
    static constexpr std::size_t default_expire_batch = tarry::timeouts::default_expire_batch;

    /// A registry whose timers run on `io`. Allocates nothing until the first enroll.
    /// @param io           the `io_context` whose thread will make every call; must outlive
    ///                     the registry
    /// @param expire_batch expiry callbacks per wake (0 is taken as 1)
    explicit timeout_registry(boost::asio::io_context& io,
                              std::size_t expire_batch = default_expire_batch);
    timeout_registry(const timeout_registry&) = delete;
    timeout_registry& operator=(const timeout_registry&) = delete;
    /// Detaches every entry (none expires) and cancels every timer. Must not run inside one of
    /// this registry's callbacks. Handlers already queued find their list detached and do
    /// nothing, so the `io_context` may keep running or be destroyed afterwards.
    ~timeout_registry();

    /// @brief Puts `e` at the tail of the list for (`kind`, `timeout`), active now, moving it
    /// out of the list it was in (an enroll into its own list is a touch).
    ///
    /// Cost: one `steady_clock` read; O(1) otherwise (an index into the kind's lane and a compare
    /// per duration it has, almost always one). A timer operation only if the target list was
    /// empty (one `async_wait`) or the list left becomes empty (one `cancel`).
    ///
    /// Allocation: the first enroll into a kind and duration not in use creates its list (the
    /// list and its `steady_timer`, a slot in the kind's lane); queueing a wait may allocate
    /// inside Asio (normally served from Asio's per-thread recycling cache). Enrolling into a
    /// list that already has entries (and an armed timer) never allocates.
    ///
    /// The kind must admit `e`'s owner (timeout_kind::admits): an entry embedded in an object
    /// of another type aborts the program with a message, before anything moves.
    ///
    /// @throws std::bad_alloc if memory runs out. Strong guarantee: `e` is then exactly where it
    /// was (still in its old list, or still unenrolled). A caller on a `noexcept` path must
    /// catch it and give up on the object, as for any other allocation failure (a server
    /// closes the connection it was starting or moving to a new phase).
    void enroll(idle_entry& e, const timeout_kind& kind, clock::duration timeout) {
        enroll(e, kind, timeout, clock::now());
    }
    /// As enroll(idle_entry&, const timeout_kind&, clock::duration), active at `now` instead of
    /// reading the clock. `now` must not be earlier than any time already passed to this
    /// registry.
    void enroll(idle_entry& e, const timeout_kind& kind, clock::duration timeout,
                clock::time_point now);
    /// Enroll into the untyped kind (timeout_kind::untyped()): for programs that time one
    /// kind of thing.
    void enroll(idle_entry& e, clock::duration timeout) {
        enroll(e, timeout_kind::untyped(), timeout, clock::now());
    }
    /// As enroll(idle_entry&, clock::duration), active at `now`.
    void enroll(idle_entry& e, clock::duration timeout, clock::time_point now) {
        enroll(e, timeout_kind::untyped(), timeout, now);
    }

    /// @brief Marks `e` active now. No effect on an unenrolled entry.
    ///
    /// O(1): one `steady_clock` read, an unlink and an append. No allocation, no timer
    /// operation, whatever the number of entries (the timer finds out when it wakes).
    static void touch(idle_entry& e) noexcept { touch(e, clock::now()); }
    /// As touch(idle_entry&), active at `now`: no clock read.
    static void touch(idle_entry& e, clock::time_point now) noexcept {
        if (idle_list* l = e.list()) l->touch(e, now);
    }

    /// @brief Removes `e` from its list, if any; its callback will not run.
    ///
    /// O(1), no clock read, no allocation; one timer `cancel` if the list becomes empty.
    static void unenroll(idle_entry& e) noexcept {
        if (idle_list* l = e.list()) l->remove(e);
    }

    /// @brief Moves every entry of `kind` and duration `from` into its list for `to`, each
    /// keeping its idle_start, so the time already waited counts against the new duration (a
    /// reload). Entries of other kinds are not moved, whatever their duration.
    ///
    /// O(n + m) for lists of n and m entries, by an in-place merge: no sort, no temporary
    /// storage. Timer operations: the emptied `from` list cancels its wait, the `to` list is
    /// re-armed once. Nothing happens if `from == to` or no entry has `from`.
    ///
    /// @throws std::bad_alloc if the `to` list must be created and cannot be (nothing moved),
    /// or if its timer cannot be re-armed (entries moved; the list waits unarmed until the next
    /// enroll into it).
    void retime(const timeout_kind& kind, clock::duration from, clock::duration to);
    /// retime() in the untyped kind.
    void retime(clock::duration from, clock::duration to) {
        retime(timeout_kind::untyped(), from, to);
    }

    /// The list for (`kind`, `timeout`), or nullptr if it has none. O(1).
    /// Lists whose entries have all gone are kept until a new list is first made.
    [[nodiscard]] idle_list* find(const timeout_kind& kind, clock::duration timeout) const noexcept;
    /// find() in the untyped kind.
    [[nodiscard]] idle_list* find(clock::duration timeout) const noexcept {
        return find(timeout_kind::untyped(), timeout);
    }

    /// @brief The entry of `kind` idle longest (earliest idle_start over the kind's lists), or
    /// nullptr: what to reclaim first under pressure. O(lists of the kind), almost always one.
    [[nodiscard]] idle_entry* oldest(const timeout_kind& kind) const noexcept;

    /// @brief Expires, in every list, the entries due at `now`, as the timers would but
    /// without a batch limit: for callers that keep their own clock (tests, simulations).
    ///
    /// Only entries present when it starts can expire, so a callback that re-enrolls with a
    /// zero timeout does not loop. Timers keep running. O(lists + expired); allocates a
    /// snapshot of the lists (callbacks may add lists).
    /// @return how many entries expired
    /// @throws std::bad_alloc if the snapshot or a re-arm cannot be allocated
    std::size_t expire_due(clock::time_point now);

    /// Calls `f(idle_list&)` for each list, kind by kind (metrics). `f` must not enroll into a
    /// new kind or duration, which may add lists.
    template <class F> void for_each_list(F&& f) const {
        for (const lane& l : lanes_)
            for (const auto& list : l.lists)
                f(as_idle_list(*list));
    }
    /// Calls `f(const timeout_kind&, const expiry_stats&)` for each kind that has been enrolled
    /// into: its expiries, wakes and lateness histogram.
    template <class F> void for_each_kind(F&& f) const {
        for (const lane& l : lanes_)
            if (l.kind != nullptr) f(*l.kind, l.stats);
    }

    /// How many lists exist (kinds and distinct durations in use, plus empty ones not yet
    /// pruned).
    [[nodiscard]] std::size_t list_count() const noexcept;
    /// Expiry callbacks per wake before the rest is deferred.
    [[nodiscard]] std::size_t expire_batch() const noexcept { return expire_batch_; }
    /// Sets expire_batch() (0 is taken as 1); applies from the next wake.
    void set_expire_batch(std::size_t n) noexcept { expire_batch_ = n == 0 ? 1 : n; }
    /// Counters and the lateness histogram of every expiry so far, all kinds summed.
    [[nodiscard]] expiry_stats stats() const noexcept;
    /// Counters and the lateness histogram of the expiries of `kind`.
    [[nodiscard]] const expiry_stats& stats(const timeout_kind& kind) const noexcept {
        return lanes_[kind.id()].stats;
    }

private:
    friend class timer_list;
    /// One kind's lists (one per duration in use) and what its expiries did.
    struct lane {
        const timeout_kind* kind = nullptr; ///< set by the first enroll of this kind
        std::vector<std::shared_ptr<timer_list>> lists;
        expiry_stats stats;
    };
    static idle_list& as_idle_list(timer_list& l) noexcept;
    void prune_empty_lists();
    [[nodiscard]] timer_list* lookup(const timeout_kind& kind,
                                     clock::duration timeout) const noexcept;
    timer_list& list_for(const timeout_kind& kind, clock::duration timeout);

    boost::asio::io_context& io_;
    std::size_t expire_batch_;
    std::array<lane, timeout_kind::max> lanes_;
};

} // namespace tarry::timeouts

#pragma once

#include <tarry/net/io_batch.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
// After io_context.hpp, which they need: Asio's reactor (epoll), which waits on the poller's set
// in the nested mode, and its scheduler, whose task the poller becomes in the task mode.
#include <boost/asio/detail/reactor.hpp>
// Set by CMake (the TARRY_POLLER_TASK option) for every user of tarry_net, as the class's layout
// depends on it.
#ifndef TARRY_POLLER_TASK
#define TARRY_POLLER_TASK 1
#endif
#if TARRY_POLLER_TASK
#include <boost/asio/detail/scheduler.hpp>
#include <boost/asio/detail/scheduler_task.hpp>
#endif

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include <sys/epoll.h>

namespace tarry::net {

/// Something registered with a poller (a listener, an upstream connection): told which
/// readiness edges arrived.
class pollable {
public:
    virtual void on_events(std::uint32_t events) noexcept = 0;

    /// With batched reads: the read it would make now for `events` (its descriptor, and the most
    /// it takes), made with the batch's other reads before any event is dispatched. The poller
    /// lends the space (`data` is ignored) and may give less. Size 0 (the default): no read;
    /// the event goes to on_events as usual.
    virtual io_batch::read_target read_ahead(std::uint32_t /*events*/) noexcept { return {}; }
    /// The event, with the read made for it: `result` is recv(2)'s answer (bytes at `t.data`,
    /// valid until this returns; 0 at EOF; -errno) for the `t.size` bytes asked.
    virtual void on_read_ahead(std::uint32_t events, const io_batch::read_target& /*t*/,
                               long /*result*/) noexcept {
        on_events(events);
    }

protected:
    pollable() = default;
    pollable(const pollable&) = default;
    pollable& operator=(const pollable&) = default;
    ~pollable() = default;
};

/// An edge-triggered epoll set for a worker's sockets (clients, listeners, upstream
/// connections), and the one wait of the worker's loop: the poller takes the place of Asio's
/// reactor as the io_context's task (what its scheduler runs when the handlers run out, to wait
/// for more), and Asio's own epoll set (timers, posted work from other threads) sits inside the
/// poller's. A turn of the loop is one epoll_wait for both: the sockets' events are dispatched
/// at once, and Asio's reactor runs only in the turns where its set is ready. That is the task
/// mode, the default; the nested mode below does the same work through Asio's public interface.
///
/// Why not an Asio socket per connection: Asio's async_wait re-registers the descriptor with
/// epoll_ctl on every wait (its guard against lost edges), a third system call per request
/// next to recv and send; its reactor tries a read again after one that returned data (a recv
/// that finds nothing, per request); and each Asio socket carries a reactor record of its own,
/// plus an operation while it waits (their sizes, and what leaving them saved: load/README.md,
/// "Client sockets on the worker's poller"). Here a socket is registered once, for input and
/// output, edge-triggered; the owner tracks readiness itself (set by an edge, cleared by EAGAIN
/// or a short read), which is all edge-triggered epoll asks. Closing the descriptor unregisters
/// it.
///
/// Why the poller is the task, rather than a descriptor Asio waits on: nested that way, every
/// socket's wake-up goes on to wake Asio's set, and every turn makes two waits, Asio's and then
/// the poller's, at about a microsecond each on this project's machines (load/README.md, "One
/// wait per turn"). Asio 1.81 has no public way to give a scheduler another task, or to learn
/// its reactor's epoll descriptor: poller.cpp reaches the two private members it needs, and
/// refuses to build on a Boost other than the one it was checked against (its #error lists
/// what to re-check).
///
/// The nested mode (mode::nested) is that other way, kept for a Boost the task mode was not
/// checked against, and to tell the two apart when something goes wrong: the poller's epoll
/// descriptor is registered with Asio's reactor, and waited on by an operation of the reactor's
/// own (ready_op), not by async_wait, whose epoll_ctl per wait would come back once per turn of
/// the loop (6% of a proxied request's CPU, load/README.md, "The poller's own wait"). Its edges
/// are enough because the wait is queued only right after a dispatch that drained the set,
/// inside the same handler (or, after a stop and a start, ahead of the dispatch that start()
/// posts): an edge Asio takes while no wait is queued is always followed by such a drain, and
/// one that comes after the drain stays in Asio's epoll set until the wait is there. The
/// CMake option TARRY_POLLER_TASK=OFF builds the nested mode alone, with none of Asio's
/// private members reached; in a default build TARRY_POLLER_NESTED=1 in the environment picks
/// it for the pollers made from then on (default_mode()). Everything else, the batches, reads
/// and sends with io_uring, forget(), stop() and start(), is the same in both.
///
/// An owner may be closed while events for it sit in the batch being dispatched: either it is
/// not freed inside a batch (client connections free themselves through a posted handler), or
/// it calls forget() first, which drops its events from the batch.
///
/// The most numerous owners, client connections, are not `pollable`: their events go to the
/// function given at construction, told apart by a tag in the pointer's low bit, which saves
/// each connection a vtable pointer (8 of the bytes an idle connection costs).
class poller {
public:
    /// Receives the events of owners added with add_tagged().
    using tagged_handler = void (*)(void* owner, std::uint32_t events) noexcept;

    /// Reads made for tagged owners as their batch is taken, all in one call (with io_uring):
    /// `target` says where an owner's next bytes go (size 0: it reads nothing now, and gets its
    /// events as usual); `done` replaces the tagged handler for that event, with recv(2)'s
    /// answer (bytes, 0 at EOF, -errno) already in the owner's buffer.
    struct tagged_reads {
        io_batch::read_target (*target)(void* owner, std::uint32_t events) noexcept;
        /// Called for every owner as soon as the reads are made, before any event of the batch
        /// is dispatched: from then on its buffer holds the bytes (so that an earlier event's
        /// handler, such as pressure choosing a connection to close, sees them).
        void (*landed)(void* owner, long result) noexcept;
        void (*done)(void* owner, std::uint32_t events, long result) noexcept;
    };

    /// How the loop waits for the poller's set (see above).
    enum class mode {
        task,   ///< the io_context's task, Asio's set nested in the poller's: one wait per turn
        nested, ///< a descriptor in Asio's reactor, waited on through its public interface
    };
    /// The mode of a poller made now: nested in a build without the task mode
    /// (TARRY_POLLER_TASK=OFF) or with TARRY_POLLER_NESTED set (and not to 0) in the
    /// environment, read as each poller is made (as TARRY_IO_URING is); the task otherwise.
    static mode default_mode() noexcept;

    /// Made before `io` runs, one per io_context. In the task mode it becomes `io`'s task
    /// (std::logic_error for a second such poller); mode::task in a build without it:
    /// std::invalid_argument.
    explicit poller(boost::asio::io_context& io, tagged_handler tagged = nullptr,
                    const tagged_reads* reads = nullptr, mode how = default_mode());
    poller(const poller&) = delete;
    poller& operator=(const poller&) = delete;
    /// Gives the io_context its reactor back as its task (nested: takes the descriptor out of
    /// the reactor, and a wait still queued there frees itself). The handlers the poller posted
    /// (deferred sends, the nested mode's dispatches) point at it: the io_context must not run
    /// them after this, so a poller goes once its io_context no longer runs (a worker: stop(), a
    /// last poll(), then this, then the io_context, whose destructor drops what is still queued
    /// without running it).
    ~poller();

    [[nodiscard]] mode how() const noexcept { return mode_; }

    /// Registers `fd` for `events`, edge-triggered. Returns false (errno set) on failure.
    bool add(int fd, pollable& owner, std::uint32_t events) noexcept;
    /// Registers `fd` for input and output edges, delivered to the tagged handler with `owner`
    /// (at least 2-byte aligned).
    bool add_tagged(int fd, void* owner) noexcept;
    /// Unregisters `fd` (needed before closing a descriptor whose open file other descriptors
    /// share, which closing alone would leave registered).
    void remove(int fd) noexcept;
    /// Unregisters `fd`, then closes it: for a descriptor whose owner is freed after. Closing
    /// alone leaves the registration while any other descriptor shares the open file, and a
    /// process forked by another thread holds a copy of every descriptor until its exec (a
    /// test that starts a client beside an in-process server): an event in that window would
    /// name the freed owner.
    void close(int fd) noexcept;
    /// Drops the events for `owner` still waiting in the batch this thread's poller is
    /// dispatching, if any: called by an owner that may be freed before the batch ends.
    static void forget(const pollable& owner) noexcept;

    /// From now on the io_context's turns wait for the sockets too and dispatch their events
    /// (the ones that came before first), and its run() does not return until stop(). (Nested:
    /// the first dispatch is posted, and the wait is queued in Asio's reactor after it.)
    void start();
    /// The sockets' events wait, undispatched, until a start(); run() returns once nothing else
    /// is pending.
    void stop() noexcept;
    /// Sends are made in batches (io_batch): an owner with bytes to send calls defer_send()
    /// instead of send(2), once, and is told the result by `calls` at the end of the event
    /// batch being dispatched, or after the handlers posted before it if none is. If it throws
    /// (out of memory), `owner` is not queued.
    [[nodiscard]] bool batching() const noexcept { return sends_ != nullptr; }
    void defer_send(void* owner, const io_batch::owner_calls& calls);
    /// Takes `owner` out of the sends waiting (it is closing, and may be freed before them).
    void cancel_send(const void* owner) noexcept {
        if (sends_) sends_->remove(owner);
    }

    /// Frees the space lent to pollables' reads (kept between batches), as the heap is trimmed.
    static void release_kept() noexcept;

    /// When the batch being dispatched was taken from epoll (one clock reading per batch): when
    /// a request's first bytes were seen, for its duration.
    [[nodiscard]] timeouts::clock::time_point reaped() const noexcept { return reaped_; }

private:
    class ready_op;

#if TARRY_POLLER_TASK
    /// What Asio's scheduler runs as its task: a turn of the poller's loop.
    class loop_task final : public boost::asio::detail::scheduler_task {
    public:
        explicit loop_task(poller& p) noexcept : poller_(p) {}
        void
        run(long usec,
            boost::asio::detail::op_queue<boost::asio::detail::scheduler_operation>& ops) override {
            poller_.turn(usec, ops);
        }
        /// Asio's post from another thread, or its stop(): the wait returns.
        void interrupt() override { poller_.reactor_.interrupt(); }

    private:
        poller& poller_;
    };

    /// The task mode: takes the scheduler's task, and nests Asio's set in the poller's.
    void become_task();
    /// Waits up to `usec` (-1: until something comes, 0: not at all) for the sockets and
    /// Asio's set, dispatches the sockets' events, and leaves what Asio's reactor completes in
    /// `ops`.
    void turn(long usec,
              boost::asio::detail::op_queue<boost::asio::detail::scheduler_operation>& ops);
#endif

    /// The nested mode: registers the poller's set with Asio's reactor.
    void nest();
    /// Nested: queues the wait for the epoll descriptor's next edge (once).
    void wait() noexcept;
    /// Nested: dispatches what the set holds, then waits again (or, when batches were full,
    /// comes back after Asio's other work).
    void ready();
    /// Nested: takes and dispatches batches until one is not full (at most a few); true if it
    /// stopped with events possibly left (every batch full).
    bool drain();

    bool add(int fd, void* data, std::uint32_t events) noexcept;
    /// Dispatches the batch of `n` events just taken.
    void dispatch(int n);
    void send_deferred() noexcept;
    /// Reads ahead for the batch's owners that want to read; true if any did.
    bool read_ahead(int n) noexcept;
    /// Lends space to the pollables' reads among targets_[0, n) (`wanting` of them).
    void lend_space(int n, int wanting) noexcept;

    boost::asio::io_context& io_;
    int epoll_ = -1;
    boost::asio::detail::reactor& reactor_;
#if TARRY_POLLER_TASK
    boost::asio::detail::scheduler& scheduler_;
    loop_task task_{*this};
#endif
    mode mode_;
    /// Nested: the poller's descriptor in Asio's reactor, and the wait queued there.
    boost::asio::detail::reactor::per_descriptor_data reactor_data_ = nullptr;
    ready_op* wait_op_ = nullptr; ///< freed here, or by Asio when it still holds it as this goes
    /// Held while started: keeps the io_context's run() from returning (the sockets' events are
    /// not work Asio counts).
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    tagged_handler tagged_;
    std::array<epoll_event, 512> events_{};
    int next_ = 0;  ///< the next event of the batch being dispatched
    int count_ = 0; ///< the events in that batch
    timeouts::clock::time_point reaped_{};
    std::unique_ptr<io_batch> sends_; ///< null: a send(2) each
    const tagged_reads* reads_;
    /// Per event of the batch, with sends_: where its owner read, and the answer.
    std::unique_ptr<io_batch::read_target[]> targets_;
    std::unique_ptr<long[]> read_;
    bool sends_posted_ = false; ///< a send_deferred() is queued on the io_context
};

} // namespace tarry::net

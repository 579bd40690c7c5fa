#pragma once

#include <tarry/net/io_batch.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <boost/asio/io_context.hpp>
// After io_context.hpp, which it needs: the reactor type (epoll), for the poller's own wait.
#include <boost/asio/detail/reactor.hpp>

#include <array>
#include <cstdint>
#include <memory>

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
/// connections), nested in the worker's io_context: Asio waits on the epoll descriptor,
/// everything else (timers, posted work) stays on Asio.
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
/// The epoll descriptor itself is waited on the same way, by an operation of Asio's reactor of
/// its own (ready_op), not by async_wait, whose epoll_ctl per wait would come back once per
/// turn of the loop (6% of a proxied request's CPU, load/README.md, "The poller's own wait").
/// Its edges are enough because the wait is queued only right after a dispatch that drained the
/// set, inside the same handler (or, after a stop and a start, ahead of the dispatch that
/// start() posts): an edge Asio takes while no wait is queued is always followed by such a
/// drain, and one that comes after the drain stays in Asio's epoll set until the wait is there.
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

    explicit poller(boost::asio::io_context& io, tagged_handler tagged = nullptr,
                    const tagged_reads* reads = nullptr);
    poller(const poller&) = delete;
    poller& operator=(const poller&) = delete;
    /// Its queued wait frees itself, but the handlers it posted (start(), a full batch's next
    /// turn, deferred sends) point at it: the io_context must not run them after this, so a
    /// poller goes once its io_context no longer runs (a worker: stop(), a last poll(), then
    /// this, then the io_context, whose destructor drops what is still queued without running
    /// it).
    ~poller();

    /// Registers `fd` for `events`, edge-triggered. Returns false (errno set) on failure.
    bool add(int fd, pollable& owner, std::uint32_t events) noexcept;
    /// Registers `fd` for input and output edges, delivered to the tagged handler with `owner`
    /// (at least 2-byte aligned).
    bool add_tagged(int fd, void* owner) noexcept;
    /// Unregisters `fd` (needed before closing a descriptor whose open file other descriptors
    /// share, which closing alone would leave registered).
    void remove(int fd) noexcept;
    /// Drops the events for `owner` still waiting in the batch this thread's poller is
    /// dispatching, if any: called by an owner that may be freed before the batch ends.
    static void forget(const pollable& owner) noexcept;

    /// Takes what is ready, then waits on Asio for the epoll descriptor; again after each batch
    /// until stop().
    void start();
    /// No more waiting: lets io_context::run() return once nothing else is pending.
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

    bool add(int fd, void* data, std::uint32_t events) noexcept;
    /// Queues the wait for the epoll descriptor's next edge (once).
    void wait() noexcept;
    /// Dispatches what the set holds, then waits again (or, when batches were full, comes back
    /// after Asio's other work).
    void ready();
    /// Returns true if it stopped with events possibly left (every batch full).
    bool dispatch();
    void send_deferred() noexcept;
    /// Reads ahead for the batch's owners that want to read; true if any did.
    bool read_ahead(int n) noexcept;
    /// Lends space to the pollables' reads among targets_[0, n) (`wanting` of them).
    void lend_space(int n, int wanting) noexcept;

    boost::asio::io_context& io_;
    int epoll_ = -1;
    boost::asio::detail::reactor& reactor_;
    boost::asio::detail::reactor::per_descriptor_data reactor_data_ = nullptr;
    ready_op* wait_op_ = nullptr; ///< freed here, or by Asio when it still holds it as this goes
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
    bool stopped_ = false;
    bool sends_posted_ = false; ///< a send_deferred() is queued on the io_context
};

} // namespace tarry::net

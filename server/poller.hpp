#pragma once

#include <boost/asio/io_context.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <boost/asio/posix/stream_descriptor.hpp>

#include <array>
#include <cstdint>

#include <sys/epoll.h>

namespace tarry::server {

class connection;

/// Something registered with a poller, other than a client connection (a listener): told which
/// readiness edges arrived.
class pollable {
public:
    virtual void on_events(std::uint32_t events) noexcept = 0;

protected:
    pollable() = default;
    pollable(const pollable&) = default;
    pollable& operator=(const pollable&) = default;
    ~pollable() = default;
};

/// An edge-triggered epoll set for a worker's client and listening sockets, nested in the
/// worker's io_context: Asio waits on the epoll descriptor, everything else (timers, posted
/// work) stays on Asio.
///
/// Why not an Asio socket per connection: Asio's async_wait re-registers the descriptor with
/// epoll_ctl on every wait (its guard against lost edges), a third system call per request
/// next to recv and send; and each Asio socket carries a reactor record of its own, plus an
/// operation while it waits (their sizes, and what leaving them saved: load/README.md, "Client
/// sockets on the worker's poller"). Here a socket is registered once, for input and output,
/// edge-triggered, when it is accepted; the owner tracks readiness itself (set by an edge,
/// cleared by EAGAIN), which is all edge-triggered epoll asks. Closing the descriptor
/// unregisters it.
///
/// An owner may be closed while events for it sit in the batch being dispatched: owners are
/// never freed inside a batch (connections free themselves through a posted handler).
///
/// Client connections, by far the most numerous owners, are not `pollable`: their events are
/// delivered by a direct call, told apart by a tag in the pointer's low bit, which saves each
/// connection a vtable pointer (8 of the bytes an idle connection costs) and the indirect call.
class poller {
public:
    explicit poller(boost::asio::io_context& io);
    poller(const poller&) = delete;
    poller& operator=(const poller&) = delete;
    ~poller();

    /// Registers `fd` for `events`, edge-triggered. Returns false (errno set) on failure.
    bool add(int fd, pollable& owner, std::uint32_t events) noexcept;
    /// Unregisters `fd` (needed before closing a descriptor whose open file other descriptors
    /// share, which closing alone would leave registered).
    void remove(int fd) noexcept;
    /// Registers a client connection's `fd` for input and output edges.
    bool add(int fd, connection& owner) noexcept;

    /// Waits on Asio for the epoll descriptor; again after each batch until stop().
    void start();
    /// No more waiting: lets io_context::run() return once nothing else is pending.
    void stop() noexcept;
    /// When the batch being dispatched was taken from epoll (one clock reading per batch): when
    /// a request's first bytes were seen, for its duration.
    [[nodiscard]] timeouts::clock::time_point reaped() const noexcept { return reaped_; }

private:
    bool add(int fd, void* data, std::uint32_t events) noexcept;
    void wait();
    void dispatch();

    boost::asio::posix::stream_descriptor epoll_;
    std::array<epoll_event, 512> events_{};
    timeouts::clock::time_point reaped_{};
    bool stopped_ = false;
};

} // namespace tarry::server

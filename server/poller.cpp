#include "poller.hpp"

#include "connection.hpp"

#include <cerrno>
#include <system_error>

namespace tarry::server {

namespace {

/// Set in the event data of a client connection (objects are at least 8-byte aligned).
constexpr std::uintptr_t connection_tag = 1;

int make_epoll() {
    const int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    return fd;
}

} // namespace

poller::poller(boost::asio::io_context& io) : epoll_(io, make_epoll()) {}

poller::~poller() {
    stop();
}

bool poller::add(int fd, pollable& owner, std::uint32_t events) noexcept {
    return add(fd, static_cast<void*>(&owner), events);
}

bool poller::add(int fd, connection& owner) noexcept {
    static_assert(alignof(connection) > connection_tag);
    return add(fd,
               reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(&owner) | connection_tag),
               EPOLLIN | EPOLLOUT | EPOLLRDHUP);
}

bool poller::add(int fd, void* data, std::uint32_t events) noexcept {
    epoll_event ev{};
    ev.events = events | EPOLLET;
    ev.data.ptr = data;
    return ::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_ADD, fd, &ev) == 0;
}

void poller::remove(int fd) noexcept {
    ::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_DEL, fd, nullptr);
}

void poller::start() {
    stopped_ = false;
    wait();
}

void poller::stop() noexcept {
    stopped_ = true;
    boost::system::error_code ignored;
    epoll_.cancel(ignored);
}

void poller::wait() {
    epoll_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [this](const boost::system::error_code& ec) {
                          if (ec || stopped_) return;
                          dispatch();
                          if (!stopped_) wait();
                      });
}

void poller::dispatch() {
    // A full batch means more may be ready: take another before yielding to Asio, but bounded,
    // so timers and posted work are never starved.
    for (int round = 0; round < 4; ++round) {
        const int n = ::epoll_wait(epoll_.native_handle(), events_.data(),
                                   static_cast<int>(events_.size()), 0);
        if (n > 0) reaped_ = timeouts::clock::now(); // one reading for the whole batch
        for (int i = 0; i < n; ++i) {
            const auto bits = reinterpret_cast<std::uintptr_t>(events_[i].data.ptr);
            if ((bits & connection_tag) != 0)
                reinterpret_cast<connection*>(bits & ~connection_tag)->on_events(events_[i].events);
            else
                static_cast<pollable*>(events_[i].data.ptr)->on_events(events_[i].events);
        }
        if (n < static_cast<int>(events_.size())) return;
    }
}

} // namespace tarry::server

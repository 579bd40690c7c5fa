#include "poller.hpp"

#include <boost/asio/post.hpp>

#include <cerrno>
#include <system_error>

namespace tarry::net {

namespace {

/// Set in the event data of an owner added with add_tagged().
constexpr std::uintptr_t tag = 1;

/// The poller dispatching a batch on this thread (a thread runs one worker's poller).
thread_local poller* dispatching = nullptr;

int make_epoll() {
    const int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    return fd;
}

} // namespace

poller::poller(boost::asio::io_context& io, tagged_handler tagged, const tagged_reads* reads)
    : epoll_(io, make_epoll()), tagged_(tagged), sends_(io_batch::open()), reads_(reads) {
    if (sends_ && reads_) {
        targets_ = std::make_unique<io_batch::read_target[]>(events_.size());
        read_ = std::make_unique<long[]>(events_.size());
    }
}

poller::~poller() {
    stop();
}

bool poller::add(int fd, pollable& owner, std::uint32_t events) noexcept {
    return add(fd, static_cast<void*>(&owner), events);
}

bool poller::add_tagged(int fd, void* owner) noexcept {
    return add(fd, reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(owner) | tag),
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

void poller::forget(const pollable& owner) noexcept {
    poller* const p = dispatching;
    if (p == nullptr) return;
    for (int i = p->next_; i < p->count_; ++i) {
        if (p->events_[i].data.ptr == &owner) p->events_[i].data.ptr = nullptr;
    }
}

void poller::defer_send(void* owner, const io_batch::owner_calls& calls) {
    sends_->add(owner, calls);
    if (dispatching == this || sends_posted_) return; // the batch's end sends it
    // Outside a batch (a handler posted by one, such as a proxy's response for its client):
    // after the handlers queued so far, so that theirs go in the same call.
    boost::asio::post(epoll_.get_executor(), [this] {
        sends_posted_ = false;
        send_deferred();
    });
    sends_posted_ = true;
}

void poller::send_deferred() noexcept {
    sends_->go();
    if (sends_->empty() || sends_posted_) return;
    // Still more (owners that queued again round after round): later, not starving the rest.
    try {
        boost::asio::post(epoll_.get_executor(), [this] {
            sends_posted_ = false;
            send_deferred();
        });
        sends_posted_ = true;
    } catch (...) {
        sends_->go();
    }
}

bool poller::read_ahead(int n) noexcept {
    // Each owner says where its next bytes go before any is told of its events: nothing runs
    // between these reads and the owners' handlers but the handlers of earlier events, which
    // never read another client's socket (they may close it: its buffer goes, unread).
    bool any = false;
    for (int i = 0; i < n; ++i) {
        const epoll_event& e = events_[i];
        const auto bits = reinterpret_cast<std::uintptr_t>(e.data.ptr);
        targets_[i] = (bits & tag) != 0
                          ? reads_->target(reinterpret_cast<void*>(bits & ~tag), e.events)
                          : io_batch::read_target{};
        any = any || targets_[i].size != 0;
    }
    if (!any) return false;
    sends_->recv_all(targets_.get(), read_.get(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        if (targets_[i].size == 0) continue;
        const auto bits = reinterpret_cast<std::uintptr_t>(events_[i].data.ptr);
        reads_->landed(reinterpret_cast<void*>(bits & ~tag), read_[i]);
    }
    return true;
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
        if (n <= 0) return;
        reaped_ = timeouts::clock::now(); // one reading for the whole batch
        count_ = n;
        dispatching = this;
        const bool ahead = targets_ && read_ahead(n);
        for (next_ = 0; next_ < n;) {
            const int i = next_++;
            const epoll_event& e = events_[i];
            const auto bits = reinterpret_cast<std::uintptr_t>(e.data.ptr);
            if ((bits & tag) != 0) {
                void* owner = reinterpret_cast<void*>(bits & ~tag);
                if (ahead && targets_[i].size != 0)
                    reads_->done(owner, e.events, read_[i]);
                else
                    tagged_(owner, e.events);
            } else if (bits != 0) // zero: forgotten
                static_cast<pollable*>(e.data.ptr)->on_events(e.events);
        }
        dispatching = nullptr;
        count_ = 0;
        next_ = 0;
        if (sends_ && !sends_->empty()) send_deferred();
        if (n < static_cast<int>(events_.size())) return;
    }
}

} // namespace tarry::net

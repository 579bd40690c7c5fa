#include "poller.hpp"

#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <new>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace tarry::net {

namespace {

/// Set in the event data of an owner added with add_tagged().
constexpr std::uintptr_t tag = 1;

/// The poller dispatching a batch on this thread (a thread runs one worker's poller).
thread_local poller* dispatching = nullptr;

/// The space lent to pollables' reads ahead (an upstream response's next bytes), split between
/// those of a batch; each reader takes its bytes out before its event's handler returns.
constexpr std::size_t space_size = 64 * std::size_t{1024};
/// The least a reader is lent: the readers past what the space holds at this size read as usual.
constexpr std::size_t least_lent = 4096;
thread_local std::unique_ptr<char[]> space;

int make_epoll() {
    const int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    return fd;
}

} // namespace

/// The wait for the epoll descriptor's next edge, queued in Asio's reactor as its own socket
/// operations are, but without what async_wait adds: an epoll_ctl(EPOLL_CTL_MOD) each time
/// (Asio 1.81, epoll_reactor::start_op with allow_speculative false). Queued with
/// allow_speculative true, the reactor first tries it at once (perform() says "not done" then,
/// without a system call), and then queues it with no epoll_ctl. One per poller, reused.
class poller::ready_op : public boost::asio::detail::reactor_op {
public:
    explicit ready_op(poller* p) noexcept
        : reactor_op(boost::system::error_code(), &ready_op::perform, &ready_op::complete),
          owner(p) {}

    poller* owner;         ///< null once the poller is gone: then this frees itself
    bool queued = false;   ///< in the reactor, or its completion is
    bool starting = false; ///< inside start_op(): the reactor's try at once

private:
    static status perform(reactor_op* base) noexcept {
        return static_cast<ready_op*>(base)->starting ? not_done : done;
    }
    static void complete(void* scheduler, boost::asio::detail::operation* base,
                         const boost::system::error_code& /*ec*/, std::size_t /*n*/) {
        auto* op = static_cast<ready_op*>(base);
        op->queued = false;
        poller* const p = op->owner;
        if (p == nullptr) {
            delete op;
            return;
        }
        const boost::system::error_code ec = std::exchange(op->ec_, {});
        if (scheduler == nullptr) return; // Asio destroys its queue: no call
        if (!ec)
            p->ready();
        else if (ec == boost::asio::error::operation_aborted && !p->stopped_)
            p->wait(); // stopped, then started again before this came back
    }
};

poller::poller(boost::asio::io_context& io, tagged_handler tagged, const tagged_reads* reads)
    : io_(io), epoll_(make_epoll()),
      reactor_(boost::asio::use_service<boost::asio::detail::reactor>(io)), tagged_(tagged),
      reads_(reads) {
    try {
        sends_ = io_batch::open();
        if (sends_) {
            targets_ = std::make_unique<io_batch::read_target[]>(events_.size());
            read_ = std::make_unique<long[]>(events_.size());
        }
        wait_op_ = new ready_op(this);
    } catch (...) {
        ::close(epoll_);
        throw;
    }
    reactor_.init_task(); // as Asio's own services do: the io_context waits on its reactor
    if (const int error = reactor_.register_descriptor(epoll_, reactor_data_); error != 0) {
        reactor_.cleanup_descriptor_data(reactor_data_);
        delete wait_op_;
        ::close(epoll_);
        throw std::system_error(error, std::generic_category(), "epoll registration");
    }
}

poller::~poller() {
    stop();
    // A queued wait comes back aborted through Asio's queue: it frees itself then.
    reactor_.deregister_descriptor(epoll_, reactor_data_, true);
    reactor_.cleanup_descriptor_data(reactor_data_);
    if (wait_op_->queued)
        wait_op_->owner = nullptr;
    else
        delete wait_op_;
    ::close(epoll_);
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
    return ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

void poller::remove(int fd) noexcept {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
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
    try {
        boost::asio::post(io_.get_executor(), [this] {
            sends_posted_ = false;
            send_deferred();
        });
    } catch (...) {
        sends_->remove(owner); // not queued after all: the caller's own flag stays unset
        throw;
    }
    sends_posted_ = true;
}

void poller::send_deferred() noexcept {
    sends_->go();
    if (sends_->empty() || sends_posted_) return;
    // Still more (owners that queued again round after round): later, not starving the rest.
    try {
        boost::asio::post(io_.get_executor(), [this] {
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
    // never read another owner's socket (they may close it: its bytes go, unread, with it).
    bool any = false;
    int wanting = 0; // pollables asking for space
    for (int i = 0; i < n; ++i) {
        const epoll_event& e = events_[i];
        const auto bits = reinterpret_cast<std::uintptr_t>(e.data.ptr);
        io_batch::read_target& t = targets_[i];
        if ((bits & tag) != 0) {
            t = reads_ != nullptr ? reads_->target(reinterpret_cast<void*>(bits & ~tag), e.events)
                                  : io_batch::read_target{};
        } else if (bits != 0) {
            t = static_cast<pollable*>(e.data.ptr)->read_ahead(e.events);
            if (t.size != 0) ++wanting;
        } else {
            t = {};
        }
        any = any || t.size != 0;
    }
    if (!any) return false;
    if (wanting != 0) lend_space(n, wanting);
    sends_->recv_all(targets_.get(), read_.get(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const auto bits = reinterpret_cast<std::uintptr_t>(events_[i].data.ptr);
        if (targets_[i].size == 0 || (bits & tag) == 0) continue;
        reads_->landed(reinterpret_cast<void*>(bits & ~tag), read_[i]);
    }
    return true;
}

void poller::lend_space(int n, int wanting) noexcept {
    if (!space) space.reset(new (std::nothrow) char[space_size]);
    const std::size_t each = std::max(space_size / static_cast<std::size_t>(wanting), least_lent);
    std::size_t used = 0;
    for (int i = 0; i < n; ++i) {
        io_batch::read_target& t = targets_[i];
        if (t.size == 0 || (reinterpret_cast<std::uintptr_t>(events_[i].data.ptr) & tag) != 0)
            continue;
        if (!space || used + each > space_size) {
            t = {}; // no room (or no memory): it reads for itself
            continue;
        }
        t.data = space.get() + used;
        t.size = std::min(t.size, each);
        used += each;
    }
}

void poller::release_kept() noexcept {
    if (dispatching == nullptr) space.reset();
}

void poller::start() {
    stopped_ = false;
    // What the set holds already first: its edge may have gone to Asio before the wait.
    boost::asio::post(io_.get_executor(), [this] { ready(); });
}

void poller::stop() noexcept {
    stopped_ = true;
    if (wait_op_->queued) reactor_.cancel_ops(epoll_, reactor_data_);
}

void poller::wait() noexcept {
    if (stopped_ || wait_op_->queued) return;
    wait_op_->queued = true;
    wait_op_->starting = true;
    reactor_.start_op(boost::asio::detail::reactor::read_op, epoll_, reactor_data_, wait_op_, false,
                      true);
    wait_op_->starting = false;
}

void poller::ready() {
    if (stopped_) return;
    if (!dispatch()) {
        wait();
        return;
    }
    // Every batch was full: more may wait, with no edge to say so. After Asio's other work.
    try {
        boost::asio::post(io_.get_executor(), [this] { ready(); });
    } catch (...) {
        wait(); // out of memory: what is left waits for its next edge
    }
}

bool poller::dispatch() {
    // A full batch means more may be ready: take another before yielding to Asio, but bounded,
    // so timers and posted work are never starved.
    for (int round = 0; round < 4; ++round) {
        const int n = ::epoll_wait(epoll_, events_.data(), static_cast<int>(events_.size()), 0);
        if (n <= 0) return false;
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
            } else if (bits != 0) { // zero: forgotten
                auto* owner = static_cast<pollable*>(e.data.ptr);
                if (ahead && targets_[i].size != 0)
                    owner->on_read_ahead(e.events, targets_[i], read_[i]);
                else
                    owner->on_events(e.events);
            }
        }
        dispatching = nullptr;
        count_ = 0;
        next_ = 0;
        if (sends_ && !sends_->empty()) send_deferred();
        if (n < static_cast<int>(events_.size())) return false;
    }
    return true;
}

} // namespace tarry::net

#include "poller.hpp"

#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/version.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

#include <unistd.h>

#if TARRY_POLLER_TASK
// The task mode reaches into Asio's scheduler and reactor as they are in Boost 1.81 (Asio 1.26),
// the only Boost it was checked against. On another, it may well compile and still break the
// loop without a word (a timer that never fires, a post that never wakes the wait), so it is
// refused until someone has read the new Asio and added its BOOST_VERSION here.
#if BOOST_VERSION != 108100
#error "tarry: the poller as the io_context's task (TARRY_POLLER_TASK=ON) was checked against \
Boost 1.81 (BOOST_VERSION 108100, Asio 1.26) only, not this Boost. Before adding this \
BOOST_VERSION to the check in net/poller.cpp, re-check in boost/asio/detail/ (scheduler.hpp, \
scheduler_task.hpp, epoll_reactor.hpp, impl/scheduler.ipp, impl/epoll_reactor.ipp): \
(1) scheduler::task_ is still a private `scheduler_task*`, set once by scheduler::init_task() \
(through the get_task_ function: the epoll_reactor service) and read nowhere else but to run \
and interrupt the task, and scheduler::shutdown() only clears it; \
(2) scheduler_task still declares exactly `virtual void run(long usec, \
op_queue<scheduler_operation>& ops)` and `virtual void interrupt()`; \
(3) do_run_one, do_wait_one and do_poll_one still run the task when task_operation_ comes off \
the queue, as task_->run(usec, ops) with usec 0 while handlers are queued, -1 (or run_for's \
wait) otherwise, outside the scheduler's lock, and queue what it leaves in ops; \
(4) a task blocked in run() is woken only by task_->interrupt() (wake_one_thread_and_unlock, \
stop_all_threads, under task_interrupted_), which the poller passes to \
epoll_reactor::interrupt(), and that still makes the reactor's epoll set readable (the \
interrupter re-armed by EPOLL_CTL_MOD, edge-triggered); \
(5) epoll_reactor::epoll_fd_ is still the private `int` of the reactor's one epoll set, \
holding its interrupter, its timerfd (timers must go through timer_fd_: the poller waits with \
the scheduler's usec alone, never the timer queues' timeout) and every descriptor of Asio's \
sockets, and epoll_reactor::run(0, ops) takes what is ready without blocking; \
(6) epoll_reactor::init_task() still calls scheduler::init_task(). \
Then run net_test (PollerLoop*), server_test and upstream_test. Or build without it: \
cmake -DTARRY_POLLER_TASK=OFF builds the poller as a descriptor in Asio's reactor (the nested \
mode, through public interfaces only: two waits per turn of the loop, otherwise the same)."
#endif
#if !defined(BOOST_ASIO_HAS_TIMERFD)
#error "tarry: the poller as the io_context's task needs Asio's reactor to keep its timers in a \
timerfd (BOOST_ASIO_HAS_TIMERFD); build with -DTARRY_POLLER_TASK=OFF"
#endif
#endif // TARRY_POLLER_TASK

namespace tarry::net {

namespace {

/// Set in the event data of an owner added with add_tagged().
constexpr std::uintptr_t tag = 1;

// The tag is added to and taken off the (aligned, so even) owner's address by pointer arithmetic
// rather than made from an integer, so that the pointer keeps what it points to in the
// compiler's eyes (performance-no-int-to-ptr).
void* with_tag(void* owner) noexcept {
    return static_cast<char*>(owner) + tag;
}

void* without_tag(void* data) noexcept {
    return static_cast<char*>(data) - tag;
}

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

#if TARRY_POLLER_TASK

namespace {

static_assert(std::is_same_v<boost::asio::detail::reactor, boost::asio::detail::epoll_reactor>,
              "the task mode nests Asio's epoll reactor: build with -DTARRY_POLLER_TASK=OFF");

/// The private members of Asio 1.81 the poller needs (see poller.hpp): an explicit
/// instantiation may name a private member, and the friend it defines hands the pointer out.
template <typename Tag, typename Tag::type Member> struct exposed {
    friend typename Tag::type member(Tag) { return Member; }
};
/// The reactor's epoll descriptor, nested in the poller's set.
struct reactor_epoll {
    using type = int boost::asio::detail::epoll_reactor::*;
    friend type member(reactor_epoll);
};
template struct exposed<reactor_epoll, &boost::asio::detail::epoll_reactor::epoll_fd_>;
/// The scheduler's task, which the poller takes over.
struct scheduler_task {
    using type = boost::asio::detail::scheduler_task* boost::asio::detail::scheduler::*;
    friend type member(scheduler_task);
};
template struct exposed<scheduler_task, &boost::asio::detail::scheduler::task_>;

} // namespace

#endif // TARRY_POLLER_TASK

/// Nested: the wait for the epoll descriptor's next edge, queued in Asio's reactor as its own
/// socket operations are, but without what async_wait adds: an epoll_ctl(EPOLL_CTL_MOD) each
/// time (Asio 1.81, epoll_reactor::start_op with allow_speculative false). Queued with
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
        else if (ec == boost::asio::error::operation_aborted && p->work_)
            p->wait(); // stopped, then started again before this came back
    }
};

poller::mode poller::default_mode() noexcept {
#if TARRY_POLLER_TASK
    const char* v = std::getenv("TARRY_POLLER_NESTED");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0 ? mode::nested : mode::task;
#else
    return mode::nested;
#endif
}

poller::poller(boost::asio::io_context& io, tagged_handler tagged, const tagged_reads* reads,
               mode how)
    : io_(io), epoll_(make_epoll()),
      reactor_(boost::asio::use_service<boost::asio::detail::reactor>(io)),
#if TARRY_POLLER_TASK
      scheduler_(boost::asio::use_service<boost::asio::detail::scheduler>(io)),
#endif
      mode_(how), tagged_(tagged), reads_(reads) {
    try {
#if !TARRY_POLLER_TASK
        if (how == mode::task)
            throw std::invalid_argument("the poller's task mode is not built (TARRY_POLLER_TASK)");
#endif
        sends_ = io_batch::open();
        if (sends_) {
            targets_ = std::make_unique<io_batch::read_target[]>(events_.size());
            read_ = std::make_unique<long[]>(events_.size());
        }
        reactor_.init_task(); // as Asio's own services do: the scheduler gets its task
#if TARRY_POLLER_TASK
        if (how == mode::task) {
            become_task();
            return;
        }
#endif
        nest();
    } catch (...) {
        ::close(epoll_);
        throw;
    }
}

#if TARRY_POLLER_TASK
void poller::become_task() {
    boost::asio::detail::scheduler_task*& task = scheduler_.*member(scheduler_task{});
    if (task != &reactor_) throw std::logic_error("a second poller for one io_context");
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.ptr = nullptr; // no owner's: every owner is registered with its own pointer
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, reactor_.*member(reactor_epoll{}), &ev) != 0)
        throw std::system_error(errno, std::generic_category(), "nesting Asio's epoll set");
    task = &task_;
}
#endif

void poller::nest() {
    wait_op_ = new ready_op(this);
    if (const int error = reactor_.register_descriptor(epoll_, reactor_data_); error != 0) {
        reactor_.cleanup_descriptor_data(reactor_data_);
        delete std::exchange(wait_op_, nullptr);
        throw std::system_error(error, std::generic_category(), "epoll registration");
    }
}

poller::~poller() {
    stop();
#if TARRY_POLLER_TASK
    if (mode_ == mode::task) scheduler_.*member(scheduler_task{}) = &reactor_;
#endif
    if (wait_op_ != nullptr) {
        // A queued wait comes back aborted through Asio's queue: it frees itself then.
        reactor_.deregister_descriptor(epoll_, reactor_data_, true);
        reactor_.cleanup_descriptor_data(reactor_data_);
        if (wait_op_->queued)
            wait_op_->owner = nullptr;
        else
            delete wait_op_;
    }
    ::close(epoll_);
}

bool poller::add(int fd, pollable& owner, std::uint32_t events) noexcept {
    return add(fd, static_cast<void*>(&owner), events);
}

bool poller::add_tagged(int fd, void* owner) noexcept {
    return add(fd, with_tag(owner), EPOLLIN | EPOLLOUT | EPOLLRDHUP);
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

void poller::close(int fd) noexcept {
    remove(fd);
    ::close(fd);
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
            t = reads_ != nullptr ? reads_->target(without_tag(e.data.ptr), e.events)
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
        reads_->landed(without_tag(events_[i].data.ptr), read_[i]);
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
    if (work_) return;
#if TARRY_POLLER_TASK
    if (mode_ == mode::task) {
        work_.emplace(io_.get_executor());
        // A turn already waiting in Asio's set alone (stopped) returns, to wait for both.
        reactor_.interrupt();
        return;
    }
#endif
    // Nested: what the set holds already first, as its edge may have gone to Asio before the
    // wait is queued (posted before the guard is taken, so that a throw leaves it stopped).
    boost::asio::post(io_.get_executor(), [this] { ready(); });
    work_.emplace(io_.get_executor());
}

void poller::stop() noexcept {
    work_.reset();
    if (wait_op_ != nullptr && wait_op_->queued) reactor_.cancel_ops(epoll_, reactor_data_);
}

void poller::wait() noexcept {
    if (!work_ || wait_op_->queued) return;
    wait_op_->queued = true;
    wait_op_->starting = true;
    reactor_.start_op(boost::asio::detail::reactor::read_op, epoll_, reactor_data_, wait_op_, false,
                      true);
    wait_op_->starting = false;
}

void poller::ready() {
    if (!work_) return;
    if (!drain()) {
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

bool poller::drain() {
    // A full batch means more may be ready: take another before yielding to Asio, but bounded,
    // so timers and posted work are never starved.
    const int size = static_cast<int>(events_.size());
    for (int round = 0; round < 4; ++round) {
        const int n = ::epoll_wait(epoll_, events_.data(), size, 0);
        if (n <= 0) return false;
        dispatch(n);
        if (n < size) return false;
    }
    return true;
}

#if TARRY_POLLER_TASK
void poller::turn(long usec,
                  boost::asio::detail::op_queue<boost::asio::detail::scheduler_operation>& ops) {
    if (!work_) {
        reactor_.run(usec, ops); // Asio's set alone: the sockets' events wait for a start()
        return;
    }
    int timeout = 0;
    if (usec < 0)
        timeout = -1;
    else if (usec > 0) // rounded up, as Asio's reactor does
        timeout = static_cast<int>(std::min<long>((usec - 1) / 1000 + 1, INT_MAX));
    const int n = ::epoll_wait(epoll_, events_.data(), static_cast<int>(events_.size()), timeout);
    if (n <= 0) return;
    // Asio's set (the one event without an owner): its timers and its own descriptors, whose
    // handlers run after this turn's events. dispatch() skips the event, as a forgotten one.
    if (std::any_of(events_.begin(), events_.begin() + n,
                    [](const epoll_event& e) { return e.data.ptr == nullptr; }))
        reactor_.run(0, ops);
    dispatch(n);
}
#endif

void poller::dispatch(int n) {
    reaped_ = timeouts::clock::now(); // one reading for the whole batch
    count_ = n;
    dispatching = this;
    const bool ahead = targets_ && read_ahead(n);
    for (next_ = 0; next_ < n;) {
        const int i = next_++;
        const epoll_event& e = events_[i];
        const auto bits = reinterpret_cast<std::uintptr_t>(e.data.ptr);
        if ((bits & tag) != 0) {
            void* owner = without_tag(e.data.ptr);
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
}

} // namespace tarry::net

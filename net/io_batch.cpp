#include "io_batch.hpp"

#include <liburing.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace tarry::net {
namespace {

/// Calls per io_uring_enter: the ring's size (the completion ring is twice it, so it never fills).
constexpr unsigned ring_entries = 256;
/// Rounds in one go(): owners told of a send may queue again (the next pipelined response).
constexpr int rounds_per_go = 8;
/// A result slot not yet filled by the kernel.
constexpr long unanswered = LONG_MIN;
/// A slot the ring could not take: made as a call of its own.
constexpr long refused = LONG_MIN + 1;

/// A send of its own, for what the ring could not take.
long send_now(const io_batch::output& out) noexcept {
    ssize_t n = 0;
    do {
        n = ::send(out.fd, out.data, out.size, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n >= 0 ? n : -errno;
}

/// A recv of its own.
long recv_now(const io_batch::read_target& t) noexcept {
    ssize_t n = 0;
    do {
        n = ::recv(t.fd, t.data, t.size, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n >= 0 ? n : -errno;
}

/// The data an answer carries that no slot has (a no-op left by a refusal).
constexpr std::uint64_t ignored = ~std::uint64_t{0};

/// A call's data: this submission's generation and its slot.
std::uint64_t tag(std::uint64_t generation, unsigned slot) noexcept {
    return ((generation & 0xffffffffU) << 32) | slot;
}

/// Whether this kernel's ring does what the batch relies on: send and recv (5.6 on), each
/// answered inside the io_uring_enter that takes it when MSG_DONTWAIT finds nothing to do, never
/// parked to wait for readiness (which would leave a call, and its buffer, in flight). Tried on a
/// socket pair once per ring.
bool supported(io_uring& ring) noexcept {
    io_uring_probe* probe = io_uring_get_probe_ring(&ring);
    const bool ops = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_SEND) != 0 &&
                     io_uring_opcode_supported(probe, IORING_OP_RECV) != 0;
    if (probe != nullptr) io_uring_free_probe(probe);
    if (!ops) return false;
    int fd[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) != 0) return false;
    static char byte = 0;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    bool at_once = false;
    if (sqe != nullptr) {
        io_uring_prep_recv(sqe, fd[0], &byte, 1, MSG_DONTWAIT);
        io_uring_sqe_set_data64(sqe, ignored);
        io_uring_cqe* cqe = nullptr;
        if (io_uring_submit(&ring) == 1) {
            if (io_uring_peek_cqe(&ring, &cqe) != 0) {
                // Not answered yet: give it its byte, so that it ends either way, and look at
                // what it says (-EAGAIN: it had been answered; 1: it had been waiting).
                (void)!::write(fd[1], "x", 1);
                if (io_uring_wait_cqe(&ring, &cqe) != 0) cqe = nullptr;
            }
            if (cqe != nullptr) {
                at_once = cqe->res == -EAGAIN;
                io_uring_cqe_seen(&ring, cqe);
            }
        }
    }
    ::close(fd[0]);
    ::close(fd[1]);
    return at_once;
}

bool wanted() noexcept {
    const char* v = std::getenv("TARRY_IO_URING");
    return v == nullptr || std::strcmp(v, "0") != 0;
}

} // namespace

struct io_batch::ring {
    io_uring uring{};
    std::vector<long> results;
    std::vector<io_uring_sqe*> prepared; ///< this round's, by slot (null: nothing to send)
    std::vector<std::size_t> asked;      ///< this round's send sizes, by slot
    /// Counts submissions: an answer carries its own, so none can be taken for another's.
    std::uint64_t generation = 0;

    ~ring() { io_uring_queue_exit(&uring); }
};

std::unique_ptr<io_batch> io_batch::open() {
    if (!wanted()) return nullptr;
    auto r = std::make_unique<ring>();
    // (Not IORING_SETUP_SINGLE_ISSUER: a worker's poller is made on the main thread, and
    // submits from the worker's.)
    if (io_uring_queue_init(ring_entries, &r->uring, 0) < 0)
        return nullptr; // no io_uring here (kernel, seccomp, io_uring_disabled): a call each
    if (!supported(r->uring)) return nullptr; // too old for send and recv on a ring
    r->results.resize(ring_entries);
    r->prepared.resize(ring_entries);
    r->asked.resize(ring_entries);
    return std::unique_ptr<io_batch>(new io_batch(std::move(r)));
}

io_batch::io_batch(std::unique_ptr<ring> r) : ring_(std::move(r)) {}

io_batch::~io_batch() = default;

void io_batch::add(void* owner, const owner_calls& calls) {
    queued_.push_back({owner, &calls});
}

void io_batch::remove(const void* owner) noexcept {
    for (auto* v : {&queued_, &sending_}) {
        for (queued& q : *v) {
            if (q.owner == owner) q.owner = nullptr;
        }
    }
}

int io_batch::go() noexcept {
    int calls = 0;
    for (int round = 0; round < rounds_per_go && !queued_.empty(); ++round)
        calls += send_round();
    return calls;
}

int io_batch::submit(unsigned count, unsigned submitted) noexcept {
    std::vector<long>& results = ring_->results;
    int calls = 0;
    unsigned waiting = submitted;
    for (int tries = 0; waiting != 0 && tries < 16; ++tries) {
        ++calls;
        const int r = io_uring_submit_and_wait(&ring_->uring, waiting);
        const std::uint64_t generation = ring_->generation;
        unsigned head = 0;
        unsigned seen = 0;
        io_uring_cqe* cqe = nullptr;
        io_uring_for_each_cqe(&ring_->uring, head, cqe) {
            const std::uint64_t data = io_uring_cqe_get_data64(cqe);
            const std::uint64_t slot = data & 0xffffffffU;
            if ((data >> 32) == (generation & 0xffffffffU) && slot < count &&
                results[slot] == unanswered) {
                results[slot] = cqe->res;
                --waiting;
            }
            ++seen;
        }
        io_uring_cq_advance(&ring_->uring, seen);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) break;
    }
    if (waiting == 0) return calls;
    // The ring refused (no memory for requests, say). The kernel takes entries in order: the
    // last `left` prepared are still in the queue. They become no-ops whose answers nobody
    // reads, and the caller makes them as calls of their own.
    unsigned left = io_uring_sq_ready(&ring_->uring);
    for (unsigned slot = count; slot-- > 0 && left != 0;) {
        io_uring_sqe* sqe = ring_->prepared[slot];
        if (sqe == nullptr || results[slot] != unanswered) continue;
        --left;
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data64(sqe, ignored);
        results[slot] = refused;
    }
    // Taken but never answered: cannot happen with MSG_DONTWAIT (each call is made inside the
    // io_uring_enter that takes it); were it to, the connection is failed rather than served
    // twice.
    for (unsigned slot = 0; slot < count; ++slot) {
        if (results[slot] == unanswered) results[slot] = -EIO;
    }
    return calls;
}

int io_batch::recv_all(const read_target* targets, long* results, std::size_t n) noexcept {
    int calls = 0;
    std::size_t wanted = 0;
    std::size_t only = 0;
    for (std::size_t i = 0; i < n && wanted < 2; ++i) {
        if (targets[i].size == 0) continue;
        ++wanted;
        only = i;
    }
    if (wanted == 1) { // one read: a call of its own is cheaper than a ring's
        results[only] = recv_now(targets[only]);
        return 1;
    }
    std::vector<long>& slots = ring_->results;
    for (std::size_t first = 0; first < n;) {
        const std::size_t last = std::min(n, first + ring_entries);
        const auto count = static_cast<unsigned>(last - first);
        unsigned submitted = 0;
        ++ring_->generation;
        for (unsigned slot = 0; slot < count; ++slot) {
            const read_target& t = targets[first + slot];
            ring_->prepared[slot] = nullptr;
            slots[slot] = 0;
            if (t.size == 0) continue;
            io_uring_sqe* sqe = io_uring_get_sqe(&ring_->uring);
            if (sqe == nullptr) {
                slots[slot] = refused;
                continue;
            }
            io_uring_prep_recv(sqe, t.fd, t.data, t.size, MSG_DONTWAIT);
            io_uring_sqe_set_data64(sqe, tag(ring_->generation, slot));
            ring_->prepared[slot] = sqe;
            slots[slot] = unanswered;
            ++submitted;
        }
        if (submitted != 0) calls += submit(count, submitted);
        for (unsigned slot = 0; slot < count; ++slot) {
            const read_target& t = targets[first + slot];
            if (t.size == 0) continue;
            long r = slots[slot];
            if (r == refused) {
                r = recv_now(t);
                ++calls;
            }
            results[first + slot] = r;
        }
        first = last;
    }
    return calls;
}

int io_batch::send_round() noexcept {
    sending_.swap(queued_);
    queued_.clear();
    int calls = 0;
    if (sending_.size() == 1) {
        // One send: a ring buys nothing for it (load/io_batch_cost --pairs 1: 25% dearer).
        const queued q = sending_.front();
        long result = 0;
        if (q.owner != nullptr) {
            const output out = q.calls->pending(q.owner);
            std::size_t asked = 0;
            if (out.fd >= 0 && out.size != 0) {
                result = send_now(out);
                asked = out.size;
                ++calls;
            }
            q.calls->sent(q.owner, result, asked);
        }
        sending_.clear();
        return calls;
    }
    const std::vector<long>& results = ring_->results;
    for (std::size_t first = 0; first < sending_.size();) {
        const std::size_t last = std::min(sending_.size(), first + ring_entries);
        const auto count = static_cast<unsigned>(last - first);
        unsigned submitted = 0;
        ++ring_->generation;
        for (std::size_t i = first; i < last; ++i) {
            long& result = ring_->results[i - first];
            result = 0; // nothing to send: told 0
            ring_->prepared[i - first] = nullptr;
            ring_->asked[i - first] = 0;
            const queued& q = sending_[i];
            if (q.owner == nullptr) continue;
            const output out = q.calls->pending(q.owner);
            if (out.fd < 0 || out.size == 0) continue;
            ring_->asked[i - first] = out.size;
            io_uring_sqe* sqe = io_uring_get_sqe(&ring_->uring);
            if (sqe == nullptr) { // the queue is full (no-ops left by a refusal)
                result = refused;
                continue;
            }
            io_uring_prep_send(sqe, out.fd, out.data, out.size, MSG_DONTWAIT | MSG_NOSIGNAL);
            io_uring_sqe_set_data64(sqe, tag(ring_->generation, static_cast<unsigned>(i - first)));
            ring_->prepared[i - first] = sqe;
            result = unanswered;
            ++submitted;
        }
        if (submitted != 0) calls += submit(count, submitted);
        for (std::size_t i = first; i < last; ++i) {
            long& result = ring_->results[i - first];
            if (result != refused || sending_[i].owner == nullptr) continue;
            result = send_now(sending_[i].calls->pending(sending_[i].owner));
            ++calls;
        }
        // Told in order; an owner closed by an earlier one's news was taken out (remove()).
        for (std::size_t i = first; i < last; ++i) {
            const queued q = sending_[i];
            if (q.owner != nullptr)
                q.calls->sent(q.owner, results[i - first], ring_->asked[i - first]);
        }
        first = last;
    }
    sending_.clear();
    return calls;
}

} // namespace tarry::net

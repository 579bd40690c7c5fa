#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tarry::net {

/// The socket calls of one turn of a worker's loop, made in one system call each way.
///
/// A proxied request costs four socket calls (a recv and a send on each side), a plain one two,
/// and on this project's machines (a paravirtualized guest, page-table isolation on) entering
/// the kernel costs more than the TCP work a small call does: a 100-byte recv or send on
/// loopback takes about 2.4 us as a call of its own and 0.8 us inside a batch
/// (load/io_batch_cost; load/README.md, "Socket calls in batches").
///
/// Reads: as the poller takes a batch of events, every plain client connection that waits for
/// input says where its next bytes go, and recv_all() receives into all of them in one
/// io_uring_enter; each connection then takes its answer where its own recv would have.
///
/// Sends: an owner with bytes to send does not send them: it asks for a place in the batch, and
/// when the turn's events (or the handlers posted in it) are done, go() takes every owner's bytes
/// as they are then, sends them in one io_uring_enter, and tells each owner how its send went.
///
/// Every call carries MSG_DONTWAIT, so the kernel makes it at once (what there is or what fits,
/// or EAGAIN) and never parks it: when io_uring_enter returns, every answer is in, and no buffer
/// is touched by the kernel after it. Nothing is left in flight, so nothing outlives its owner.
///
/// liburing (Debian's liburing2) drives the ring. Without io_uring (an old kernel, a sandbox
/// that forbids it, or TARRY_IO_URING=0 in the environment, as libuv's UV_USE_IO_URING) open()
/// gives nothing and owners make their calls as before, one system call each.
class io_batch {
public:
    /// What an owner has to send, asked for when the batch goes out (so appends made since it
    /// asked are included, and a buffer that moved is read where it is now). fd < 0 or size 0:
    /// nothing (it closed, or sent it some other way).
    struct output {
        int fd = -1;
        const char* data = nullptr;
        std::size_t size = 0;
    };
    /// The owner's side: `owner` is what was added.
    struct owner_calls {
        output (*pending)(void* owner) noexcept;
        /// The send's result (bytes sent, or -errno) for the `asked` bytes pending() gave (fewer
        /// sent than asked: the socket is full; the owner may have more by now, added since).
        void (*sent)(void* owner, long result, std::size_t asked) noexcept;
    };

    /// A ring for this thread, or nothing when io_uring cannot be had.
    static std::unique_ptr<io_batch> open();
    ~io_batch();
    io_batch(const io_batch&) = delete;
    io_batch& operator=(const io_batch&) = delete;

    /// Where an owner's next bytes go (size 0: it reads nothing now).
    struct read_target {
        int fd = -1;
        char* data = nullptr;
        std::size_t size = 0;
    };
    /// Receives into every target at once (MSG_DONTWAIT): results[i] is recv(2)'s answer for
    /// targets[i] (bytes, 0 at EOF, or -errno), untouched where size is 0. Returns the system
    /// calls made.
    int recv_all(const read_target* targets, long* results, std::size_t n) noexcept;

    /// Queues `owner` (once: the caller remembers that it did) for the next go().
    void add(void* owner, const owner_calls& calls);
    /// Takes `owner` out again (it is closing, and may be freed before go()).
    void remove(const void* owner) noexcept;
    [[nodiscard]] bool empty() const noexcept { return queued_.empty(); }

    /// Sends what every queued owner has, then tells each; owners queued by those calls go out
    /// too, in further rounds (each one system call). Returns the system calls made.
    int go() noexcept;

private:
    struct queued {
        void* owner;
        const owner_calls* calls;
    };
    struct ring;

    explicit io_batch(std::unique_ptr<ring> r);
    int send_round() noexcept;
    /// Makes the `submitted` prepared calls of slots [0, count): every slot answered on return
    /// (its result, or `refused`: the caller makes that call itself).
    int submit(unsigned count, unsigned submitted) noexcept;

    std::unique_ptr<ring> ring_;
    std::vector<queued> queued_;
    std::vector<queued> sending_; ///< the round going out (owners are told from here)
};

} // namespace tarry::net

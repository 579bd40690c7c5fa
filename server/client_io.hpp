#pragma once

#include "close_reason.hpp"
#include "connection_context.hpp"
#include <tarry/net/io_batch.hpp>
#include <tarry/net/poller.hpp>

#include <tarry/http/session.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tarry::server {

class connection;

/// What a connection holds only while it has a request in progress: taken from a per-thread
/// free list when bytes arrive, given back when the connection goes idle, so that an idle
/// keep-alive connection is the connection object alone.
struct io_state {
    std::string in;                   ///< request bytes: in_len of them, from the start
    std::string out;                  ///< queued responses, written from out_off
    char peer[INET6_ADDRSTRLEN] = {}; ///< the client's address as text, once asked; "" before
    timeouts::clock::time_point phase_start{};   ///< when a phase with a total began
    timeouts::clock::time_point request_start{}; ///< the first byte of the request in progress
    timeouts::clock::time_point written_at{};    ///< the last response's end, when just measured
    std::uint32_t measured = 0;                  ///< session requests() whose duration is counted
    std::uint32_t in_len = 0;
    std::uint32_t out_off = 0;
};

/// How a read went, whoever made the call (the connection itself, or the worker's batch of
/// reads): the input's bookkeeping is done, this says what the connection does next.
enum class read_status : std::uint8_t {
    got,    ///< bytes came (in_len counts them), or the peer's end did (peer_eof())
    none,   ///< nothing now: the socket said EAGAIN (readable() is false) or EINTR
    failed, ///< the socket failed: the connection is closed
};

/// How a send went, whoever made the call (the connection itself, or the worker's batch of
/// sends): the output's bookkeeping is done, this says what the connection does next.
enum class send_status : std::uint8_t {
    all,     ///< everything queued went out; the output is empty again
    blocked, ///< the socket is full (writable() is false): wait for its output edge
    again,   ///< more to send now: interrupted, or output was queued while the batch sent
    failed,  ///< the socket failed: the connection is closed
    queued,  ///< (write_pending() only) the worker's batch of sends has it
};

/// How a pass of sendfile(2) went.
enum class file_status : std::uint8_t {
    done,    ///< the whole file body is sent
    blocked, ///< the socket is full (writable() is false): wait for its output edge
    yielded, ///< a pass's worth went and the socket still takes more: come back after the others
    failed,  ///< the socket failed or the file shrank: the connection is closed
};

/// The client's side of a connection: its socket and how bytes cross it, and nothing of
/// phases, timeouts or protocols.
///
/// Readiness is tracked as edge-triggered epoll asks (readable_ and writable_ set by an edge,
/// cleared when a call says EAGAIN or a read comes back short). Bytes cross in one of three
/// ways: a plain recv(2)/send(2) of the connection's own; the same calls made for it by the
/// worker's batch (one io_uring_enter for a batch's reads, one for its sends: net/io_batch),
/// whose results come back through the trampolines below; or TLS, whose records go through
/// tls::stream on its own calls. Either way a read's result is taken by took_read() and a
/// send's by took_send(), the one place each is interpreted.
///
/// The buffers (io_state) come from a per-thread free list while a request is in progress and
/// go back when the connection is idle. The TLS state lives beside the connection in the
/// worker's table (connection_context::tls), found by descriptor: a plain connection pays
/// nothing for it.
///
/// A connection is a client_io (its base: no pointer back), so the trampolines reach the
/// connection by a cast, and the connection's own fields pack around this one's.
class client_io {
public:
    [[nodiscard]] int fd() const noexcept { return fd_; }
    /// Whether the connection speaks TLS (every byte goes through tls_stream()).
    [[nodiscard]] bool tls() const noexcept { return tls_; }
    /// Whether a response of its waits in the worker's batch of sends (its phase and timeout
    /// are decided when the batch says how the send went): never closed as idle meanwhile.
    [[nodiscard]] bool sending() const noexcept { return sending_; }
    /// Whether bytes wait in its socket that it has not read yet (one system call).
    [[nodiscard]] bool input_waiting() const noexcept;

    /// Frees the buffers this thread keeps for reuse (after a flood).
    static void release_kept() noexcept;

    /// The poller's reads ahead for connections: a batch's reads in one system call.
    static const net::poller::tagged_reads reads;
    /// The batch's read for this connection landed in its buffer (result > 0: bytes).
    static void read_landed(void* c, long result) noexcept;
    /// The poller's handler for its tagged owners, which are all connections.
    static void on_poll(void* c, std::uint32_t events) noexcept;

protected:
    client_io(const connection_context& ctx, int fd, bool tls) noexcept
        : ctx_(ctx), fd_(fd), tls_(tls), handshaking_(tls) {}
    client_io(const client_io&) = delete;
    client_io& operator=(const client_io&) = delete;
    ~client_io() = default;

    /// Readiness edges: what they say is remembered until a call says otherwise.
    void note(std::uint32_t events) noexcept {
        if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) readable_ = true;
        // After a hang-up no edge will ever come again: read until recv reports it.
        if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) hung_up_ = true;
        if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) writable_ = true;
    }

    /// The request in progress's buffers, taken now if the connection was idle.
    io_state& io();
    [[nodiscard]] std::uint32_t in_len() const noexcept { return io_ ? io_->in_len : 0; }
    /// Output is queued and not all written.
    [[nodiscard]] bool output_waiting() const noexcept {
        return io_ && io_->out_off < io_->out.size();
    }
    /// Gives the buffers back to the free list if nothing waits in them (`closing`: always).
    /// Returns the bytes they held when closing (for the worker's trimmer), else 0.
    std::size_t release_buffers(bool closing) noexcept;

    /// Reads once into the input buffer (growing it for a long header, up to in_buffer_bytes).
    read_status read_some();
    /// Looks at up to `n` bytes waiting in the socket without taking them, into `p`: how many,
    /// 0 at the peer's end, -1 when none is there yet (readable() is then false) or the socket
    /// failed (the connection is then closed). For a PROXY header before a ClientHello: the TLS
    /// stream reads the socket itself, so the header is taken out alone (take_peeked()).
    ssize_t peek_some(char* p, std::size_t n) noexcept;
    /// Takes the first `n` bytes a peek saw out of the socket (into `p`): whether they came
    /// (if not, the connection is closed).
    bool take_peeked(char* p, std::size_t n) noexcept;
    /// Reads and drops what waits in the socket, up to a PROXY header's worth: closed after
    /// that, the connection ends with a FIN, as after a plain listener's read, not a reset.
    void drop_waiting() noexcept;
    /// Writes the queued output, or hands it to the worker's batch of sends: then it returns
    /// `queued`, sending() is true, and the batch's answer comes to the connection's sent().
    /// Returns `queued` too while a send is in the batch already. Throws std::bad_alloc.
    send_status write_pending();
    /// A file body without TLS: sendfile(2), at most a pass's worth in one call of this.
    file_status sendfile_some(http::file_body& f) noexcept;
    /// A file body over TLS (no sendfile through TLS without the kernel's): its next piece read
    /// into the empty output, sent like any response bytes. False when the file failed (the
    /// connection is closed).
    bool stage_file(http::file_body& f);

    /// The end of our output: close_notify first on TLS.
    void shutdown_output() noexcept;
    /// TCP_NODELAY, once.
    void nodelay() noexcept;
    /// Closes the socket (it leaves the poller's set), saying close_notify first on TLS when
    /// `orderly` (an orderly close says so, as nginx does); the TLS state goes with it.
    void close_socket(bool orderly) noexcept;

    /// The TLS state (only while tls()).
    [[nodiscard]] tls::stream& tls_stream() const noexcept { return ctx_.tls.at(fd_); }
    /// TLS was not what came: the connection goes on in plain text (nginx's 400 to plain HTTP
    /// on a TLS port).
    void drop_tls() noexcept;

    // Ordered for size together with the connection's fields (see its layout note).
    std::unique_ptr<io_state> io_; ///< only while a request is in progress
    const connection_context& ctx_;
    int fd_;
    bool readable_ : 1 = false;    ///< an input edge arrived and recv has not said EAGAIN since
    bool writable_ : 1 = true;     ///< send has not said EAGAIN since the last output edge
    bool want_read_ : 1 = false;   ///< the connection waits for an input edge
    bool want_write_ : 1 = false;  ///< the connection waits for an output edge
    bool peer_eof_ : 1 = false;    ///< the peer's end was read
    bool hung_up_ : 1 = false;     ///< the peer shut down or reset: no further edge will come
    bool nodelay_ : 1 = false;     ///< TCP_NODELAY is set (from the first keep-alive or file on)
    bool tls_ : 1 = false;         ///< TLS: every byte goes through tls_stream()
    bool handshaking_ : 1 = false; ///< TLS: the handshake is not done yet
    bool sending_ : 1 = false;     ///< its output waits in the worker's batch of sends

    // The socket, or TLS over it: the system calls' contract either way. The plain path stays a
    // bare system call inlined in its caller; TLS goes out of line.
    ssize_t recv_some(char* p, std::size_t n) noexcept {
        if (tls_) [[unlikely]]
            return tls_recv(p, n);
        return ::recv(fd_, p, n, 0);
    }
    ssize_t send_some(const char* p, std::size_t n) noexcept {
        if (tls_) [[unlikely]]
            return tls_send(p, n);
        return ::send(fd_, p, n, MSG_NOSIGNAL);
    }
    [[gnu::noinline]] ssize_t tls_recv(char* p, std::size_t n) noexcept;
    [[gnu::noinline]] ssize_t tls_send(const char* p, std::size_t n) noexcept;

    /// The one place a read's result is taken: `result` bytes (already counted in in_len), 0
    /// at the peer's end, or -errno; `room` what the call could have read.
    read_status took_read(long result, std::size_t room) noexcept;
    /// The one place a send's result is taken: `result` bytes or -errno, of `asked`.
    send_status took_send(long result, std::size_t asked) noexcept;

private:
    [[nodiscard]] connection& owner() noexcept;
    /// A failed call: the connection closes with the reason the error gives.
    void failed(int err) noexcept;

    // The worker's batches: where a read goes and what it brought; what is to be sent and how
    // it went.
    static net::io_batch::read_target read_target(void* c, std::uint32_t events) noexcept;
    static void read_done(void* c, std::uint32_t events, long result) noexcept;
    static net::io_batch::output batched_output(void* c) noexcept;
    static void batched_sent(void* c, long result, std::size_t asked) noexcept;
    static const net::io_batch::owner_calls batch_calls;
};

} // namespace tarry::server

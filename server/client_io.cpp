#include "client_io.hpp"

#include "connection.hpp"
#include "proxy_protocol.hpp"

#include <netinet/tcp.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace tarry::server {
namespace {

// A free list of the buffers of connections that are mid-request. Bounded, so a burst does not
// pin memory for ever.
using io_states = http::recycler<io_state, 256>;

constexpr std::size_t max_sendfile_chunk = 256 << 10;
/// A read buffer starts this small and grows, doubling, only for a header that needs it (as
/// nginx's client_header_buffer_size, then large buffers): a flood of connections that each
/// sent a byte costs a kilobyte apiece, not a whole header's worth.
constexpr std::size_t initial_in_bytes = 1024;
/// Bytes of a file body sent in one pass before yielding to the worker's other connections: on
/// loopback a fresh socket accepts megabytes, and sending them all at once stalls everyone else.
constexpr std::uint64_t file_bytes_per_pass = 1 << 20;
/// An HTTP/2 frame of SETTINGS_MAX_FRAME_SIZE's default (16 KB) and its 9-byte header.
constexpr std::size_t h2_in_bytes = (16 << 10) + 9;
/// The most a tunnel's read buffer grows to during a burst.
constexpr std::size_t tunnel_in_bytes = 64 << 10;
/// An output buffer larger than this is freed, not kept, when the connection goes quiet.
constexpr std::size_t kept_out_bytes = 16 << 10;
/// A file over TLS is read into the output this much at a time (four full records).
constexpr std::size_t tls_file_piece = 64 << 10;

bool is_reset(int err) noexcept {
    return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT;
}

} // namespace

connection& client_io::owner() noexcept {
    return static_cast<connection&>(*this);
}

void client_io::on_poll(void* c, std::uint32_t events) noexcept {
    static_cast<connection*>(c)->on_events(events);
}

io_state& client_io::io() {
    if (!io_) {
        io_ = io_states::take();
        io_->request_start = ctx_.poll.reaped(); // the first byte of a request is here
        io_->measured = owner().session_.requests();
        io_->written_at = {};
    }
    return *io_;
}

void client_io::release_kept() noexcept {
    io_states::release();
}

std::size_t client_io::release_buffers(bool closing) noexcept {
    if (!io_) return 0;
    if (closing) {
        const std::size_t freed = io_->in.capacity() + io_->out.capacity();
        io_.reset();
        return freed;
    }
    io_state& io = *io_;
    if (io.in_len != 0 || io.out_off != 0 || !io.out.empty()) return 0; // still busy
    io.peer[0] = '\0';
    // A buffer grown for one long header (or a burst) gives the memory back; the next request
    // starts small. So does an output buffer a large response grew, or the free list would
    // pin it.
    if (io.in.size() != initial_in_bytes) std::string().swap(io.in);
    if (io.out.capacity() > kept_out_bytes) std::string().swap(io.out);
    try {
        io_states::give(std::move(io_));
    } catch (...) {
        io_.reset();
    }
    return 0;
}

// Reads: the connection's own call, or the batch's; took_read() takes the result of either.

read_status client_io::read_some() {
    io_state& io = this->io();
    if (io.in.size() < initial_in_bytes) io.in.resize(initial_in_bytes);
    if (io.in_len == io.in.size()) {
        // A header (or chunk header) longer than the buffer: grow it, up to a whole header.
        // HTTP/2 needs a whole frame of the size it advertised (DATA alone comes in pieces).
        const std::size_t limit =
            owner().h2_ ? std::max<std::size_t>(ctx_.settings.in_buffer_bytes, h2_in_bytes)
                        : ctx_.settings.in_buffer_bytes;
        if (io.in.size() >= limit) {
            // Cannot happen: the session refuses a header (or trailer) larger than
            // max_header_bytes, which is below the limit. Never wait on a full buffer, which
            // would stall the connection until a timeout.
            owner().close(close_reason::error);
            return read_status::failed;
        }
        io.in.resize(std::min(limit, io.in.size() * 2));
    }
    const std::size_t room = io.in.size() - io.in_len;
    for (;;) {
        const ssize_t n = recv_some(io.in.data() + io.in_len, room);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
            io.in_len += static_cast<std::uint32_t>(n);
            // A tunnel's bytes are taken as they come: one that fills the buffer is a burst, and
            // the next read gets twice the room (given back when the tunnel goes quiet).
            if (static_cast<std::size_t>(n) == room && owner().session_.tunneling() &&
                io.in.size() < tunnel_in_bytes)
                io.in.resize(io.in.size() * 2);
        }
        return took_read(n >= 0 ? n : -static_cast<long>(errno), room);
    }
}

read_status client_io::took_read(long result, std::size_t room) noexcept {
    if (result > 0) {
        ctx_.metrics.received_bytes.add(result);
        // A short read emptied the socket: the next bytes raise a new edge (unless the peer
        // hung up, which raises none: then read on until recv says so; nor does an end or an
        // error TLS read behind these bytes, such as a close_notify in the request's segment).
        if (static_cast<std::size_t>(result) < room && !hung_up_ &&
            !(tls_ && tls_stream().end_waiting()))
            readable_ = false;
        return read_status::got;
    }
    if (result == 0) {
        peer_eof_ = true;
        return read_status::got;
    }
    if (result == -EAGAIN || result == -EWOULDBLOCK) {
        readable_ = false;
        return read_status::none;
    }
    if (result == -EINTR) return read_status::none; // still readable: the next drive reads
    failed(static_cast<int>(-result));
    return read_status::failed;
}

ssize_t client_io::peek_some(char* p, std::size_t n) noexcept {
    for (;;) {
        const ssize_t got = ::recv(fd_, p, n, MSG_PEEK);
        if (got >= 0) return got;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            readable_ = false;
        else
            failed(errno);
        return -1;
    }
}

bool client_io::take_peeked(char* p, std::size_t n) noexcept {
    ssize_t got = 0;
    do
        got = ::recv(fd_, p, n, 0);
    while (got < 0 && errno == EINTR);
    if (got == static_cast<ssize_t>(n)) {
        ctx_.metrics.received_bytes.add(got);
        return true;
    }
    // (The kernel keeps what a peek saw until it is read: only a reset in between comes here.)
    owner().close(got < 0 && is_reset(errno) ? close_reason::client_close : close_reason::error);
    return false;
}

void client_io::drop_waiting() noexcept {
    std::array<char, max_proxy_header_bytes> bytes;
    ssize_t got = 0;
    do
        got = ::recv(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    if (got > 0) ctx_.metrics.received_bytes.add(got);
}

const net::poller::tagged_reads client_io::reads{&client_io::read_target, &client_io::read_landed,
                                                 &client_io::read_done};

net::io_batch::read_target client_io::read_target(void* c, std::uint32_t events) noexcept {
    // Only the plain case: a connection that waits for input and holds none (so its first
    // recv in drive() would be this one, at the start of its buffer). A TLS record, a tunnel's
    // growing buffer, a lingering close and bytes held already read as before.
    auto& self = *static_cast<connection*>(c);
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0 || !self.reads_ahead())
        return {};
    try {
        io_state& io = self.io();
        if (io.in.size() < initial_in_bytes) io.in.resize(initial_in_bytes);
        return {self.fd_, io.in.data(), io.in.size()};
    } catch (...) {
        return {}; // out of memory: its own read fails the same way
    }
}

void client_io::read_landed(void* c, long result) noexcept {
    auto& self = *static_cast<connection*>(c);
    if (result > 0 && !self.closed()) self.io_->in_len = static_cast<std::uint32_t>(result);
}

void client_io::read_done(void* c, std::uint32_t events, long result) noexcept {
    auto& self = *static_cast<connection*>(c);
    self.note(events);
    if (self.closed()) return; // closed by an earlier event of the batch: the bytes went with it
    // read_landed() counted the bytes in; the batch read from the start of the buffer.
    const std::size_t room = self.io_ ? self.io_->in.size() : 0;
    self.on_read(self.took_read(result, room));
}

// Sends: the connection's own call, or the batch's; took_send() takes the result of either.

send_status client_io::write_pending() {
    if (sending_) return send_status::queued; // in the batch already: it says how it went
    if (!writable_) return send_status::blocked;
    // Plain output joins the worker's batch of sends; a tunnel's (two directions at once) and
    // TLS records go in a call of their own.
    if (ctx_.poll.batching() && !tls_ && !owner().session_.tunneling()) [[likely]] {
        ctx_.poll.defer_send(&owner(), batch_calls); // (may throw: then not marked as sending)
        sending_ = true;
        return send_status::queued;
    }
    io_state& io = *io_;
    for (;;) {
        const std::size_t asked = io.out.size() - io.out_off;
        const ssize_t n = send_some(io.out.data() + io.out_off, asked);
        const send_status s = took_send(n >= 0 ? n : -static_cast<long>(errno), asked);
        if (s != send_status::again) return s;
    }
}

send_status client_io::took_send(long result, std::size_t asked) noexcept {
    if (result >= 0) {
        io_state& io = *io_;
        io.out_off += static_cast<std::uint32_t>(result);
        ctx_.metrics.sent_bytes.add(result);
        if (static_cast<std::size_t>(result) < asked) { // the send buffer is full
            writable_ = false;
            return send_status::blocked;
        }
        // All of it went, and more was added since the batch asked (another owner's news, such
        // as a proxy's 502 for this client): it goes in the next batch.
        if (io.out_off < io.out.size()) return send_status::again;
        io.out.clear();
        io.out_off = 0;
        return send_status::all;
    }
    if (result == -EAGAIN || result == -EWOULDBLOCK) {
        writable_ = false;
        return send_status::blocked;
    }
    if (result == -EINTR) return send_status::again;
    failed(static_cast<int>(-result));
    return send_status::failed;
}

const net::io_batch::owner_calls client_io::batch_calls{&client_io::batched_output,
                                                        &client_io::batched_sent};

net::io_batch::output client_io::batched_output(void* c) noexcept {
    const auto& self = *static_cast<connection*>(c);
    if (self.closed() || !self.io_) return {};
    const io_state& io = *self.io_;
    return {self.fd_, io.out.data() + io.out_off, io.out.size() - io.out_off};
}

void client_io::batched_sent(void* c, long result, std::size_t asked) noexcept {
    auto& self = *static_cast<connection*>(c);
    self.sending_ = false;
    if (self.closed()) return;
    self.on_sent(self.took_send(result, asked));
}

void client_io::failed(int err) noexcept {
    owner().close(is_reset(err)   ? close_reason::client_close
                  : err == EPROTO ? close_reason::tls
                                  : close_reason::error);
}

ssize_t client_io::tls_recv(char* p, std::size_t n) noexcept {
    return tls_stream().recv(fd_, p, n);
}

ssize_t client_io::tls_send(const char* p, std::size_t n) noexcept {
    return tls_stream().send(fd_, p, n);
}

// File bodies.

file_status client_io::sendfile_some(http::file_body& f) noexcept {
    std::uint64_t sent = 0;
    while (f.remaining != 0 && writable_) {
        // Still writable, so no edge will come: the caller comes back through the loop's queue.
        if (sent >= file_bytes_per_pass) return file_status::yielded;
        auto offset = static_cast<off_t>(f.offset);
        const ssize_t n = ::sendfile(fd_, f.fd.get(), &offset,
                                     std::min<std::uint64_t>(f.remaining, max_sendfile_chunk));
        if (n > 0) {
            f.offset += static_cast<std::uint64_t>(n);
            f.remaining -= static_cast<std::uint64_t>(n);
            sent += static_cast<std::uint64_t>(n);
            ctx_.metrics.sent_bytes.add(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            writable_ = false;
            break;
        }
        // The file shrank (n == 0) or the socket failed: the length promised cannot be kept.
        owner().close(n < 0 && is_reset(errno) ? close_reason::client_close : close_reason::error);
        return file_status::failed;
    }
    return f.remaining != 0 ? file_status::blocked : file_status::done;
}

bool client_io::stage_file(http::file_body& f) {
    io_state& io = this->io(); // its output is empty: what was queued went first
    const std::size_t piece = std::min<std::uint64_t>(f.remaining, tls_file_piece);
    io.out.resize(piece);
    for (;;) {
        const ssize_t n = ::pread(f.fd.get(), io.out.data(), piece, static_cast<off_t>(f.offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            io.out.clear();
            owner().close(close_reason::error); // the file shrank: the length cannot be kept
            return false;
        }
        io.out.resize(static_cast<std::size_t>(n));
        io.out_off = 0;
        f.offset += static_cast<std::uint64_t>(n);
        f.remaining -= static_cast<std::uint64_t>(n);
        return true;
    }
}

// The socket itself.

bool client_io::input_waiting() const noexcept {
    char byte = 0;
    return in_len() != 0 || (tls_ && !handshaking_ && tls_stream().plaintext_waiting()) ||
           ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

void client_io::nodelay() noexcept {
    // As nginx does: only a connection that is kept alive needs Nagle off (its next small
    // response must not wait for an ACK of the last); a one-request connection is flushed by
    // close() anyway, so it saves the system call.
    if (nodelay_) return;
    nodelay_ = true;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void client_io::shutdown_output() noexcept {
    if (tls_ && !handshaking_) tls_stream().close_notify(fd_);
    ::shutdown(fd_, SHUT_WR);
}

void client_io::drop_tls() noexcept {
    ctx_.tls.erase(fd_);
    tls_ = false;
    handshaking_ = false;
}

void client_io::close_socket(bool orderly) noexcept {
    if (tls_) {
        if (tls::stream* s = ctx_.tls.find(fd_); s != nullptr) { // null: never started
            if (!handshaking_) {
                // An orderly close says so (close_notify), and so does the answer to the
                // client's own close_notify (RFC 8446, 6.1; a reset only makes it fail
                // quietly); after an error (a fatal alert sent) the stream sends nothing more.
                if (orderly) s->close_notify(fd_);
                worker_metrics::tls_counters& m = ctx_.metrics.tls;
                m.open[s->suite()].add(-1);
                if (s->own_records()) m.own_records.add(-1);
            }
            ctx_.tls.erase(fd_);
        }
    }
    ctx_.poll.close(fd_); // leaves the poller's set first (see poller::close)
}

} // namespace tarry::server

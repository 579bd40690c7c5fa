#include "upstream_connection.hpp"

#include "upstream_pool.hpp"

#include <tarry/tls/client_context.hpp>
#include <tarry/tls/client_stream.hpp>
#include <tarry/tls/stream.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tarry::upstream {
namespace {

using buffer_type = std::array<char, upstream_connection::read_size>;

/// The thread's read buffer: a read is consumed before the next one on this thread starts.
thread_local std::unique_ptr<buffer_type> thread_buffer;
/// Where the bytes being delivered are (the thread's buffer, or the poller's lent space).
thread_local const char* delivered = nullptr;

/// The read the poller made for `owner`, while its on_read_ahead() runs and run() has not taken
/// it yet (one at a time on a thread: the poller's events are dispatched one by one).
struct ahead_read {
    const upstream_connection* owner = nullptr;
    const char* data = nullptr;
    std::size_t asked = 0;
    long result = 0;
};
thread_local ahead_read ahead;

// What a pooled connection costs besides its socket and its shared_ptr block (and, over TLS,
// its client_stream: two record keys once idle): no buffer (see load/README.md, "The proxy's
// upstream connections on the worker's poller").
static_assert(sizeof(upstream_connection) <= 232);

boost::system::error_code error_of(int error) noexcept {
    return {error, boost::system::system_category()};
}

/// A TLS handshake that failed (the reason is in tls_failure_text).
class tls_category_type final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "tarry.upstream.tls"; }
    std::string message(int) const override { return "TLS handshake failed"; }
};
const tls_category_type tls_category;

/// Why the last handshake on this thread failed: read by the connection's user within its
/// on_connected.
thread_local std::string tls_failure_text;

} // namespace

upstream_connection::upstream_connection(boost::asio::io_context& io, net::poller& poll,
                                         timeouts::timeout_registry& registry,
                                         std::weak_ptr<upstream_pool> pool)
    : io_(io), poll_(poll), registry_(registry), pool_(std::move(pool)),
      entry_(timeouts::member_callback<&upstream_connection::on_expire>, this) {}

upstream_connection::~upstream_connection() {
    close();
}

void upstream_connection::connect(const endpoint_type& to, const tls_target* tls) {
    connecting_ = true;
    const int family = to.protocol().family();
    fd_ = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        fail_soon(errno);
        return;
    }
    if (family == AF_INET || family == AF_INET6) {
        // A request's head and its body may be two sends: Nagle would hold the second for the
        // upstream's delayed ACK (40 ms).
        const int on = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    if (!poll_.add(fd_, *this, EPOLLIN | EPOLLOUT | EPOLLRDHUP)) {
        const int error = errno;
        ::close(fd_);
        fd_ = -1;
        fail_soon(error);
        return;
    }
    if (tls != nullptr) {
        try {
            tls_ = std::make_unique<tls::client_stream>();
        } catch (const std::bad_alloc&) {
        }
        if (!tls_ || !tls_->start(*tls->context, fd_, tls->name, tls->slot)) {
            fail_soon(ENOMEM);
            return;
        }
    }
    if (::connect(fd_, to.data(), static_cast<socklen_t>(to.size())) == 0) {
        writable_ = true; // connected at once (a unix socket): reported from a posted run()
        kick();
    } else if (errno != EINPROGRESS && errno != EINTR) {
        fail_soon(errno); // else the output edge says when
    }
}

bool upstream_connection::write(std::string_view bytes) {
    out_ = bytes.data();
    out_left_ = bytes.size();
    write_owed_ = true;
    if (fd_ < 0) {
        fail_soon(EBADF);
        return false;
    }
    if (!writable_) return false;
    if (poll_.batching() && tls_ == nullptr) {
        // With the worker's other sends, in one system call; on_written says how it went.
        if (!deferred_) {
            poll_.defer_send(this, batch_calls); // (may throw: then not marked as queued)
            deferred_ = true;
        }
        return false;
    }
    switch (flush()) {
    case sent::all:
        write_owed_ = false;
        return true;
    case sent::failed:
        if (!running_) kick();
        return false;
    case sent::wait:
        return false;
    }
    return false;
}

upstream_connection::sent upstream_connection::flush() noexcept {
    while (out_left_ != 0) {
        const ssize_t n = tls_ != nullptr ? tls_->send(out_, out_left_)
                                          : ::send(fd_, out_, out_left_, MSG_NOSIGNAL);
        if (n >= 0) {
            out_ += n;
            out_left_ -= static_cast<std::size_t>(n);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            writable_ = false;
            return sent::wait;
        } else if (errno != EINTR) {
            error_ = errno;
            return sent::failed;
        }
    }
    return sent::all;
}

const net::io_batch::owner_calls upstream_connection::batch_calls{
    &upstream_connection::batched_output, &upstream_connection::batched_sent};

net::io_batch::output upstream_connection::batched_output(void* c) noexcept {
    const auto* self = static_cast<upstream_connection*>(c);
    return {self->fd_, self->out_, self->out_left_};
}

void upstream_connection::batched_sent(void* c, long result, std::size_t asked) noexcept {
    auto* self = static_cast<upstream_connection*>(c);
    self->deferred_ = false;
    if (self->fd_ < 0) return;
    if (result >= 0) {
        self->out_ += result;
        self->out_left_ -= static_cast<std::size_t>(result);
        if (static_cast<std::size_t>(result) < asked)
            self->writable_ = false; // the socket is full: the rest at the output edge
    } else if (result == -EAGAIN || result == -EWOULDBLOCK) {
        self->writable_ = false;
    } else if (result != -EINTR) {
        self->error_ = static_cast<int>(-result);
    }
    self->run(); // on_written, when the write is whole or failed
}

void upstream_connection::read(std::size_t most) {
    if (fd_ < 0 || want_ != 0) return;
    want_ = std::clamp<std::size_t>(most, 1, read_size);
    if (readable_ && !running_) kick(); // bytes wait already: no edge will come for them
}

void upstream_connection::shutdown_send() noexcept {
    if (fd_ < 0) return;
    if (tls_ != nullptr) tls_->close_notify(); // the end of our output, with the FIN
    ::shutdown(fd_, SHUT_WR);
}

void upstream_connection::to_tunnel() noexcept {
    if (tls_ != nullptr) tls_->settled();
}

bool upstream_connection::own_records() const noexcept {
    return tls_ != nullptr && tls_->own_records();
}

const char* upstream_connection::buffer() const noexcept {
    return delivered;
}

bool upstream_connection::quiet() noexcept {
    want_ = 0;
    if (fd_ < 0 || hung_up_ || error_ != 0) return false;
    if (tls_ != nullptr) {
        if (tls_->plaintext_waiting()) return false; // bytes no one asked for
        // Records that came behind the response (a session ticket, a KeyUpdate) are taken, and
        // one cut over segments waits for its rest (its buffer held until then); tarry's own
        // records from here, no buffer held.
        if (readable_) return tls_quiet();
        tls_idle();
        return true;
    }
    if (readable_) {
        // The last read filled what was asked: whether more waits is not known yet.
        char c = 0;
        if (::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0 ||
            (errno != EAGAIN && errno != EWOULDBLOCK))
            return false;
        readable_ = false;
    }
    return true;
}

void upstream_connection::on_events(std::uint32_t events) noexcept {
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) readable_ = true;
    if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) writable_ = true;
    if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) hung_up_ = true;
    run();
}

net::io_batch::read_target upstream_connection::read_ahead(std::uint32_t events) noexcept {
    // The read run() would make for this edge: its user asked for bytes, nothing else comes first.
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0 || want_ == 0 ||
        user_ == nullptr || fd_ < 0 || connecting_ || tls_ != nullptr)
        return {};
    return {fd_, nullptr, want_};
}

void upstream_connection::on_read_ahead(std::uint32_t events, const net::io_batch::read_target& t,
                                        long result) noexcept {
    const auto self = shared_from_this();
    ahead = {this, t.data, t.size, result};
    on_events(events); // run() takes the read where it would have made its own
    if (ahead.owner == this) {
        // Not taken (nobody reads now): bytes or an end that no one asked for, and no read may
        // come after them, so it carries no other request.
        ahead.owner = nullptr;
        if (result != -EAGAIN && result != -EWOULDBLOCK) hung_up_ = true;
    }
}

void upstream_connection::run() noexcept {
    const auto self = shared_from_this(); // a callback may drop every other reference
    running_ = true;
    if (connecting_) {
        if (error_ == 0 && !writable_) {
            running_ = false;
            return;
        }
        connecting_ = false;
        int error = std::exchange(error_, 0);
        if (error == 0 && fd_ >= 0) {
            socklen_t len = sizeof error;
            if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
        }
        if (error == 0 && tls_ != nullptr)
            handshaking_ = true;
        else if (user_ != nullptr)
            user_->on_connected(error_of(error));
    }
    if (handshaking_ && !handshake()) {
        running_ = false;
        return;
    }
    for (;;) {
        if (write_owed_ && !deferred_ && (error_ != 0 || writable_)) {
            const sent s = error_ != 0 ? sent::failed : flush();
            if (s != sent::wait) {
                write_owed_ = false;
                const int error = std::exchange(error_, 0);
                if (user_ != nullptr) user_->on_written(error_of(error));
                continue;
            }
        }
        if (want_ == 0 || !readable_ || user_ == nullptr || fd_ < 0) break;
        long n = 0;
        std::size_t asked = want_;
        if (ahead.owner == this) { // the poller read for it
            ahead.owner = nullptr;
            delivered = ahead.data;
            asked = ahead.asked;
            n = ahead.result;
        } else {
            if (!thread_buffer) {
                try {
                    thread_buffer = std::make_unique<buffer_type>();
                } catch (const std::bad_alloc&) {
                    want_ = 0;
                    user_->on_read(error_of(ENOMEM), 0);
                    continue;
                }
            }
            delivered = thread_buffer->data();
            n = receive(thread_buffer->data(), want_);
        }
        if (n > 0) {
            // Less than asked: the socket is drained (unless the peer's FIN is still to read).
            // Not so over OpenSSL's records: a read returns one record's bytes, more may wait.
            if (static_cast<std::size_t>(n) < asked && !hung_up_ &&
                (tls_ == nullptr || tls_->short_read_drains()))
                readable_ = false;
            want_ = 0;
            user_->on_read({}, static_cast<std::size_t>(n));
        } else if (n == 0) {
            want_ = 0;
            user_->on_read(boost::asio::error::eof, 0);
        } else if (n == -EAGAIN || n == -EWOULDBLOCK) {
            readable_ = false;
        } else if (n != -EINTR) {
            want_ = 0;
            user_->on_read(error_of(static_cast<int>(-n)), 0);
        }
    }
    running_ = false;
    // Idle in its pool: a byte, an EOF or an error all mean it can carry no other request.
    if (user_ == nullptr && fd_ >= 0 && !connecting_ && (readable_ || hung_up_)) {
        if (readable_ && !hung_up_ && tls_ != nullptr && tls_quiet()) return;
        if (auto pool = pool_.lock()) pool->on_idle_event(*this);
    }
}

long upstream_connection::receive(char* to, std::size_t most) noexcept {
    const ssize_t n = tls_ != nullptr ? tls_->recv(to, most) : ::recv(fd_, to, most, 0);
    return n < 0 ? -errno : n;
}

bool upstream_connection::tls_quiet() noexcept {
    // What a TLS server may send an idle connection without asking anything of it (a session
    // ticket, a KeyUpdate, answered here) is taken, and it stays in the pool.
    char c = 0;
    if (tls_->recv(&c, 1) >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    readable_ = false;
    tls_idle();
    return true;
}

void upstream_connection::tls_idle() noexcept {
    tls_->idle(); // tarry's own records from here, no buffer held
    if (tls::client_stream::burst_over()) [[unlikely]] {
        // A burst of new TLS connections went idle in their pools: OpenSSL's objects are freed,
        // their heap resident under the pooled ones until given back.
        tls::stream::release_kept();
        ::malloc_trim(0);
    }
}

bool upstream_connection::handshake() noexcept {
    const tls::step s = tls_->handshake(tls_failure_text);
    if (s == tls::step::want_read) { // the next input edge
        readable_ = false;
        return false;
    }
    if (s == tls::step::want_write) {
        writable_ = false;
        return false;
    }
    handshaking_ = false;
    if (s == tls::step::done) {
        if (auto pool = pool_.lock()) pool->metrics().tls_handshake(tls_->resumed());
        if (user_ != nullptr) user_->on_connected({});
        return true;
    }
    hung_up_ = true; // it carries nothing now
    if (user_ != nullptr) user_->on_connected({1, tls_category});
    return true;
}

bool upstream_connection::tls_failed(const boost::system::error_code& ec) noexcept {
    return ec.category() == tls_category;
}

const std::string& upstream_connection::tls_failure() noexcept {
    return tls_failure_text;
}

void upstream_connection::kick() {
    if (kicked_) return;
    boost::asio::post(io_, [self = shared_from_this()] {
        self->kicked_ = false;
        self->run();
    });
    kicked_ = true; // once queued (a post that throws leaves the next kick() free to try)
}

void upstream_connection::fail_soon(int error) {
    error_ = error;
    if (!running_) kick();
}

void upstream_connection::release_kept() noexcept {
    thread_buffer.reset();
    delivered = nullptr;
}

void upstream_connection::arm(const timeouts::timeout_kind& kind, timeouts::clock::duration d) {
    if (entry_.kind() == &kind && entry_.idle_timeout() == d) {
        touch();
        return;
    }
    registry_.enroll(entry_, kind, d);
}

bool upstream_connection::shed() noexcept {
    if (user_ != nullptr || entry_.kind() != &upstream_kinds::pooled) return false;
    auto pool = pool_.lock();
    return pool && pool->shed(*this);
}

void upstream_connection::close() noexcept {
    disarm();
    want_ = 0;
    write_owed_ = false;
    connecting_ = false;
    if (tls_ != nullptr) {
        // close_notify (one try: nothing waits for the answer) on a connection that carries
        // nothing and never failed.
        if (!handshaking_ && !hung_up_ && error_ == 0 && out_left_ == 0 && fd_ >= 0)
            tls_->close_notify();
        tls_.reset();
    }
    handshaking_ = false;
    error_ = 0;
    if (deferred_) poll_.cancel_send(this);
    deferred_ = false;
    if (ahead.owner == this) ahead.owner = nullptr;
    if (fd_ < 0) return;
    net::poller::forget(*this); // it may be freed before the batch that holds its events ends
    poll_.close(fd_);           // leaves the poller's set first (see poller::close)
    fd_ = -1;
    readable_ = writable_ = hung_up_ = false;
}

void upstream_connection::on_expire() noexcept {
    if (user_ != nullptr) {
        user_->on_timeout();
        return;
    }
    if (auto pool = pool_.lock()) pool->on_idle_expired(*this);
}

} // namespace tarry::upstream

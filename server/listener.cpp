#include "listener.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace tarry::server {

using boost::asio::ip::tcp;

tcp::endpoint endpoint_of(const listen_address& addr) {
    const std::string host = addr.host == "localhost" ? "127.0.0.1" : addr.host;
    boost::system::error_code ec;
    const auto ip =
        host.empty() ? boost::asio::ip::address_v4::any() : boost::asio::ip::make_address(host, ec);
    if (ec) throw std::system_error(ec, "listen address \"" + addr.host + "\"");
    return {ip, addr.port};
}

int probe_bind(const tcp::endpoint& ep) noexcept {
    const int fd = ::socket(ep.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0; // the listener's own socket() will say why
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ep.address().is_v6()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    const int err = ::bind(fd, ep.data(), static_cast<socklen_t>(ep.size())) == 0 ? 0 : errno;
    ::close(fd);
    return err;
}

void refuse_if_taken(const listen_address& addr) {
    if (addr.port == 0) return; // the kernel picks a free one
    // The listeners set SO_REUSEPORT so that the workers share the port, which would let a
    // second tarry (or anything else that sets it) share it too, silently splitting the traffic.
    // A socket without it cannot bind where anything listens (SO_REUSEADDR only overlooks
    // connections in TIME_WAIT): a probe, closed again before the workers bind.
    if (probe_bind(endpoint_of(addr)) == EADDRINUSE)
        throw config_error("listen: " + addr.name() + " is already in use by another process");
}

listener::listener(boost::asio::io_context& io, net::poller& poll, worker_metrics& metrics,
                   accept_target& target, const listen_address& addr)
    : poll_(poll), metrics_(metrics), target_(target), addr_(addr), retry_(io) {
    const tcp::endpoint ep = endpoint_of(addr);
    const std::string where = addr.name();
    const auto fail = [&](const char* what) {
        const int err = errno;
        if (fd_ >= 0) ::close(fd_);
        throw std::system_error(err, std::generic_category(),
                                "cannot listen on " + where + " (" + what + ")");
    };
    fd_ = ::socket(ep.protocol().family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fail("socket");
    const int one = 1;
    if (::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) fail("SO_REUSEADDR");
    if (::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) fail("SO_REUSEPORT");
    if (ep.address().is_v6() && ::setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0)
        fail("IPV6_V6ONLY");
    if (::bind(fd_, ep.data(), static_cast<socklen_t>(ep.size())) != 0) fail("bind");
    if (::listen(fd_, SOMAXCONN) != 0) fail("listen");
}

listener::listener(boost::asio::io_context& io, net::poller& poll, worker_metrics& metrics,
                   accept_target& target, const listen_address& addr,
                   std::shared_ptr<shared_socket> shared)
    : poll_(poll), metrics_(metrics), target_(target), addr_(addr), shared_(std::move(shared)),
      retry_(io) {
    fd_ = ::fcntl(shared_->fd(), F_DUPFD_CLOEXEC, 0);
    if (fd_ < 0)
        throw std::system_error(errno, std::generic_category(),
                                "cannot listen on " + addr.name() + " (dup)");
}

listener::~listener() {
    close();
}

std::optional<tcp::endpoint> listener::local_endpoint() const {
    tcp::endpoint ep;
    socklen_t len = static_cast<socklen_t>(ep.capacity());
    if (fd_ < 0 || ::getsockname(fd_, ep.data(), &len) != 0) return std::nullopt;
    if (ep.data()->sa_family != AF_INET && ep.data()->sa_family != AF_INET6) return std::nullopt;
    ep.resize(len);
    return ep;
}

void listener::start() {
    if (!poll_.add(fd_, *this, shared_ ? EPOLLIN | EPOLLEXCLUSIVE : EPOLLIN))
        throw std::system_error(errno, std::generic_category(), "epoll_ctl");
    // Connections that queued before this are reported too: adding a ready descriptor to an
    // epoll set raises its edge.
}

void listener::close() noexcept {
    if (fd_ < 0) return;
    // A duplicate shares its open file with the other workers' duplicates, so closing it
    // would not take it out of this epoll set: that is done by hand.
    if (shared_) poll_.remove(fd_);
    ::close(fd_); // also leaves the epoll set
    fd_ = -1;
    shared_.reset(); // the last worker to let go closes the socket (and removes its file)
    retry_.cancel();
}

void listener::on_events(std::uint32_t) noexcept {
    if (!paused_) accept_all();
}

void listener::accept_all(bool past_limit) noexcept {
    while (fd_ >= 0) {
        if (target_.at_connection_limit()) {
            // At the limit, make room by reclaiming the oldest idle connection, as nginx does
            // for a connection it has accepted; only for a real newcomer, never ahead of one.
            if (!connection_waiting()) return; // the next one raises a new edge
            if (!target_.relieve_pressure()) {
                // Nothing idle to give up: one newcomer goes past the limit, into its share of
                // the reserve the limit keeps, and the rest wait in the backlog: for the retry,
                // or for a close, which takes one within the limit only. (Taking one past the
                // limit at every close, or at every retry without a bound, let silent
                // attackers' reconnections eat the whole reserve, which files need too.)
                if (past_limit && target_.may_exceed_limit()) {
                    sockaddr_storage peer{};
                    const int fd = accept_one(peer);
                    if (fd >= 0) target_.accept(fd, addr_, peer);
                }
                pause();
                return;
            }
        }
        sockaddr_storage peer{};
        const int fd = accept_one(peer);
        if (fd >= 0) {
            target_.accept(fd, addr_, peer);
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
        metrics_.accept_errors.add();
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            // accept4 takes a descriptor before it looks at the queue, so it says EMFILE with
            // nobody waiting too (after every accept at the limit): free one only for a
            // connection that is there, else wait for the next one's edge.
            if (!connection_waiting()) return;
            if (target_.free_descriptor()) continue;
        }
        pause();
        return;
    }
}

int listener::accept_one(sockaddr_storage& peer) const noexcept {
    socklen_t len = sizeof peer; // the peer's address comes with the accept: no system call later
    return ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

bool listener::connection_waiting() const noexcept {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

void listener::pause() noexcept {
    // Nothing to reclaim: give connections time to end rather than retrying in a loop. The
    // edge that brought us here is spent, so the retry accepts whatever queued meanwhile; a
    // connection that closes first brings it forward (resume_soon).
    paused_ = true;
    // A shared socket's edges go to one worker only: while this one cannot take connections,
    // it steps out so that they wake the others.
    if (shared_) poll_.remove(fd_);
    retry_.expires_after(std::chrono::milliseconds(100));
    retry_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec) return; // closed, or resumed sooner
        self->unpause();
        self->accept_all();
    });
}

void listener::unpause() noexcept {
    paused_ = false;
    if (shared_ && fd_ >= 0 && !poll_.add(fd_, *this, EPOLLIN | EPOLLEXCLUSIVE))
        metrics_.accept_errors.add(); // out of memory: the retries still accept
}

void listener::resume_soon() noexcept {
    if (!paused_ || resume_posted_ || fd_ < 0) return;
    try {
        boost::asio::post(retry_.get_executor(), [self = shared_from_this()] {
            self->resume_posted_ = false;
            if (!self->paused_ || self->fd_ < 0) return;
            self->unpause();
            self->retry_.cancel();
            self->accept_all(false);
        });
        resume_posted_ = true;
    } catch (...) {
        // No memory to queue it: the retry comes all the same.
    }
}

} // namespace tarry::server

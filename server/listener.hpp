#pragma once

#include "config.hpp"
#include "shared_socket.hpp"
#include "worker_metrics.hpp"
#include <tarry/net/poller.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/socket.h>

#include <memory>
#include <optional>

namespace tarry::server {

/// What a listener hands its connections to, and asks for room: its worker.
class accept_target {
public:
    /// A new client socket (non-blocking) accepted on `addr` (its parameters: a PROXY header
    /// first, a TLS handshake first) from `peer`.
    virtual void accept(int fd, const listen_address& addr,
                        const sockaddr_storage& peer) noexcept = 0;
    [[nodiscard]] virtual bool at_connection_limit() const noexcept = 0;
    /// Whether one more connection may go past the limit, into the reserve it keeps.
    [[nodiscard]] virtual bool may_exceed_limit() const noexcept = 0;
    /// Closes a quiet client connection, to stay within the connection limit, or, with none
    /// quiet enough, asks a recently used one to close after its next response. Returns
    /// whether it closed one.
    virtual bool relieve_pressure() noexcept = 0;
    /// Out of descriptors: closes something idle (an idle upstream connection first, then a
    /// client connection as relieve_pressure does). Returns whether it did.
    virtual bool free_descriptor() noexcept = 0;

protected:
    accept_target() = default;
    accept_target(const accept_target&) = default;
    accept_target& operator=(const accept_target&) = default;
    ~accept_target() = default;
};

/// One listening socket of one worker. Every worker binds the same TCP address with
/// SO_REUSEPORT, so the kernel spreads connections over workers and they share nothing. A Unix
/// socket, or one systemd passed, is a shared_socket instead: each worker polls its own
/// duplicate with EPOLLEXCLUSIVE, so a connection wakes one worker, not all of them.
///
/// It sits in the worker's poller and accepts until EAGAIN on each edge. When descriptors run
/// out (EMFILE/ENFILE, or max_connections reached) it reclaims the oldest idle keep-alive
/// connection and retries; with none to reclaim it pauses before the next accept instead of
/// spinning on a failing one.
class listener final : public net::pollable, public std::enable_shared_from_this<listener> {
public:
    /// Opens, binds and listens; throws std::system_error naming the address.
    listener(boost::asio::io_context& io, net::poller& poll, worker_metrics& metrics,
             accept_target& target, const listen_address& addr);
    /// Accepts from `shared` (a duplicate of its descriptor); throws std::system_error.
    listener(boost::asio::io_context& io, net::poller& poll, worker_metrics& metrics,
             accept_target& target, const listen_address& addr,
             std::shared_ptr<shared_socket> shared);
    listener(const listener&) = delete;
    listener& operator=(const listener&) = delete;
    ~listener();

    void start();
    void close() noexcept;

    [[nodiscard]] const listen_address& address() const noexcept { return addr_; }
    /// A reload kept the socket with other parameters (proxy_protocol): for the next accepts.
    void set_address(const listen_address& addr) { addr_ = addr; }
    /// The TCP endpoint it is bound to (ports resolved); nothing for a Unix socket.
    [[nodiscard]] std::optional<boost::asio::ip::tcp::endpoint> local_endpoint() const;

    void on_events(std::uint32_t events) noexcept override;

    /// Whether it waits for descriptors before its next accept.
    [[nodiscard]] bool paused() const noexcept { return paused_; }
    /// A descriptor came back: accept from the loop's next turn instead of the retry's.
    void resume_soon() noexcept;

private:
    /// Accepts until EAGAIN; at the limit with nothing to reclaim, one past it if allowed.
    void accept_all(bool past_limit = true) noexcept;
    void pause() noexcept;
    /// Back into the poller after a pause (a shared socket leaves it while paused).
    void unpause() noexcept;
    [[nodiscard]] bool connection_waiting() const noexcept;
    /// accept4, with the peer's address into `peer`: the descriptor, or -1 (errno).
    int accept_one(sockaddr_storage& peer) const noexcept;

    net::poller& poll_;
    worker_metrics& metrics_;
    accept_target& target_;
    listen_address addr_;
    int fd_ = -1;
    std::shared_ptr<shared_socket> shared_; ///< what fd_ duplicates, when not this worker's own
    boost::asio::steady_timer retry_;
    bool paused_ = false;
    bool resume_posted_ = false;
};

/// Resolves a listen_address to an endpoint ("localhost" is 127.0.0.1; names are not looked up).
boost::asio::ip::tcp::endpoint endpoint_of(const listen_address& addr);
/// Binds a fresh socket (without SO_REUSEPORT) to `ep` and closes it: 0, or bind's errno.
int probe_bind(const boost::asio::ip::tcp::endpoint& ep) noexcept;
/// Throws config_error when something else already listens on `addr` (a second tarry, say),
/// which SO_REUSEPORT would otherwise let the workers share. Port 0 is never taken.
void refuse_if_taken(const listen_address& addr);

} // namespace tarry::server

#pragma once

#include "config.hpp"
#include "connection.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>

namespace tarry::server {

class worker;

using acceptor_type = boost::asio::basic_socket_acceptor<boost::asio::ip::tcp,
                                                         boost::asio::io_context::executor_type>;

/// One listening socket of one worker. Every worker binds the same address with SO_REUSEPORT,
/// so the kernel spreads connections over workers and they share nothing.
///
/// When descriptors run out (EMFILE/ENFILE, or max_connections reached) it reclaims the oldest
/// idle keep-alive connection and retries; with none to reclaim it pauses before the next
/// accept instead of spinning on a failing one. Its pending accept and retry wait hold it, so a
/// reload may drop a listener while its cancelled accept is still queued.
class listener : public std::enable_shared_from_this<listener> {
public:
    /// Opens, binds and listens; throws std::system_error naming the address.
    listener(worker& owner, const listen_address& addr);

    void start();
    void close() noexcept;

    [[nodiscard]] const listen_address& address() const noexcept { return addr_; }
    [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const;

private:
    void do_accept();
    void on_accept(const boost::system::error_code& ec, socket_type socket);
    void pause();

    worker& owner_;
    listen_address addr_;
    acceptor_type acceptor_;
    boost::asio::steady_timer retry_;
    bool closed_ = false;
};

/// Resolves a listen_address to an endpoint ("localhost" is 127.0.0.1; names are not looked up).
boost::asio::ip::tcp::endpoint endpoint_of(const listen_address& addr);

} // namespace tarry::server

#include "listener.hpp"

#include "plain_allocator.hpp"
#include "worker.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/socket_base.hpp>

#include <sys/socket.h>

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

listener::listener(worker& owner, const listen_address& addr)
    : owner_(owner), addr_(addr), acceptor_(owner.io()), retry_(owner.io()) {
    const tcp::endpoint ep = endpoint_of(addr);
    const std::string where = addr.host + ":" + std::to_string(addr.port);
    boost::system::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) {
        const int one = 1;
        if (::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) !=
            0)
            ec.assign(errno, boost::system::system_category());
    }
    if (!ec && ep.address().is_v6()) acceptor_.set_option(boost::asio::ip::v6_only(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::system_error(ec, "cannot listen on " + where);
    acceptor_.non_blocking(true, ec);
}

tcp::endpoint listener::local_endpoint() const {
    return acceptor_.local_endpoint();
}

void listener::start() {
    do_accept();
}

void listener::close() noexcept {
    closed_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
}

void listener::do_accept() {
    if (closed_) return;
    if (owner_.at_connection_limit() && !owner_.relieve_pressure()) {
        pause();
        return;
    }
    acceptor_.async_accept(boost::asio::bind_allocator(
        plain_allocator<void>(),
        [self = shared_from_this()](const boost::system::error_code& ec, socket_type socket) {
            self->on_accept(ec, std::move(socket));
        }));
}

void listener::on_accept(const boost::system::error_code& ec, socket_type socket) {
    if (closed_ || ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
        owner_.accept(std::move(socket));
        do_accept();
        return;
    }
    owner_.metrics().accept_errors.add();
    if (ec == boost::asio::error::no_descriptors || ec.value() == ENFILE ||
        ec == boost::asio::error::no_buffer_space || ec == boost::asio::error::no_memory) {
        if (owner_.relieve_pressure()) {
            do_accept();
        } else {
            pause();
        }
        return;
    }
    do_accept(); // ECONNABORTED and friends: that client is gone, the next one is not
}

void listener::pause() {
    // Nothing to reclaim: give connections time to end rather than retrying in a loop.
    retry_.expires_after(std::chrono::milliseconds(100));
    retry_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) self->do_accept();
    });
}

} // namespace tarry::server

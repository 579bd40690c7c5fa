#include "admin.hpp"

#include "listener.hpp"

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include <memory>

namespace tarry::server {
namespace {

using boost::asio::ip::tcp;

std::string reply(unsigned status, std::string_view reason, std::string_view type,
                  const std::string& body) {
    return fmt::format("HTTP/1.1 {} {}\r\nServer: tarry\r\nContent-Type: {}\r\n"
                       "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                       status, reason, type, body.size(), body);
}

/// One admin request: read the head (bounded in size and time), answer, close.
struct admin_session : std::enable_shared_from_this<admin_session> {
    admin_session(tcp::socket s, const std::function<std::string()>& m,
                  const std::function<bool()>& h)
        : socket(std::move(s)), timer(socket.get_executor()), metrics(m), healthy(h), buf(8192) {}

    void start() {
        timer.expires_after(std::chrono::seconds(5));
        timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            if (!ec) self->socket.close(ec);
        });
        boost::asio::async_read_until(
            socket, buf, "\r\n\r\n",
            [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                self->on_head(ec);
            });
    }

    void on_head(boost::system::error_code ec) {
        if (ec) {
            timer.cancel();
            return;
        }
        std::string line(boost::asio::buffers_begin(buf.data()),
                         boost::asio::buffers_end(buf.data()));
        line.resize(line.find("\r\n"));
        // HEAD as GET without the body (a balancer's health check often uses HEAD).
        const bool head = line.rfind("HEAD ", 0) == 0;
        const std::string_view target =
            std::string_view(line).substr(head                         ? 5
                                          : line.rfind("GET ", 0) == 0 ? 4
                                                                       : line.size());
        if (target.starts_with("/metrics ")) {
            out = reply(200, "OK", "text/plain; version=0.0.4; charset=utf-8", metrics());
        } else if (target.starts_with("/healthz ")) {
            // A stopping instance says so at once, so a balancer drains it.
            out = healthy() ? reply(200, "OK", "text/plain", "ok\n")
                            : reply(503, "Service Unavailable", "text/plain", "stopping\n");
        } else {
            out = reply(404, "Not Found", "text/plain", "not found\n");
        }
        if (head) out.resize(out.find("\r\n\r\n") + 4);
        boost::asio::async_write(
            socket, boost::asio::buffer(out),
            [self = shared_from_this()](boost::system::error_code e, std::size_t) {
                self->socket.shutdown(tcp::socket::shutdown_send, e);
                self->timer.cancel();
            });
    }

    tcp::socket socket;
    boost::asio::steady_timer timer;
    const std::function<std::string()>& metrics;
    const std::function<bool()>& healthy;
    boost::asio::streambuf buf;
    std::string out;
};

} // namespace

admin::admin(boost::asio::io_context& io, const listen_address& addr,
             std::function<std::string()> metrics, std::function<bool()> healthy)
    : acceptor_(io), retry_(io), metrics_(std::move(metrics)), healthy_(std::move(healthy)) {
    const tcp::endpoint ep = endpoint_of(addr);
    boost::system::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(64, ec);
    if (ec)
        throw std::system_error(ec, "cannot listen on admin address " + addr.host + ":" +
                                        std::to_string(addr.port));
}

void admin::start() {
    do_accept();
}

void admin::close() noexcept {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
}

tcp::endpoint admin::local_endpoint() const {
    return acceptor_.local_endpoint();
}

void admin::do_accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
        if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (!ec) {
            std::make_shared<admin_session>(std::move(s), metrics_, healthy_)->start();
        } else if (ec != boost::asio::error::connection_aborted) {
            // Out of descriptors (or memory): accept fails at once and again at every retry,
            // a connection waiting or not, so retrying now would spin this thread until the
            // workers free one. Wait as their listeners do.
            retry_.expires_after(std::chrono::milliseconds(100));
            retry_.async_wait([this](boost::system::error_code e) {
                if (!e) do_accept();
            });
            return;
        }
        do_accept();
    });
}

} // namespace tarry::server

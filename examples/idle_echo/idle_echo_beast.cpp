// idle_echo_beast: the same server as idle_echo, with its timeouts kept the way Boost.Beast
// users keep them: a beast::tcp_stream, and expires_after before each read. Every
// connection then owns its timers, and every line re-arms one in Asio's timer heap. Only here
// to be compared with idle_echo (see README.md and bench).
#include "line_protocol.hpp"
#include "options.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <csignal>
#include <iostream>
#include <memory>
#include <new>
#include <string>

namespace idle_echo {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using boost::system::error_code;

constexpr std::size_t max_line = 4096;

class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket socket, const options& opts) : stream_(std::move(socket)), opts_(opts) {}

    void start() {
        error_code ignored;
        stream_.socket().set_option(tcp::no_delay(true), ignored); // one small write per line
        stream_.expires_after(opts_.login_timeout); // a total: not reset until the login
        do_read();
    }

private:
    void do_read() {
        if (logged_in_) stream_.expires_after(opts_.idle_timeout); // one timer re-arm per line
        asio::async_read_until(
            stream_, asio::dynamic_buffer(in_, max_line), '\n',
            [self = shared_from_this()](error_code ec, std::size_t n) { self->on_read(ec, n); });
    }

    void on_read(error_code ec, std::size_t n) {
        if (ec) return close(); // beast::error::timeout when the deadline passed
        reply r = answer(logged_in_, std::string_view(in_).substr(0, n - 1));
        in_.erase(0, n);
        if (r.logged_in) logged_in_ = true;
        out_ = std::move(r.text);
        asio::async_write(stream_, asio::buffer(out_),
                          [self = shared_from_this(), last = r.close](error_code wec, std::size_t) {
                              self->on_write(wec, last);
                          });
    }

    void on_write(error_code ec, bool last) {
        if (ec || last) return close();
        do_read();
    }

    void close() noexcept {
        error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.close();
    }

    beast::tcp_stream stream_;
    const options& opts_;
    std::string in_;
    std::string out_;
    bool logged_in_ = false;
};

class server {
public:
    server(asio::io_context& io, const options& opts)
        : acceptor_(io, {asio::ip::make_address(opts.address), opts.port}), retry_(io),
          opts_(opts) {}

    [[nodiscard]] tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
    void start() { do_accept(); }
    void stop() {
        error_code ignored;
        acceptor_.close(ignored);
        retry_.cancel();
    }

private:
    void do_accept() {
        acceptor_.async_accept(
            [this](error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
    }

    void on_accept(error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (ec) {
            retry_.expires_after(std::chrono::milliseconds(100));
            retry_.async_wait([this](error_code wec) {
                if (!wec) do_accept();
            });
            return;
        }
        try {
            std::make_shared<session>(std::move(socket), opts_)->start();
        } catch (const std::bad_alloc&) {
        }
        do_accept();
    }

    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    const options& opts_;
};

} // namespace
} // namespace idle_echo

int main(int argc, char** argv) {
    namespace asio = boost::asio;
    const idle_echo::options opts = idle_echo::parse_options(argc, argv);
    try {
        asio::io_context io(1);
        idle_echo::server srv(io, opts);
        asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](boost::system::error_code, int) {
            srv.stop();
            io.stop();
        });
        srv.start();
        std::cout << "listening on " << srv.local_endpoint() << std::endl;
        io.run();
    } catch (const std::exception& e) {
        std::cerr << argv[0] << ": " << e.what() << '\n';
        return 1;
    }
    return 0;
}

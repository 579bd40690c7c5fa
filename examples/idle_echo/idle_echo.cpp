// idle_echo: a line echo server whose two timeouts are kept by the tarry timeouts core.
//
// A connection must send `LOGIN <name>` within the login timeout (a total: nothing resets it),
// then each line it sends is echoed back, and it is closed once it has sent nothing for the idle
// timeout. Two kinds of waiting (logging in, idle), so two lists in the registry, each with one
// steady_timer, whatever the number of connections and even if both timeouts are equal; a line
// costs a clock read and a relink, never a timer operation.
#include "line_protocol.hpp"
#include "options.hpp"

#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <csignal>
#include <iostream>
#include <memory>
#include <new>
#include <string>

namespace idle_echo {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using tarry::timeouts::idle_entry;
using tarry::timeouts::member_callback;
using tarry::timeouts::owner_tag;
using tarry::timeouts::timeout_kind;
using tarry::timeouts::timeout_registry;

class session;
// What a list holds: a session logging in, or a logged-in session idle. A walk of either list
// (say, to close the oldest idle session first) finds sessions only: idle_entry::owner<session>().
const timeout_kind logging_in{"logging_in", owner_tag<session>};
const timeout_kind idle{"idle", owner_tag<session>};

constexpr std::size_t max_line = 4096;

class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket socket, timeout_registry& timeouts, const options& opts)
        : socket_(std::move(socket)), timeouts_(timeouts), opts_(opts) {}

    void start() {
        error_code ignored;
        socket_.set_option(tcp::no_delay(true), ignored); // one small write per echoed line
        // The login deadline is a total: enrolled once, never touched. enroll may allocate (the
        // first connection creates the list) and so may throw: give up on this connection.
        try {
            timeouts_.enroll(idle_, logging_in, opts_.login_timeout);
        } catch (const std::bad_alloc&) {
            return close();
        }
        do_read();
    }

private:
    void do_read() {
        asio::async_read_until(
            socket_, asio::dynamic_buffer(in_, max_line), '\n',
            [self = shared_from_this()](error_code ec, std::size_t n) { self->on_read(ec, n); });
    }

    void on_read(error_code ec, std::size_t n) {
        if (ec) return close(); // the peer closed, a line too long, or a timeout closed us
        reply r = answer(logged_in_, std::string_view(in_).substr(0, n - 1));
        in_.erase(0, n);
        if (r.logged_in) {
            logged_in_ = true;
            // A new phase: move from the login list to the idle list.
            try {
                timeouts_.enroll(idle_, idle, opts_.idle_timeout);
            } catch (const std::bad_alloc&) {
                return close();
            }
        } else if (logged_in_) {
            timeout_registry::touch(idle_); // O(1): no timer is touched
        }
        out_ = std::move(r.text);
        asio::async_write(socket_, asio::buffer(out_),
                          [self = shared_from_this(), last = r.close](error_code wec, std::size_t) {
                              self->on_write(wec, last);
                          });
    }

    void on_write(error_code ec, bool last) {
        if (ec || last) return close();
        do_read();
    }

    // Runs on the io_context's thread once the entry is unlinked. Closing the socket completes
    // the pending read with operation_aborted, whose handler holds the last reference.
    void on_timeout() noexcept { close(); }

    void close() noexcept {
        timeout_registry::unenroll(idle_);
        error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

    tcp::socket socket_;
    timeout_registry& timeouts_;
    const options& opts_;
    idle_entry idle_{member_callback<&session::on_timeout>, this};
    std::string in_;
    std::string out_;
    bool logged_in_ = false;
};

class server {
public:
    server(asio::io_context& io, timeout_registry& timeouts, const options& opts)
        : acceptor_(io, {asio::ip::make_address(opts.address), opts.port}), retry_(io),
          timeouts_(timeouts), opts_(opts) {}

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
            // Out of descriptors, most likely: let connections end instead of spinning.
            retry_.expires_after(std::chrono::milliseconds(100));
            retry_.async_wait([this](error_code wec) {
                if (!wec) do_accept();
            });
            return;
        }
        try {
            std::make_shared<session>(std::move(socket), timeouts_, opts_)->start();
        } catch (const std::bad_alloc&) {
            // the socket closes with it
        }
        do_accept();
    }

    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    timeout_registry& timeouts_;
    const options& opts_;
};

} // namespace
} // namespace idle_echo

int main(int argc, char** argv) {
    namespace asio = boost::asio;
    const idle_echo::options opts = idle_echo::parse_options(argc, argv);
    try {
        asio::io_context io(1);
        // One registry per io_context, used only by the thread that runs it: no locks.
        tarry::timeouts::timeout_registry timeouts(io);
        idle_echo::server srv(io, timeouts, opts);
        asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](boost::system::error_code, int) {
            srv.stop();
            io.stop();
        });
        srv.start();
        std::cout << "listening on " << srv.local_endpoint() << std::endl;
        io.run();
        std::cout << "timed out: " << timeouts.stats().expired << std::endl;
    } catch (const std::exception& e) {
        std::cerr << argv[0] << ": " << e.what() << '\n';
        return 1;
    }
    return 0;
}

// Clients that ask for a big response and then read none of it: what a server or proxy holds
// for a crowd of stalled readers. Run:
//   build/load/slow_readers --target 127.0.0.1:8080 --connections 300 --path '/big?n=8388608'
//       --rcvbuf 4096 --hold 60       (one command line)
//
// Every connection gets a small receive buffer (SO_RCVBUF before connect, so that the window it
// advertises stays small: the kernel doubles the value and keeps a share for its own overhead),
// connects, sends one `GET PATH HTTP/1.1`, and is then never read again. Once every request is
// written the tool prints
//   sent N failed F ms T
// and holds every connection open for --hold seconds, or until SIGUSR1 (the caller has measured
// what it wanted), whichever comes first. Then it looks at each socket without reading it (poll
// for a peer close or a reset, FIONREAD for the bytes queued in its receive buffer, MSG_PEEK for
// the status line) and prints
//   stalled S peer_closed C reset R failed F head_200 H queued_avg_bytes A queued_max_bytes M
// where stalled counts the connections still open with no close or reset from the server, and
// head_200 those whose queued bytes begin with a 200 status line. Then it closes them all (with
// unread bytes queued, the kernel answers the close with a reset, as when a client goes away
// mid-download), prints `closed N` and exits: 0 when every connection was opened and sent its
// request, 1 otherwise. SIGTERM and SIGINT end the hold early too, and still close everything.
#include "tool_common.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace tool::names; // asio, tcp, use_tuple, parse_number, ...

constexpr std::size_t max_connects_in_flight = 128;
constexpr std::size_t spare_fds = 32;
// A SYN dropped by a full accept queue is retried after 1 s, then 3 s more.
constexpr auto open_timeout = 10s;

struct options {
    tool::target target;
    std::size_t connections = 300;
    std::string path = "/big?n=8388608";
    int rcvbuf = 4096;
    double hold_s = 10;
};

constexpr const char* usage =
    "usage: slow_readers [options]\n"
    "  --target HOST:PORT   loopback server (default 127.0.0.1:8080)\n"
    "  --connections N      stalled readers to open (default 300)\n"
    "  --path P             request target (default /big?n=8388608)\n"
    "  --rcvbuf B           SO_RCVBUF of every connection, set before connect (default 4096)\n"
    "  --hold SECONDS       how long to hold them unread once all requests are sent\n"
    "                       (default 10); SIGUSR1 ends the hold early\n";

// A flag beyond --target and --connections (tool::run_main reads those).
void read_flag(options& opt, tool::arg_walker& args) {
    const std::string_view arg = args.flag(), value = args.value();
    if (arg == "--path") {
        if (!value.starts_with("/") || value.find_first_of(" \r\n") != std::string_view::npos)
            return args.bad("expected an origin-form target such as /big?n=8388608");
        opt.path = std::string(value);
    } else if (arg == "--rcvbuf") {
        auto n = parse_number<int>(value);
        if (!n || *n <= 0) return args.bad("expected a positive byte count");
        opt.rcvbuf = *n;
    } else if (arg == "--hold") {
        auto s = parse_number<double>(value);
        if (!s || *s < 0) return args.bad("expected seconds");
        opt.hold_s = *s;
    } else {
        args.unknown_flag();
    }
}

const char* check(const options& opt) {
    return opt.target.address.is_loopback() ? nullptr : "--target must be a loopback address";
}

enum class conn_state { opening, sent, failed };

class run {
public:
    run(asio::io_context& io, const options& opt)
        : io_(io), opt_(opt),
          request_("GET " + opt.path + " HTTP/1.1\r\nHost: " + opt.target.text + "\r\n\r\n"),
          hold_(io), signals_(io, SIGUSR1, SIGTERM, SIGINT) {
        conns_.reserve(opt.connections);
        for (std::size_t i = 0; i < opt.connections; ++i)
            conns_.push_back(std::make_unique<conn>(io));
    }

    asio::awaitable<void> main() {
        signals_.async_wait([this](error_code ec, int) {
            if (!ec) hold_.cancel(); // the hold ends early; before it starts, it is skipped
            interrupted_ = !ec;
        });
        const auto start = clock_type::now();
        const std::size_t workers = std::min(max_connects_in_flight, conns_.size());
        remaining_workers_ = workers;
        asio::steady_timer all_done(io_);
        all_done_ = &all_done;
        all_done.expires_at(clock_type::time_point::max());
        for (std::size_t w = 0; w < workers; ++w)
            asio::co_spawn(io_, worker(), asio::detached);
        co_await all_done.async_wait(use_tuple);
        all_done_ = nullptr;

        std::size_t sent = 0, failed = 0;
        for (const auto& c : conns_)
            (c->state == conn_state::sent ? sent : failed)++;
        std::printf("sent %zu failed %zu ms %.1f\n", sent, failed,
                    std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
        std::fflush(stdout);
        errors_.print("slow_readers");

        if (!interrupted_) {
            hold_.expires_after(std::chrono::duration_cast<clock_type::duration>(
                std::chrono::duration<double>(opt_.hold_s)));
            co_await hold_.async_wait(use_tuple);
        }
        signals_.cancel();
        inspect();
        std::size_t closed = 0;
        for (auto& c : conns_) {
            error_code ignored;
            if (c->socket.is_open()) ++closed;
            c->socket.close(ignored);
        }
        std::printf("closed %zu\n", closed);
        std::fflush(stdout);
        ok_ = failed == 0;
    }

    bool ok() const { return ok_; }

private:
    struct conn {
        explicit conn(asio::io_context& io) : socket(io) {}
        tcp::socket socket;
        conn_state state = conn_state::opening;
    };

    asio::awaitable<void> worker() {
        while (next_ < conns_.size()) {
            conn& c = *conns_[next_++];
            co_await open_one(c);
        }
        if (--remaining_workers_ == 0 && all_done_) all_done_->cancel();
    }

    asio::awaitable<void> open_one(conn& c) {
        const tcp::endpoint target = opt_.target.endpoint();
        error_code ec;
        c.socket.open(target.protocol(), ec);
        if (!ec) c.socket.set_option(asio::socket_base::receive_buffer_size(opt_.rcvbuf), ec);
        if (ec) {
            errors_.note("open: " + ec.message());
            c.state = conn_state::failed;
            co_return;
        }
        asio::steady_timer deadline(io_);
        deadline.expires_after(open_timeout);
        deadline.async_wait([&c](error_code e) {
            if (!e) {
                error_code ignored;
                c.socket.cancel(ignored);
            }
        });
        std::tie(ec) = co_await c.socket.async_connect(target, use_tuple);
        if (!ec)
            std::tie(ec, std::ignore) =
                co_await asio::async_write(c.socket, asio::buffer(request_), use_tuple);
        deadline.cancel();
        if (ec) {
            errors_.note("connect or send: " + ec.message());
            error_code ignored;
            c.socket.close(ignored);
            c.state = conn_state::failed;
            co_return;
        }
        c.state = conn_state::sent;
    }

    // Looks at every socket without consuming a byte.
    void inspect() {
        std::size_t stalled = 0, peer_closed = 0, reset = 0, failed = 0, head_200 = 0;
        std::size_t queued_total = 0, queued_max = 0, measured = 0;
        for (auto& c : conns_) {
            if (c->state != conn_state::sent || !c->socket.is_open()) {
                ++failed;
                continue;
            }
            const int fd = c->socket.native_handle();
            pollfd p{fd, POLLIN | POLLRDHUP, 0};
            ::poll(&p, 1, 0);
            int so_error = 0;
            socklen_t len = sizeof so_error;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
            int queued = 0;
            if (::ioctl(fd, FIONREAD, &queued) == 0 && queued >= 0) {
                queued_total += static_cast<std::size_t>(queued);
                queued_max = std::max(queued_max, static_cast<std::size_t>(queued));
                ++measured;
            }
            char head[13] = {};
            const auto n = ::recv(fd, head, 12, MSG_PEEK | MSG_DONTWAIT);
            if (n == 12 && std::string_view(head, 12).starts_with("HTTP/1.") &&
                std::string_view(head + 8, 4) == " 200")
                ++head_200;
            if (so_error != 0 || (p.revents & POLLERR))
                ++reset;
            else if (p.revents & (POLLRDHUP | POLLHUP))
                ++peer_closed;
            else
                ++stalled;
        }
        std::printf("stalled %zu peer_closed %zu reset %zu failed %zu head_200 %zu "
                    "queued_avg_bytes %zu queued_max_bytes %zu\n",
                    stalled, peer_closed, reset, failed, head_200,
                    measured ? queued_total / measured : 0, queued_max);
        std::fflush(stdout);
    }

    asio::io_context& io_;
    const options& opt_;
    const std::string request_;
    std::vector<std::unique_ptr<conn>> conns_;
    std::size_t next_ = 0;
    std::size_t remaining_workers_ = 0;
    asio::steady_timer* all_done_ = nullptr;
    asio::steady_timer hold_;
    asio::signal_set signals_;
    bool interrupted_ = false;
    bool ok_ = false;
    tool::error_tally errors_;
};

} // namespace

int main(int argc, char** argv) {
    return tool::run_main({"slow_readers", usage, 2, spare_fds}, argc, argv, read_flag, check,
                          tool::run_on_io<run, options>);
}

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
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_connects_in_flight = 128;
constexpr std::size_t spare_fds = 32;
// A SYN dropped by a full accept queue is retried after 1 s, then 3 s more.
constexpr auto open_timeout = 10s;

struct options {
    asio::ip::address target_address = asio::ip::make_address_v4("127.0.0.1");
    std::uint16_t target_port = 8080;
    std::string target_text = "127.0.0.1:8080";
    std::size_t connections = 300;
    std::string path = "/big?n=8388608";
    int rcvbuf = 4096;
    double hold_s = 10;
};

void print_usage(std::FILE* out) {
    std::fputs(
        "usage: slow_readers [options]\n"
        "  --target HOST:PORT   loopback server (default 127.0.0.1:8080)\n"
        "  --connections N      stalled readers to open (default 300)\n"
        "  --path P             request target (default /big?n=8388608)\n"
        "  --rcvbuf B           SO_RCVBUF of every connection, set before connect (default 4096)\n"
        "  --hold SECONDS       how long to hold them unread once all requests are sent\n"
        "                       (default 10); SIGUSR1 ends the hold early\n",
        out);
}

template <class Number> std::optional<Number> parse_number(std::string_view text) {
    Number value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

bool parse_target(std::string_view text, options& opt) {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    std::string host(text.substr(0, colon));
    if (host == "localhost") host = "127.0.0.1";
    auto port = parse_number<std::uint16_t>(text.substr(colon + 1));
    error_code ec;
    auto address = asio::ip::make_address(host, ec);
    if (ec || !port || *port == 0) return false;
    opt.target_address = address;
    opt.target_port = *port;
    opt.target_text = std::string(text);
    return true;
}

// Returns the options, or nothing with an error message (empty for --help).
std::optional<options> parse_args(int argc, char** argv, std::string& error) {
    options opt;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            error.clear();
            return std::nullopt;
        }
        if (i + 1 >= argc) {
            error = "missing value or unknown flag: " + std::string(arg);
            return std::nullopt;
        }
        std::string_view value = argv[++i];
        auto bad = [&](std::string_view what) {
            error = std::string(what) + ": " + std::string(arg) + " " + std::string(value);
            return std::nullopt;
        };
        if (arg == "--target") {
            if (!parse_target(value, opt)) return bad("expected numeric HOST:PORT");
        } else if (arg == "--connections") {
            auto n = parse_number<std::size_t>(value);
            if (!n || *n == 0) return bad("expected a positive count");
            opt.connections = *n;
        } else if (arg == "--path") {
            if (!value.starts_with("/") || value.find_first_of(" \r\n") != std::string_view::npos)
                return bad("expected an origin-form target such as /big?n=8388608");
            opt.path = std::string(value);
        } else if (arg == "--rcvbuf") {
            auto n = parse_number<int>(value);
            if (!n || *n <= 0) return bad("expected a positive byte count");
            opt.rcvbuf = *n;
        } else if (arg == "--hold") {
            auto s = parse_number<double>(value);
            if (!s || *s < 0) return bad("expected seconds");
            opt.hold_s = *s;
        } else {
            error = "unknown flag: " + std::string(arg);
            return std::nullopt;
        }
    }
    if (!opt.target_address.is_loopback()) {
        error = "--target must be a loopback address";
        return std::nullopt;
    }
    return opt;
}

bool ensure_fd_limit(std::size_t connections) {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    if (connections + spare_fds > lim.rlim_cur) {
        std::fprintf(stderr, "slow_readers: %zu connections need %zu file descriptors, the limit "
                             "is %llu\n",
                     connections, connections + spare_fds,
                     static_cast<unsigned long long>(lim.rlim_cur));
        return false;
    }
    return true;
}

enum class conn_state { opening, sent, failed };

class run {
public:
    run(asio::io_context& io, const options& opt)
        : io_(io), opt_(opt), request_("GET " + opt.path + " HTTP/1.1\r\nHost: " +
                                       opt.target_text + "\r\n\r\n"),
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
        for (const auto& [what, n] : errors_)
            std::fprintf(stderr, "slow_readers: %zu x %s\n", n, what.c_str());

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

    void note_error(const std::string& what) {
        for (auto& [text, n] : errors_)
            if (text == what) {
                ++n;
                return;
            }
        errors_.emplace_back(what, 1);
    }

    asio::awaitable<void> worker() {
        while (next_ < conns_.size()) {
            conn& c = *conns_[next_++];
            co_await open_one(c);
        }
        if (--remaining_workers_ == 0 && all_done_) all_done_->cancel();
    }

    asio::awaitable<void> open_one(conn& c) {
        const tcp::endpoint target(opt_.target_address, opt_.target_port);
        error_code ec;
        c.socket.open(target.protocol(), ec);
        if (!ec) c.socket.set_option(asio::socket_base::receive_buffer_size(opt_.rcvbuf), ec);
        if (ec) {
            note_error("open: " + ec.message());
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
        if (!ec) std::tie(ec, std::ignore) =
            co_await asio::async_write(c.socket, asio::buffer(request_), use_tuple);
        deadline.cancel();
        if (ec) {
            note_error("connect or send: " + ec.message());
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
    std::vector<std::pair<std::string, std::size_t>> errors_;
};

} // namespace

int main(int argc, char** argv) {
    std::string error;
    auto opt = parse_args(argc, argv, error);
    if (!opt) {
        if (error.empty()) {
            print_usage(stdout);
            return 0;
        }
        std::fprintf(stderr, "slow_readers: %s\n", error.c_str());
        print_usage(stderr);
        return 2;
    }
    if (!ensure_fd_limit(opt->connections)) return 1;
    try {
        asio::io_context io(1);
        run r(io, *opt);
        asio::co_spawn(io, r.main(), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
        io.run();
        return r.ok() ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "slow_readers: %s\n", e.what());
        return 1;
    }
}

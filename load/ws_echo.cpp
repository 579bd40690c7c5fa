// A WebSocket echo load: many open WebSocket connections (through a proxy, say), idle and then
// busy. Run:
//   build/load/ws_echo --target 127.0.0.1:8080 --path /echo --connections 1000 --idle 4
//       --duration 10 [--active K] [--size 64] [--pid PROXY_PID]       (one command line)
//
// One thread, one io_context, Boost.Beast's websocket stream over a plain TCP socket, every
// operation asynchronous. In order:
//   1. Opens --connections WebSocket connections (TCP connect, then the HTTP/1.1 upgrade
//      handshake to --path), at most 64 handshakes in flight, and prints
//        open N failed F ms T
//   2. Leaves them all idle for --idle seconds (the caller reads the proxy's memory meanwhile);
//      with --pid, prints the proxy's VmRSS at the end of it:  idle_rss_kb X
//   3. Prints  echo_start  and for --duration seconds, each of the first --active connections
//      (all by default) sends a --size byte binary message, waits for the echo, checks it, and
//      sends the next: one round trip in flight per connection. Then it prints
//        echo round_trips R seconds S per_second X p50_us A p99_us B max_us C errors E
//             proxy_cpu_ticks T clk_tck H
//      (one line): round trips whose echo came back within the duration, their latency from
//      just before the write to the end of the read, and, with --pid, the proxy's utime + stime
//      over exactly that window (/proc/PID/stat, in clock ticks); and, with --pid, its VmRSS
//      right after:  busy_rss_kb X
//   4. Closes every connection with a WebSocket close (code 1000) and waits for the server's,
//      then prints  closed N close_errors E  and exits: 0 when every connection opened and no
//      echo failed, 1 otherwise.
#include "tool_common.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace tool::names; // asio, tcp, use_tuple, parse_number, ...
namespace beast = boost::beast;
namespace websocket = beast::websocket;

constexpr std::size_t max_handshakes_in_flight = 64;
constexpr std::size_t spare_fds = 32;

struct options {
    tool::target target;
    std::string path = "/echo";
    std::size_t connections = 1000;
    std::optional<std::size_t> active;
    std::size_t size = 64;
    double idle_s = 4;
    double duration_s = 10;
    long pid = -1;
};

constexpr const char* usage =
    "usage: ws_echo [options]\n"
    "  --target HOST:PORT   loopback server (default 127.0.0.1:8080)\n"
    "  --path P             WebSocket target (default /echo)\n"
    "  --connections N      WebSocket connections to open (default 1000)\n"
    "  --active K           of which K echo in the busy phase (default all)\n"
    "  --size B             message size in bytes (default 64)\n"
    "  --idle SECONDS       all open and idle this long before the echo phase (default 4)\n"
    "  --duration SECONDS   echo phase (default 10)\n"
    "  --pid PID            the proxy: its VmRSS and CPU time (from /proc/PID) are reported\n";

// A flag beyond --target and --connections (tool::run_main reads those).
void read_flag(options& opt, tool::arg_walker& args) {
    const std::string_view arg = args.flag(), value = args.value();
    if (arg == "--path") {
        if (!value.starts_with("/")) return args.bad("expected a path");
        opt.path = std::string(value);
    } else if (arg == "--active") {
        auto n = parse_number<std::size_t>(value);
        if (!n) return args.bad("expected a count");
        opt.active = *n;
    } else if (arg == "--size") {
        auto n = parse_number<std::size_t>(value);
        if (!n || *n == 0 || *n > (1u << 20)) return args.bad("expected 1..1048576");
        opt.size = *n;
    } else if (arg == "--idle") {
        auto s = parse_number<double>(value);
        if (!s || *s < 0) return args.bad("expected seconds");
        opt.idle_s = *s;
    } else if (arg == "--duration") {
        auto s = parse_number<double>(value);
        if (!s || *s <= 0) return args.bad("expected seconds");
        opt.duration_s = *s;
    } else if (arg == "--pid") {
        auto n = parse_number<long>(value);
        if (!n || *n <= 0) return args.bad("expected a pid");
        opt.pid = *n;
    } else {
        args.unknown_flag();
    }
}

const char* check(const options& opt) {
    if (!opt.target.address.is_loopback()) return "--target must be a loopback address";
    if (opt.active && *opt.active > opt.connections) return "--active cannot exceed --connections";
    return nullptr;
}

// utime + stime of the process, in clock ticks.
std::optional<long long> read_cpu_ticks(long pid) {
    if (pid <= 0) return std::nullopt;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = stat.rfind(')');
    if (paren == std::string::npos) return std::nullopt;
    std::istringstream fields(stat.substr(paren + 1));
    std::string field;
    long long utime = 0, stime = 0;
    // After the command's ')': state is field 3, utime 14, stime 15.
    for (int i = 3; i <= 15 && (fields >> field); ++i) {
        if (i == 14) utime = std::stoll(field);
        if (i == 15) stime = std::stoll(field);
    }
    return utime + stime;
}

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

clock_type::duration from_seconds(double s) {
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

class run {
public:
    run(asio::io_context& io, const options& opt) : io_(io), opt_(opt), wake_(io) {
        conns_.reserve(opt.connections);
        for (std::size_t i = 0; i < opt.connections; ++i)
            conns_.push_back(std::make_unique<conn>(io));
        message_.resize(opt.size);
        for (std::size_t i = 0; i < message_.size(); ++i)
            message_[i] = static_cast<char>('a' + i % 26);
    }

    asio::awaitable<void> main() {
        // 1. open
        const auto start = clock_type::now();
        const std::size_t workers = std::min(max_handshakes_in_flight, conns_.size());
        pending_ = workers;
        for (std::size_t w = 0; w < workers; ++w)
            asio::co_spawn(io_, open_worker(), asio::detached);
        co_await wait_all(60s);
        std::size_t opened = 0;
        for (const auto& c : conns_)
            opened += c->open ? 1 : 0;
        std::printf("open %zu failed %zu ms %.1f\n", opened, conns_.size() - opened,
                    seconds_between(start, clock_type::now()) * 1e3);
        std::fflush(stdout);
        report_errors("open");

        // 2. idle
        asio::steady_timer timer(io_);
        timer.expires_after(from_seconds(opt_.idle_s));
        co_await timer.async_wait(use_tuple);
        if (auto kb = read_rss_kb(opt_.pid)) std::printf("idle_rss_kb %ld\n", *kb);
        std::fflush(stdout);

        // 3. echo
        const std::size_t active = std::min(opt_.active.value_or(conns_.size()), conns_.size());
        const auto ticks0 = read_cpu_ticks(opt_.pid);
        std::printf("echo_start\n");
        std::fflush(stdout);
        const auto echo_start = clock_type::now();
        echo_deadline_ = echo_start + from_seconds(opt_.duration_s);
        latencies_us_.reserve(1 << 20);
        std::size_t loops = 0;
        for (std::size_t i = 0; i < active; ++i) {
            if (!conns_[i]->open) continue;
            asio::co_spawn(io_, echo_loop(*conns_[i]), asio::detached);
            ++loops;
        }
        pending_ = loops;
        timer.expires_at(echo_deadline_);
        co_await timer.async_wait(use_tuple);
        const auto ticks1 = read_cpu_ticks(opt_.pid);
        const auto echo_end = clock_type::now();
        co_await wait_all(10s); // the round trips in flight at the deadline
        std::vector<std::uint32_t> lat = std::move(latencies_us_);
        std::sort(lat.begin(), lat.end());
        auto pct = [&lat](double q) -> std::uint32_t {
            if (lat.empty()) return 0;
            auto i = static_cast<std::size_t>(std::lround(q * static_cast<double>(lat.size() - 1)));
            return lat[std::min(i, lat.size() - 1)];
        };
        const double secs = seconds_between(echo_start, echo_end);
        std::printf("echo round_trips %zu seconds %.3f per_second %.0f p50_us %u p99_us %u "
                    "max_us %u errors %zu active %zu proxy_cpu_ticks %lld clk_tck %ld\n",
                    lat.size(), secs, static_cast<double>(lat.size()) / secs, pct(0.50), pct(0.99),
                    lat.empty() ? 0u : lat.back(), echo_errors_, loops,
                    ticks0 && ticks1 ? *ticks1 - *ticks0 : -1LL, ::sysconf(_SC_CLK_TCK));
        if (auto kb = read_rss_kb(opt_.pid)) std::printf("busy_rss_kb %ld\n", *kb);
        std::fflush(stdout);
        report_errors("echo");

        // 4. close
        std::size_t closing = 0;
        for (auto& c : conns_) {
            if (!c->open) continue;
            asio::co_spawn(io_, close_one(*c), asio::detached);
            ++closing;
        }
        pending_ = closing;
        co_await wait_all(10s);
        std::printf("closed %zu close_errors %zu\n", closing - close_errors_, close_errors_);
        std::fflush(stdout);
        report_errors("close");
        ok_ = opened == conns_.size() && echo_errors_ == 0;
    }

    bool ok() const { return ok_; }

private:
    struct conn {
        explicit conn(asio::io_context& io) : ws(io) {}
        websocket::stream<tcp::socket> ws;
        beast::flat_buffer buffer;
        bool open = false;
    };

    // Waits until pending_ drops to zero (done() cancels wake_). Past `limit`, every socket is
    // closed, which ends whatever operation still waits on one: a server that stops answering
    // does not keep the tool here.
    asio::awaitable<void> wait_all(clock_type::duration limit) {
        asio::steady_timer guard(io_);
        guard.expires_after(limit);
        guard.async_wait([this](error_code ec) {
            if (ec) return;
            errors_.note("gave up waiting: closed every connection");
            for (auto& c : conns_) {
                error_code ignored;
                beast::get_lowest_layer(c->ws).close(ignored);
            }
        });
        while (pending_ > 0) {
            wake_.expires_at(clock_type::time_point::max());
            co_await wake_.async_wait(use_tuple);
        }
        guard.cancel();
    }
    void done() {
        if (--pending_ == 0) wake_.cancel();
    }

    void report_errors(const char* phase) { errors_.print(std::string("ws_echo: ") + phase); }

    asio::awaitable<void> open_worker() {
        while (next_ < conns_.size()) {
            conn& c = *conns_[next_++];
            co_await open_one(c);
        }
        done();
    }

    asio::awaitable<void> open_one(conn& c) {
        const tcp::endpoint target = opt_.target.endpoint();
        auto& socket = beast::get_lowest_layer(c.ws);
        auto [ec] = co_await socket.async_connect(target, use_tuple);
        if (ec) {
            errors_.note("connect: " + ec.message());
            co_return;
        }
        socket.set_option(tcp::no_delay(true), ec);
        websocket::stream_base::timeout timeouts{};
        timeouts.handshake_timeout = 10s;
        timeouts.idle_timeout = websocket::stream_base::none();
        timeouts.keep_alive_pings = false;
        c.ws.set_option(timeouts);
        c.ws.binary(true);
        c.ws.auto_fragment(false);
        c.ws.read_message_max(1 << 20);
        std::tie(ec) = co_await c.ws.async_handshake(opt_.target.text, opt_.path, use_tuple);
        if (ec) {
            errors_.note("handshake: " + ec.message());
            error_code ignored;
            socket.close(ignored);
            co_return;
        }
        c.open = true;
    }

    asio::awaitable<void> echo_loop(conn& c) {
        while (clock_type::now() < echo_deadline_) {
            const auto sent = clock_type::now();
            auto [ec, n] = co_await c.ws.async_write(asio::buffer(message_), use_tuple);
            if (!ec) std::tie(ec, n) = co_await c.ws.async_read(c.buffer, use_tuple);
            const auto back = clock_type::now();
            if (ec) {
                errors_.note("echo: " + ec.message());
                ++echo_errors_;
                c.open = false;
                break;
            }
            const auto data = c.buffer.cdata();
            const bool same = data.size() == message_.size() &&
                              std::memcmp(data.data(), message_.data(), message_.size()) == 0;
            c.buffer.consume(c.buffer.size());
            if (!same) {
                errors_.note("echo: the message came back different");
                ++echo_errors_;
                break;
            }
            if (back <= echo_deadline_)
                latencies_us_.push_back(static_cast<std::uint32_t>(
                    std::chrono::duration_cast<std::chrono::microseconds>(back - sent).count()));
        }
        done();
    }

    asio::awaitable<void> close_one(conn& c) {
        auto [ec] = co_await c.ws.async_close(websocket::close_code::normal, use_tuple);
        if (ec) {
            errors_.note("close: " + ec.message());
            ++close_errors_;
        }
        error_code ignored;
        beast::get_lowest_layer(c.ws).close(ignored);
        done();
    }

    asio::io_context& io_;
    const options& opt_;
    std::vector<std::unique_ptr<conn>> conns_;
    std::string message_;
    std::size_t next_ = 0;
    std::size_t pending_ = 0;
    asio::steady_timer wake_;
    clock_type::time_point echo_deadline_{};
    std::vector<std::uint32_t> latencies_us_;
    std::size_t echo_errors_ = 0;
    std::size_t close_errors_ = 0;
    bool ok_ = false;
    tool::error_tally errors_;
};

} // namespace

int main(int argc, char** argv) {
    return tool::run_main({"ws_echo", usage, 2, spare_fds}, argc, argv, read_flag, check,
                          tool::run_on_io<run, options>);
}

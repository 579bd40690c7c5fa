// Measures how a keep-alive server expires a crowd of idle connections. Run:
//   build/load/idle_flood --target 127.0.0.1:8080 --timeout 3s --connections 15000 --pid PID
//
// One probe connection is opened first. Then N flood connections, spread over source addresses
// 127.0.0.2, 127.0.0.3, ... so that one source's ephemeral ports do not cap N, each send one
// keep-alive GET, read the response, note when (last_response_at), and go idle with a read
// pending. That read completing (EOF, reset, or any byte) marks when the server closed the
// connection (closed_at). Against the server's configured keep-alive timeout this gives:
//   - closed_before_timeout: closed_at - last_response_at < timeout. The correctness number: a
//     server must never close a keep-alive connection before its timeout.
//   - lateness (closed_at - last_response_at - timeout) and never_closed (still open at
//     timeout + max-wait): how promptly and how reliably the server expires.
//   - RSS growth per idle connection, from VmRSS in /proc/PID/status before and after the flood.
//   - the latency a busy keep-alive client sees (the probe: one request every probe-interval)
//     while the idle crowd expires around it, beside a baseline: the worst and p99 of as many
//     probe requests just before the first close, when nothing expires. On a virtual machine a
//     single request now and then takes milliseconds with no load at all; the baseline shows that
//     floor in the same run, so that the worst during the expiry is read against it.
//
// The probe runs on its own thread, with its own io_context and socket, so that its latency is the
// server's and not the time its response waits behind thousands of close completions in the
// flood's event loop. The two threads share only the flood's idle time (posted to the probe's
// io_context, after which the probe's samples count) and a stop request; each keeps its own
// figures, merged after the probe thread is joined. The expiry window, [first close, last close],
// is what the flood thread observed; the probe's send times are on the same steady clock, so the
// two compare across threads. --probe-cpu N pins the probe thread to CPU N
// (pthread_setaffinity_np); by default it runs wherever the process may, which under
// `taskset -c 1` is the flood's CPU, shared through the kernel's scheduler.
//
// Timestamps are taken when the event loop resumes the connection, a little after the kernel had
// the bytes. A late closed_at only makes a close look later; a late last_response_at makes it
// look earlier, so the loop polls between connects to keep that delay well under a millisecond.
// closed_before_timeout is strict, so a server whose timers tick in whole milliseconds off a
// cached clock (nginx) shows closes up to ~1 ms early. closed_before_timeout_certain counts only
// closes seen within the timeout of the request being sent, which no client delay can produce:
// the server certainly closed those early.
#include "tool_common.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace tool::names; // asio, tcp, use_tuple, parse_number, ...
using time_point = clock_type::time_point;
using duration = clock_type::duration;

constexpr std::string_view request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
constexpr std::size_t max_connects_in_flight = 256;
// Descriptors beyond one per flood connection: the probe, the two event loops, stdio.
constexpr std::size_t spare_fds = 64;
constexpr std::size_t max_head_bytes = std::size_t{64} * 1024;
// A SYN dropped by a full accept queue is retried after 1 s, then 3 s more: allow those before
// calling the connection failed, while keeping the run bounded.
constexpr duration open_timeout = 10s;
constexpr duration csv_period = 10ms;

double to_ms(duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

// ---------------------------------------------------------------------------------------------
// Command line

struct options {
    tool::target target;
    std::size_t connections = 1000;
    unsigned sources = 4;
    std::optional<duration> timeout;
    long pid = -1;
    duration max_wait = 10s;
    duration probe_interval = 1ms;
    std::optional<unsigned> probe_cpu;
    double open_rate = 0;
    std::string csv_path;
    bool json = false;
};

constexpr const char* usage =
    "usage: idle_flood --timeout DUR [options]\n"
    "  --target HOST:PORT      loopback server to flood (default 127.0.0.1:8080)\n"
    "  --connections N         idle connections to open (default 1000)\n"
    "  --sources N             spread them over source addresses 127.0.0.2.. (default 4;\n"
    "                          0: let the kernel pick the source)\n"
    "  --timeout DUR           the server's keep-alive timeout, e.g. 3s (required)\n"
    "  --pid PID               server pid, to read VmRSS from /proc/PID/status\n"
    "  --max-wait DUR          stop waiting for closes at timeout + DUR (default 10s)\n"
    "  --probe-interval DUR    gap between probe requests (default 1ms)\n"
    "  --probe-cpu N           pin the probe thread to CPU N (default: not pinned)\n"
    "  --open-rate N           connections opened per second; 0: as fast as possible with\n"
    "                          at most 256 connects in flight (default 0)\n"
    "  --csv FILE              write t_ms,open_connections every 10 ms\n"
    "  --json                  print the report as one JSON object\n"
    "DUR is a number with a unit: us, ms, s or m (\"1.5s\", \"250ms\").\n";

std::optional<duration> parse_duration(std::string_view text) {
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || value < 0) return std::nullopt;
    std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    double seconds = 0;
    if (unit == "us")
        seconds = value / 1e6;
    else if (unit == "ms")
        seconds = value / 1e3;
    else if (unit == "s")
        seconds = value;
    else if (unit == "m")
        seconds = value * 60;
    else
        return std::nullopt; // a bare number is ambiguous between ms and s: refuse it
    return std::chrono::duration_cast<duration>(std::chrono::duration<double>(seconds));
}

// A flag beyond --target and --connections (tool::run_main reads those).
void read_flag(options& opt, tool::arg_walker& args) {
    const std::string_view arg = args.flag(), value = args.value();
    if (arg == "--json") {
        opt.json = true;
    } else if (arg == "--sources") {
        auto n = parse_number<unsigned>(value);
        if (!n || *n > 250) return args.bad("expected 0..250");
        opt.sources = *n;
    } else if (arg == "--timeout") {
        opt.timeout = parse_duration(value);
        if (!opt.timeout || *opt.timeout <= duration::zero())
            return args.bad("expected a duration");
    } else if (arg == "--pid") {
        auto n = parse_number<long>(value);
        if (!n || *n <= 0) return args.bad("expected a pid");
        opt.pid = *n;
    } else if (arg == "--max-wait") {
        auto d = parse_duration(value);
        if (!d) return args.bad("expected a duration");
        opt.max_wait = *d;
    } else if (arg == "--probe-interval") {
        auto d = parse_duration(value);
        if (!d) return args.bad("expected a duration");
        opt.probe_interval = *d;
    } else if (arg == "--probe-cpu") {
        auto n = parse_number<unsigned>(value);
        if (!n || *n >= CPU_SETSIZE) return args.bad("expected a CPU number");
        opt.probe_cpu = *n;
    } else if (arg == "--open-rate") {
        auto rate = parse_number<double>(value);
        if (!rate || *rate < 0) return args.bad("expected connections per second");
        opt.open_rate = *rate;
    } else if (arg == "--csv") {
        opt.csv_path = std::string(value);
    } else {
        args.unknown_flag();
    }
}

const char* check(const options& opt) {
    if (!opt.timeout) return "--timeout is required (the server's keep-alive timeout, e.g. 3s)";
    // A flood tool aimed off-host would be a nuisance, and 127.0.0.x sources only route on
    // loopback anyway.
    if (!opt.target.address.is_loopback()) return "--target must be a loopback address";
    if (opt.sources > 0 && !opt.target.address.is_v4())
        return "--sources needs an IPv4 target (use --sources 0 for IPv6)";
    return nullptr;
}

// ---------------------------------------------------------------------------------------------
// The minimal HTTP/1.1 response reader: status line, Content-Length, body.

enum class parse_result { need_more, done, bad };

bool iequals(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        return (x >= 'A' && x <= 'Z' ? x + 32 : x) == (y >= 'A' && y <= 'Z' ? y + 32 : y);
    });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// On `done`, `total` is the byte count of head plus body.
parse_result parse_response(std::string_view buf, int& status, std::size_t& total) {
    auto head_end = buf.find("\r\n\r\n");
    if (head_end == std::string_view::npos)
        return buf.size() > max_head_bytes ? parse_result::bad : parse_result::need_more;
    auto head = buf.substr(0, head_end + 2);
    if (head.size() < 12 || !head.starts_with("HTTP/1.")) return parse_result::bad;
    auto code = parse_number<int>(head.substr(9, 3));
    if (!code) return parse_result::bad;
    status = *code;
    std::size_t body = 0;
    auto pos = head.find("\r\n") + 2;
    while (pos < head.size()) {
        auto eol = head.find("\r\n", pos);
        auto line = head.substr(pos, eol - pos);
        pos = eol + 2;
        auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        auto name = line.substr(0, colon);
        auto value = trim(line.substr(colon + 1));
        if (iequals(name, "content-length")) {
            auto n = parse_number<std::size_t>(value);
            if (!n) return parse_result::bad;
            body = *n;
        } else if (iequals(name, "transfer-encoding")) {
            return parse_result::bad; // chunked bodies are out of scope for this tool
        }
    }
    total = head_end + 4 + body;
    return buf.size() >= total ? parse_result::done : parse_result::need_more;
}

// Leaves any bytes past the response in `buf`.
asio::awaitable<error_code> read_response(tcp::socket& socket, std::string& buf, int& status) {
    for (;;) {
        std::size_t total = 0;
        switch (parse_response(buf, status, total)) {
        case parse_result::done:
            buf.erase(0, total);
            co_return error_code{};
        case parse_result::bad:
            co_return make_error_code(boost::system::errc::bad_message);
        case parse_result::need_more:
            break;
        }
        constexpr std::size_t chunk = 4096;
        auto old = buf.size();
        buf.resize(old + chunk);
        auto [ec, n] =
            co_await socket.async_read_some(asio::buffer(buf.data() + old, chunk), use_tuple);
        buf.resize(old + n);
        if (ec) co_return ec;
    }
}

// ---------------------------------------------------------------------------------------------
// The run

enum class conn_state { opening, idle, closed, failed };

struct flood_conn {
    explicit flood_conn(asio::io_context& io) : socket(io), deadline(io) {}
    tcp::socket socket;
    asio::steady_timer deadline;
    std::string buf;
    char idle_byte = 0;
    conn_state state = conn_state::opening;
    bool timed_out = false;
    bool stray_data = false;
    time_point request_sent_at{};
    time_point last_response_at{};
    time_point closed_at{};
};

struct probe_sample {
    time_point sent;
    duration latency;
};

struct csv_sample {
    long long t_ms;
    std::size_t open;
};

// The probe: one keep-alive connection on its own thread and io_context. Everything below the
// public functions belongs to the probe thread while it runs; the flood thread reaches it only
// through start_measuring() and request_stop(), which post to the probe's io_context, and reads
// the figures only after join().
class probe_run {
public:
    explicit probe_run(const options& opt)
        : opt_(opt), target_(opt.target.endpoint()), socket_(io_), timer_(io_) {}
    probe_run(const probe_run&) = delete;
    probe_run& operator=(const probe_run&) = delete;
    ~probe_run() {
        request_stop();
        if (thread_.joinable()) thread_.join();
    }

    // Starts the probe thread, which pins itself (--probe-cpu), connects and makes one request.
    // Returns once that is done: false, having said why, when the target could not be reached.
    bool start();
    // From the flood thread: the flood went idle at `at`; requests sent from then on are samples,
    // one every probe-interval.
    void start_measuring(time_point at);
    // From any thread: closes the probe; the probe thread then ends by itself.
    void request_stop();
    // Waits for the probe thread to end and rethrows what it threw. The figures below are only
    // read after this.
    void join();

    const std::vector<probe_sample>& samples() const { return samples_; }
    std::size_t errors() const { return errors_; }
    std::size_t reconnects() const { return reconnects_; }
    std::size_t connect_failures() const { return connect_failures_; }

private:
    void thread_main();
    void set_ready(bool ok);
    asio::awaitable<void> run();
    asio::awaitable<error_code> connect();
    asio::awaitable<std::tuple<error_code, int>> exchange();
    asio::awaitable<void> loop();

    const options& opt_;
    tcp::endpoint target_;
    asio::io_context io_{1};
    tcp::socket socket_;
    asio::steady_timer timer_;
    std::string buf_;
    std::atomic<bool> stopping_{false};
    std::promise<bool> ready_;
    bool ready_set_ = false;
    std::exception_ptr failure_;

    bool measuring_ = false;
    time_point flood_idle_at_{};
    std::vector<probe_sample> samples_;
    std::size_t errors_ = 0;
    std::size_t reconnects_ = 0;
    std::size_t connect_failures_ = 0;

    std::thread thread_; // last: it runs on everything above
};

bool probe_run::start() {
    auto ready = ready_.get_future();
    thread_ = std::thread([this] { thread_main(); });
    bool ok = ready.get(); // rethrows what the probe thread threw before it was ready
    if (!ok) join();
    return ok;
}

void probe_run::start_measuring(time_point at) {
    asio::post(io_, [this, at] {
        flood_idle_at_ = at;
        measuring_ = true;
        timer_.cancel(); // from the keep-alive gap to probe-interval now
    });
}

void probe_run::request_stop() {
    if (stopping_.exchange(true)) return;
    // Whatever the probe waits on is cut short, and it checks stopping_ after every wait.
    asio::post(io_, [this] {
        error_code ignored;
        timer_.cancel();
        socket_.close(ignored);
    });
}

void probe_run::join() {
    if (thread_.joinable()) thread_.join();
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void probe_run::set_ready(bool ok) {
    if (ready_set_) return;
    ready_set_ = true;
    ready_.set_value(ok);
}

void probe_run::thread_main() {
    try {
        if (opt_.probe_cpu) {
            cpu_set_t cpus;
            CPU_ZERO(&cpus);
            CPU_SET(*opt_.probe_cpu, &cpus);
            if (int err = pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus); err != 0) {
                std::fprintf(stderr, "idle_flood: cannot pin the probe thread to CPU %u: %s\n",
                             *opt_.probe_cpu, std::strerror(err));
                set_ready(false);
                return;
            }
        }
        tool::run_until_done(io_, run());
        set_ready(false); // stopped before it was ready
    } catch (...) {
        if (ready_set_) {
            failure_ = std::current_exception();
        } else {
            ready_set_ = true;
            ready_.set_exception(std::current_exception());
        }
    }
}

asio::awaitable<void> probe_run::run() {
    // The probe is connected before the flood starts so that it is not queued behind it.
    if (auto ec = co_await connect(); ec) {
        std::fprintf(stderr, "idle_flood: cannot connect to %s: %s\n", opt_.target.text.c_str(),
                     ec.message().c_str());
        set_ready(false);
        co_return;
    }
    if (auto [ec, status] = co_await exchange(); ec || status != 200) {
        std::fprintf(stderr, "idle_flood: %s did not answer GET / with 200: %s\n",
                     opt_.target.text.c_str(),
                     ec ? ec.message().c_str() : ("status " + std::to_string(status)).c_str());
        set_ready(false);
        co_return;
    }
    set_ready(true);
    co_await loop();
}

asio::awaitable<error_code> probe_run::connect() {
    error_code ec;
    socket_.close(ec);
    buf_.clear();
    std::tie(ec) = co_await socket_.async_connect(target_, use_tuple);
    if (!ec) socket_.set_option(tcp::no_delay(true), ec);
    co_return ec;
}

asio::awaitable<std::tuple<error_code, int>> probe_run::exchange() {
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(request), use_tuple);
    int status = 0;
    if (!ec) ec = co_await read_response(socket_, buf_, status);
    co_return std::tuple{ec, status};
}

asio::awaitable<void> probe_run::loop() {
    // Before measuring starts, the probe only has to outlive the keep-alive timeout; sending every
    // millisecond then would just add load to the opening phase.
    auto keep_alive_gap =
        std::max(opt_.probe_interval, std::min<duration>(*opt_.timeout / 4, 100ms));
    bool connected = true;
    while (!stopping_) {
        if (!connected) {
            if (auto ec = co_await connect(); ec) {
                if (stopping_) break;
                ++connect_failures_;
                timer_.expires_after(std::max<duration>(opt_.probe_interval, 1ms));
                co_await timer_.async_wait(use_tuple);
                continue;
            }
            connected = true;
        }
        auto sent = clock_type::now();
        auto [ec, status] = co_await exchange();
        if (stopping_) break;
        if (ec) {
            ++reconnects_;
            connected = false;
            continue;
        }
        if (status != 200) ++errors_;
        if (measuring_ && sent >= flood_idle_at_)
            samples_.push_back({sent, clock_type::now() - sent});
        timer_.expires_after(measuring_ ? opt_.probe_interval : keep_alive_gap);
        co_await timer_.async_wait(use_tuple);
    }
}

class flood_run {
public:
    flood_run(asio::io_context& io, const options& opt, probe_run& probe)
        : io_(io), opt_(opt), target_(opt.target.endpoint()), probe_(probe), wake_(io),
          launch_timer_(io), sample_timer_(io) {}

    asio::awaitable<void> run();
    // After probe_run::join().
    void print_report() const;
    bool write_csv() const;

private:
    asio::awaitable<void> launch();
    asio::awaitable<void> drive(flood_conn& c, std::size_t index);
    void open_failed(flood_conn& c, const std::string& reason, bool was_connected);
    asio::awaitable<void> sample_loop();
    template <class Done> asio::awaitable<void> wait_until(Done done, time_point deadline);
    void notify() { wake_.cancel(); }
    void stop();

    asio::io_context& io_;
    const options& opt_;
    tcp::endpoint target_;
    probe_run& probe_;

    std::vector<std::unique_ptr<flood_conn>> conns_;
    std::size_t in_flight_ = 0; // launched, not yet idle or failed
    std::size_t open_now_ = 0;  // TCP-connected and not closed, for the CSV
    std::size_t opened_ = 0;    // reached idle
    std::size_t failed_ = 0;
    std::size_t closed_ = 0; // closed by the server after reaching idle
    std::map<std::string, std::size_t> open_errors_;

    asio::steady_timer wake_;         // the controller sleeps here; notify() wakes it
    asio::steady_timer launch_timer_; // the launcher waits here for a slot or its schedule
    asio::steady_timer sample_timer_;
    std::vector<csv_sample> csv_;
    bool stopping_ = false;

    time_point first_connect_at_{};
    time_point flood_idle_at_{};
    time_point end_at_{};
    std::optional<long> rss_before_kb_;
    std::optional<long> rss_idle_kb_;
    std::optional<long> rss_end_kb_;
    std::size_t idle_at_rss_sample_ = 0;
};

template <class Done> asio::awaitable<void> flood_run::wait_until(Done done, time_point deadline) {
    while (!done() && clock_type::now() < deadline) {
        wake_.expires_at(deadline);
        co_await wake_.async_wait(use_tuple);
    }
}

asio::awaitable<void> flood_run::run() {
    rss_before_kb_ = read_rss_kb(opt_.pid);
    conns_.reserve(opt_.connections);
    first_connect_at_ = clock_type::now();
    asio::co_spawn(io_, sample_loop(), [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);
    });
    asio::co_spawn(io_, launch(), [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);
    });
    co_await wait_until([this] { return opened_ + failed_ == opt_.connections; },
                        time_point::max());

    flood_idle_at_ = clock_type::now();
    probe_.start_measuring(flood_idle_at_);

    // Let the server finish allocating for the last arrivals before reading its RSS; stay well
    // inside the timeout so that nothing has expired yet.
    auto settle = std::min<duration>(200ms, *opt_.timeout / 4);
    co_await wait_until([] { return false; }, flood_idle_at_ + settle);
    rss_idle_kb_ = read_rss_kb(opt_.pid);
    idle_at_rss_sample_ = opened_ - closed_;

    co_await wait_until([this] { return closed_ == opened_; },
                        flood_idle_at_ + *opt_.timeout + opt_.max_wait);
    end_at_ = clock_type::now();
    rss_end_kb_ = read_rss_kb(opt_.pid);
    stop();
}

asio::awaitable<void> flood_run::launch() {
    for (std::size_t i = 0; i < opt_.connections && !stopping_; ++i) {
        if (opt_.open_rate > 0) {
            auto due = first_connect_at_ +
                       std::chrono::duration_cast<duration>(
                           std::chrono::duration<double>(static_cast<double>(i) / opt_.open_rate));
            while (clock_type::now() < due) {
                launch_timer_.expires_at(due);
                co_await launch_timer_.async_wait(use_tuple);
            }
        } else {
            while (in_flight_ >= max_connects_in_flight) {
                launch_timer_.expires_at(time_point::max());
                co_await launch_timer_.async_wait(use_tuple);
            }
        }
        ++in_flight_;
        conns_.push_back(std::make_unique<flood_conn>(io_));
        asio::co_spawn(io_, drive(*conns_.back(), i), [](const std::exception_ptr& e) {
            if (e) std::rethrow_exception(e);
        });
        // Let the event loop poll between connects: responses that arrive while a long run of
        // connects holds the loop would get a late last_response_at, which reads as an early
        // close later.
        co_await asio::post(io_, asio::use_awaitable);
    }
}

void flood_run::open_failed(flood_conn& c, const std::string& reason, bool was_connected) {
    error_code ignored;
    c.socket.close(ignored);
    c.deadline.cancel();
    c.state = conn_state::failed;
    c.buf = std::string();
    if (was_connected) --open_now_;
    --in_flight_;
    ++failed_;
    ++open_errors_[reason];
    launch_timer_.cancel();
    notify();
}

asio::awaitable<void> flood_run::drive(flood_conn& c, std::size_t index) {
    c.deadline.expires_after(open_timeout);
    c.deadline.async_wait([&c](error_code ec) {
        if (ec || c.state != conn_state::opening) return;
        c.timed_out = true;
        error_code ignored;
        c.socket.close(ignored);
    });

    error_code ec;
    c.socket.open(target_.protocol(), ec);
    if (!ec && opt_.sources > 0) {
#ifdef IP_BIND_ADDRESS_NO_PORT
        // Defer the port choice to connect(), where the kernel can reuse a port across
        // destinations instead of reserving it at bind().
        int one = 1;
        ::setsockopt(c.socket.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
                     sizeof one);
#endif
        auto source = asio::ip::address_v4(
            static_cast<asio::ip::address_v4::uint_type>(0x7F000002u + index % opt_.sources));
        c.socket.bind(tcp::endpoint(source, 0), ec);
    }
    if (!ec) std::tie(ec) = co_await c.socket.async_connect(target_, use_tuple);
    if (ec) {
        open_failed(c, c.timed_out ? "open timeout" : "connect: " + ec.message(), false);
        co_return;
    }
    ++open_now_;
    c.request_sent_at = clock_type::now();
    std::tie(ec, std::ignore) =
        co_await asio::async_write(c.socket, asio::buffer(request), use_tuple);
    int status = 0;
    if (!ec) ec = co_await read_response(c.socket, c.buf, status);
    if (ec || status != 200) {
        open_failed(c,
                    c.timed_out ? "open timeout"
                    : ec        ? "request: " + ec.message()
                                : "HTTP status " + std::to_string(status),
                    true);
        co_return;
    }
    c.last_response_at = clock_type::now();
    c.deadline.cancel();
    c.state = conn_state::idle;
    c.buf = std::string(); // release it: 15000 idle buffers would distort nothing but our RSS
    --in_flight_;
    ++opened_;
    launch_timer_.cancel();
    notify();

    auto [read_ec, n] = co_await c.socket.async_read_some(asio::buffer(&c.idle_byte, 1), use_tuple);
    auto now = clock_type::now();
    if (stopping_) co_return; // our own close at the end: the server never closed this one
    c.closed_at = now;
    c.state = conn_state::closed;
    c.stray_data = !read_ec && n > 0;
    error_code ignored;
    c.socket.close(ignored);
    --open_now_;
    ++closed_;
    notify();
}

asio::awaitable<void> flood_run::sample_loop() {
    auto next = first_connect_at_;
    while (!stopping_) {
        auto now = clock_type::now();
        csv_.push_back(
            {std::chrono::duration_cast<std::chrono::milliseconds>(now - first_connect_at_).count(),
             open_now_});
        next += csv_period;
        if (next < now) next = now; // fell behind: do not burst to catch up
        sample_timer_.expires_at(next);
        co_await sample_timer_.async_wait(use_tuple);
    }
}

void flood_run::stop() {
    stopping_ = true;
    csv_.push_back(
        {std::chrono::duration_cast<std::chrono::milliseconds>(end_at_ - first_connect_at_).count(),
         open_now_});
    error_code ignored;
    probe_.request_stop();
    launch_timer_.cancel();
    sample_timer_.cancel();
    wake_.cancel();
    for (auto& c : conns_) {
        c->deadline.cancel();
        if (c->state == conn_state::idle || c->state == conn_state::opening)
            c->socket.close(ignored);
    }
}

// ---------------------------------------------------------------------------------------------
// Report

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

std::string number(std::optional<double> v, int decimals = 3) {
    if (!v) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, *v);
    return buf;
}

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
    }
    return out + "\"";
}

struct summary {
    std::optional<double> min, p50, p99, max;
    std::size_t count = 0;
};

summary summarize(std::vector<double> values) {
    summary s;
    s.count = values.size();
    if (values.empty()) return s;
    std::sort(values.begin(), values.end());
    s.min = values.front();
    s.p50 = percentile(values, 0.50);
    s.p99 = percentile(values, 0.99);
    s.max = values.back();
    return s;
}

void flood_run::print_report() const {
    const duration timeout = *opt_.timeout;
    std::size_t early = 0, certainly_early = 0, never_closed = 0, stray = 0;
    std::vector<double> lateness;
    std::optional<time_point> first_close, last_close;
    for (const auto& c : conns_) {
        if (c->state == conn_state::idle) ++never_closed;
        if (c->state != conn_state::closed) continue;
        auto idle_for = c->closed_at - c->last_response_at;
        if (idle_for < timeout) ++early;
        // The response cannot have left the server before the request was sent, nor the close
        // after we saw it: under this bound the server surely closed early, whatever our own
        // scheduling delays were.
        if (c->closed_at - c->request_sent_at < timeout) ++certainly_early;
        if (c->stray_data) ++stray;
        lateness.push_back(to_ms(idle_for - timeout));
        if (!first_close || c->closed_at < *first_close) first_close = c->closed_at;
        if (!last_close || c->closed_at > *last_close) last_close = c->closed_at;
    }
    auto late = summarize(std::move(lateness));

    // The window is the flood thread's [first close, last close]; the samples' send times are on
    // the same steady clock, taken on the probe thread. The baseline is as many requests, the
    // last ones answered before the first close: the same server, the same connections, no
    // expiry. A worst case is only read against it (what the machine's own jitter gives in as
    // many tries), never alone.
    std::vector<double> latencies, during, quiet;
    for (const auto& s : probe_.samples()) {
        latencies.push_back(to_ms(s.latency));
        if (!first_close) continue;
        // Any request in flight at some point of the window counts.
        if (s.sent <= *last_close && s.sent + s.latency >= *first_close)
            during.push_back(to_ms(s.latency));
        else if (s.sent + s.latency < *first_close)
            quiet.push_back(to_ms(s.latency));
    }
    if (quiet.size() > during.size())
        quiet.erase(quiet.begin(), quiet.end() - static_cast<std::ptrdiff_t>(during.size()));
    auto probe = summarize(std::move(latencies));
    auto window = summarize(std::move(during));
    auto baseline = summarize(std::move(quiet));

    std::optional<double> rss_per_conn;
    if (rss_before_kb_ && rss_idle_kb_ && idle_at_rss_sample_ > 0)
        rss_per_conn = static_cast<double>(*rss_idle_kb_ - *rss_before_kb_) * 1024.0 /
                       static_cast<double>(idle_at_rss_sample_);
    auto kb = [](std::optional<long> v) { return v ? std::to_string(*v) : std::string("null"); };
    auto since_idle = [this](std::optional<time_point> t) -> std::optional<double> {
        if (!t) return std::nullopt;
        return to_ms(*t - flood_idle_at_);
    };
    const double open_phase_ms = to_ms(flood_idle_at_ - first_connect_at_);

    if (opt_.json) {
        std::string errors = "{";
        for (const auto& [reason, count] : open_errors_) {
            if (errors.size() > 1) errors += ",";
            errors += json_string(reason) + ":" + std::to_string(count);
        }
        errors += "}";
        std::printf(
            "{\"target\":%s,\"connections\":%zu,\"sources\":%u,\"timeout_ms\":%s,"
            "\"closed_before_timeout\":%zu,\"closed_before_timeout_certain\":%zu,\"opened\":%zu,"
            "\"failed_to_open\":%zu,"
            "\"open_errors\":%s,\"closed\":%zu,\"never_closed\":%zu,\"closed_with_data\":%zu,"
            "\"open_phase_ms\":%s,\"lateness_ms\":{\"min\":%s,\"p50\":%s,\"p99\":%s,\"max\":%s},"
            "\"expiry_window_ms\":{\"first_close\":%s,\"last_close\":%s},"
            "\"rss_before_kb\":%s,\"rss_idle_kb\":%s,\"rss_end_kb\":%s,"
            "\"rss_per_idle_conn_bytes\":%s,\"idle_at_rss_sample\":%zu,"
            "\"probe\":{\"requests\":%zu,\"non_200\":%zu,\"reconnects\":%zu,"
            "\"connect_failures\":%zu,\"latency_ms\":{\"p50\":%s,\"p99\":%s,\"max\":%s},"
            "\"expiry_window_requests\":%zu,\"expiry_window_max_ms\":%s,"
            "\"expiry_window_p99_ms\":%s,\"baseline_requests\":%zu,\"baseline_max_ms\":%s,"
            "\"baseline_p99_ms\":%s}}\n",
            json_string(opt_.target.text).c_str(), opt_.connections, opt_.sources,
            number(to_ms(timeout)).c_str(), early, certainly_early, opened_, failed_,
            errors.c_str(), closed_, never_closed, stray, number(open_phase_ms).c_str(),
            number(late.min).c_str(), number(late.p50).c_str(), number(late.p99).c_str(),
            number(late.max).c_str(), number(since_idle(first_close)).c_str(),
            number(since_idle(last_close)).c_str(), kb(rss_before_kb_).c_str(),
            kb(rss_idle_kb_).c_str(), kb(rss_end_kb_).c_str(), number(rss_per_conn, 0).c_str(),
            idle_at_rss_sample_, probe.count, probe_.errors(), probe_.reconnects(),
            probe_.connect_failures(), number(probe.p50).c_str(), number(probe.p99).c_str(),
            number(probe.max).c_str(), window.count, number(window.max).c_str(),
            number(window.p99).c_str(), baseline.count, number(baseline.max).c_str(),
            number(baseline.p99).c_str());
        return;
    }

    std::printf("idle_flood %s: %zu connections over %u source address(es), timeout %s ms\n",
                opt_.target.text.c_str(), opt_.connections, opt_.sources,
                number(to_ms(timeout), 0).c_str());
    std::printf("%s closed_before_timeout: %zu of %zu idle connections%s\n",
                early ? "!!" : "==", early, opened_,
                early ? "   <-- the server closed connections before their keep-alive timeout"
                      : "   (correct)");
    std::printf("   closed_before_timeout_certain: %zu (closed_at - request_sent_at < timeout); "
                "earliest close %s ms before the timeout\n",
                certainly_early, number(late.min ? -*late.min : late.min).c_str());
    std::printf("connections: opened %zu, failed_to_open %zu, closed %zu, never_closed %zu, "
                "closed_with_data %zu\n",
                opened_, failed_, closed_, never_closed, stray);
    for (const auto& [reason, count] : open_errors_)
        std::printf("  open error: %s x%zu\n", reason.c_str(), count);
    std::printf("open phase: %s ms%s\n", number(open_phase_ms, 1).c_str(),
                open_phase_ms >= to_ms(timeout) ? "  (longer than the timeout: the first "
                                                  "connections expired before the last opened)"
                                                : "");
    std::printf("lateness ms (closed_at - last_response_at - timeout): min %s p50 %s p99 %s "
                "max %s\n",
                number(late.min).c_str(), number(late.p50).c_str(), number(late.p99).c_str(),
                number(late.max).c_str());
    std::printf("expiry window: first close %s ms, last close %s ms after the flood went idle\n",
                number(since_idle(first_close), 1).c_str(),
                number(since_idle(last_close), 1).c_str());
    std::printf("rss kB: before %s, idle %s, end %s; per idle connection %s bytes (%zu idle)\n",
                kb(rss_before_kb_).c_str(), kb(rss_idle_kb_).c_str(), kb(rss_end_kb_).c_str(),
                number(rss_per_conn, 0).c_str(), idle_at_rss_sample_);
    std::printf("probe: %zu requests (%zu non-200), latency ms p50 %s p99 %s max %s; "
                "reconnects %zu (failed connects %zu)\n",
                probe.count, probe_.errors(), number(probe.p50).c_str(), number(probe.p99).c_str(),
                number(probe.max).c_str(), probe_.reconnects(), probe_.connect_failures());
    std::printf("probe during expiry window: %zu requests, p99 %s ms, worst %s ms\n", window.count,
                number(window.p99).c_str(), number(window.max).c_str());
    std::printf("probe just before it (baseline): %zu requests, p99 %s ms, worst %s ms\n",
                baseline.count, number(baseline.p99).c_str(), number(baseline.max).c_str());
}

bool flood_run::write_csv() const {
    if (opt_.csv_path.empty()) return true;
    std::ofstream out(opt_.csv_path);
    out << "t_ms,open_connections\n";
    for (const auto& s : csv_)
        out << s.t_ms << ',' << s.open << '\n';
    out.close();
    if (!out) {
        std::fprintf(stderr, "idle_flood: cannot write %s\n", opt_.csv_path.c_str());
        return false;
    }
    return true;
}

// main()'s body once the command line is read.
int flood(const options& opt) {
    if (opt.pid > 0 && !read_rss_kb(opt.pid)) {
        std::fprintf(stderr, "idle_flood: cannot read VmRSS from /proc/%ld/status\n", opt.pid);
        return 1;
    }
    if (opt.probe_interval >= *opt.timeout)
        std::fprintf(stderr, "idle_flood: warning: --probe-interval is not shorter than "
                             "--timeout; the server will close the probe between requests\n");
    // Declared first, destroyed last: its destructor stops and joins the probe thread, also when
    // the flood throws.
    probe_run probe(opt);
    if (!probe.start()) return 1;
    asio::io_context io(1);
    flood_run run(io, opt, probe);
    tool::run_until_done(io, run.run());
    probe.request_stop(); // the flood's stop() did already, unless it threw
    probe.join();
    run.print_report();
    run.write_csv();
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return tool::run_main({"idle_flood", usage, 1, spare_fds, {"--json"}}, argc, argv, read_flag,
                          check, flood);
}

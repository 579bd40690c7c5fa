// What the load tools (idle_flood, slow_readers, ws_echo) share: their command line (numbers,
// --target HOST:PORT and --connections N, the walk over argv), their main() (the usage and error
// exits, the limit on open files, an exception's message), a tally of connection errors, and a
// process's VmRSS; and the names (asio, tcp, ...) they are written with. Header-only: each tool
// stays one .cpp.
//
// A tool names what is its own, and tool::run_main does the rest:
//
//   struct options {
//       tool::target target;             // --target, read by run_main
//       std::size_t connections = 1000;  // --connections, read by run_main
//       std::size_t size = 64;
//   };
//   void read_flag(options& opt, tool::arg_walker& args) {  // every other flag
//       if (args.flag() == "--size") {
//           auto n = tool::parse_number<std::size_t>(args.value());
//           if (!n || *n == 0) return args.bad("expected a positive size");
//           opt.size = *n;
//       } else {
//           args.unknown_flag();
//       }
//   }
//   const char* check(const options& opt) {  // the options together, once all are read
//       return opt.target.address.is_loopback() ? nullptr : "--target must be a loopback address";
//   }
//   int main(int argc, char** argv) {
//       return tool::run_main({"name", usage_text, 2, spare_fds}, argc, argv, read_flag, check,
//                             [](const options& opt) { ...; return 0; });
//   }
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/resource.h>

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace tool {

// ---------------------------------------------------------------------------------------------
// Command line

// The whole of `text` as a Number (an integer type or double), or nothing.
template <class Number> std::optional<Number> parse_number(std::string_view text) {
    Number value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// The server a tool connects to. `text` is the HOST:PORT as given, also sent as the Host header.
struct target {
    boost::asio::ip::address address = boost::asio::ip::make_address_v4("127.0.0.1");
    std::uint16_t port = 8080;
    std::string text = "127.0.0.1:8080";

    boost::asio::ip::tcp::endpoint endpoint() const { return {address, port}; }
};

// Reads a numeric HOST:PORT ("127.0.0.1:8080", "[::1]:8080", "localhost:8080" for 127.0.0.1)
// into `t`; false, leaving `t` as it was, when the host is no address or the port is not 1..65535.
inline bool parse_target(std::string_view text, target& t) {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    std::string host(text.substr(0, colon));
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    auto port = parse_number<std::uint16_t>(text.substr(colon + 1));
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(host, ec);
    if (ec || !port || *port == 0) return false;
    t.address = address;
    t.port = *port;
    t.text = std::string(text);
    return true;
}

// Walks argv one flag at a time. A flag takes a value, the rest of the argument after '='
// (`--flag=value`) or else the next argument (`--flag value`), unless it is one of `switches`.
// The first error ends the walk: next() returns false, failed() true, and the error message is
// set (left empty for --help).
class arg_walker {
public:
    arg_walker(int argc, char** argv, std::string& error,
               std::vector<std::string_view> switches = {})
        : argc_(argc), argv_(argv), error_(error), switches_(std::move(switches)) {}

    // Moves to the next flag and its value. False after the last, on --help or -h, and for a
    // flag without its value ("missing value or unknown flag: FLAG").
    bool next() {
        if (failed_ || ++i_ >= argc_) return false;
        flag_ = argv_[i_];
        value_ = {};
        bool has_value = false;
        if (auto eq = flag_.find('='); eq != std::string_view::npos && flag_.starts_with("--")) {
            value_ = flag_.substr(eq + 1);
            flag_ = flag_.substr(0, eq);
            has_value = true;
        }
        if (flag_ == "--help" || flag_ == "-h") {
            fail({});
            return false;
        }
        for (auto s : switches_)
            if (flag_ == s) return true;
        if (!has_value) {
            if (i_ + 1 >= argc_) {
                fail("missing value or unknown flag: " + std::string(flag_));
                return false;
            }
            value_ = argv_[++i_];
        }
        return true;
    }

    std::string_view flag() const { return flag_; }
    std::string_view value() const { return value_; }
    bool failed() const { return failed_; }

    // --target HOST:PORT and --connections N (a positive count), which every tool takes alike:
    // true when the flag is one of them, its value read into `t` or `connections` (or the error
    // set).
    bool common_flag(target& t, std::size_t& connections) {
        if (flag_ == "--target") {
            if (!parse_target(value_, t)) bad("expected numeric HOST:PORT");
            return true;
        }
        if (flag_ == "--connections") {
            auto n = parse_number<std::size_t>(value_);
            if (n && *n > 0)
                connections = *n;
            else
                bad("expected a positive count");
            return true;
        }
        return false;
    }

    // The errors; each ends the walk. "unknown flag: FLAG"; for a value the flag does not take,
    // "WHAT: FLAG VALUE"; or any message.
    void unknown_flag() { fail("unknown flag: " + std::string(flag_)); }
    void bad(std::string_view what) {
        fail(std::string(what) + ": " + std::string(flag_) + " " + std::string(value_));
    }
    void fail(std::string message) {
        error_ = std::move(message);
        failed_ = true;
    }

private:
    int argc_;
    char** argv_;
    std::string& error_;
    std::vector<std::string_view> switches_;
    int i_ = 0;
    std::string_view flag_;
    std::string_view value_;
    bool failed_ = false;
};

// What main() knows of a tool.
struct info {
    const char* name;      // its messages begin "NAME: "
    const char* usage;     // --help prints it, and a bad command line after the error
    int usage_status;      // main's status for a bad command line
    std::size_t spare_fds; // descriptors it needs beyond one per connection
    std::vector<std::string_view> switches = {}; // its flags without a value, such as --json
};

// Reads the tool's own flag at args.flag(), with its value at args.value(), into `opt`: on a
// value the flag does not take, args.bad(...); on a flag it does not know, args.unknown_flag().
template <class Options> using read_flag_function = void (*)(Options& opt, arg_walker& args);
// What is wrong with the options as a whole, once every flag is read; nullptr when nothing.
template <class Options> using check_function = const char* (*)(const Options& opt);

// The options from argv: --target and --connections into opt.target and opt.connections, every
// other flag through read_flag, then check. Nothing when the tool is not to run, with the error
// (empty for --help).
template <class Options>
std::optional<Options> parse_args(const info& tool, int argc, char** argv, std::string& error,
                                  read_flag_function<Options> read_flag,
                                  check_function<Options> check) {
    Options opt;
    arg_walker args(argc, argv, error, tool.switches);
    while (args.next())
        if (!args.common_flag(opt.target, opt.connections)) read_flag(opt, args);
    if (!args.failed())
        if (const char* problem = check(opt)) args.fail(problem);
    if (args.failed()) return std::nullopt;
    return opt;
}

// ---------------------------------------------------------------------------------------------
// main()

// Raises the soft limit on open files to the hard limit, and says (on stderr) when even that is
// fewer than `connections` plus `spare_fds`.
inline bool ensure_fd_limit(const char* tool_name, std::size_t connections, std::size_t spare_fds) {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    if (connections + spare_fds > lim.rlim_cur) {
        std::fprintf(stderr,
                     "%s: %zu connections need %zu file descriptors, but the limit is %llu (hard "
                     "limit %llu); raise it with ulimit -Hn or use fewer connections\n",
                     tool_name, connections, connections + spare_fds,
                     static_cast<unsigned long long>(lim.rlim_cur),
                     static_cast<unsigned long long>(lim.rlim_max));
        return false;
    }
    return true;
}

// The whole of a tool's main(). The options (parse_args); when there are none, the usage on
// stdout and 0 for --help, else "NAME: ERROR" and the usage on stderr and tool.usage_status.
// Then the limit on open files raised for opt.connections (1 when it cannot be), and body(opt)'s
// status, or 1 with "NAME: WHAT" on stderr when body throws.
template <class Options, class Body>
int run_main(const info& tool, int argc, char** argv, read_flag_function<Options> read_flag,
             check_function<Options> check, Body body) {
    std::string error;
    const std::optional<Options> opt = parse_args(tool, argc, argv, error, read_flag, check);
    if (!opt && error.empty()) {
        std::fputs(tool.usage, stdout);
        return 0;
    }
    if (!opt) {
        std::fprintf(stderr, "%s: %s\n", tool.name, error.c_str());
        std::fputs(tool.usage, stderr);
        return tool.usage_status;
    }
    if (!ensure_fd_limit(tool.name, opt->connections, tool.spare_fds)) return 1;
    try {
        return body(*opt);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", tool.name, e.what());
        return 1;
    }
}

// Runs `io` until the coroutine `main` is done; what it throws comes out of here.
template <class Awaitable> void run_until_done(boost::asio::io_context& io, Awaitable main) {
    boost::asio::co_spawn(io, std::move(main), [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);
    });
    io.run();
}

// A body for run_main when the tool's work is one Run object, made of (io_context&, const
// Options&), whose coroutine main() does it all on one thread: 0 when its ok() says so, else 1.
template <class Run, class Options> int run_on_io(const Options& opt) {
    boost::asio::io_context io(1);
    Run run(io, opt);
    run_until_done(io, run.main());
    return run.ok() ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// While it runs

// Errors counted by their text, in the order first seen: a tool prints one line per kind rather
// than one per connection.
class error_tally {
public:
    void note(std::string what) {
        for (auto& [text, n] : counts_)
            if (text == what) {
                ++n;
                return;
            }
        counts_.emplace_back(std::move(what), 1);
    }

    // Prints "PREFIX: N x WHAT" on stderr for each kind, and forgets them.
    void print(const std::string& prefix) {
        for (const auto& [what, n] : counts_)
            std::fprintf(stderr, "%s: %zu x %s\n", prefix.c_str(), n, what.c_str());
        counts_.clear();
    }

private:
    std::vector<std::pair<std::string, std::size_t>> counts_;
};

// VmRSS of process `pid` in kB, from /proc/PID/status; nothing for pid <= 0 or when unreadable.
inline std::optional<long> read_rss_kb(long pid) {
    if (pid <= 0) return std::nullopt;
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (!line.starts_with("VmRSS:")) continue;
        auto digits = line.find_first_of("0123456789");
        if (digits == std::string::npos) return std::nullopt;
        return parse_number<long>(std::string_view(line).substr(
            digits, line.find_first_not_of("0123456789", digits) - digits));
    }
    return std::nullopt;
}

// The names the tools are written with, for their `using namespace tool::names;`.
namespace names {
namespace asio = boost::asio;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
// The completion token of their coroutines: co_await gives a tuple (error_code first), no throw.
inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
using tool::parse_number;
using tool::read_rss_kb;
} // namespace names

} // namespace tool

// The tarry binary as users run it: exit statuses, one-line config errors, signals.
#include "tarry_process.hpp"

#include <tarry/server/config.hpp>
#include <tarry/server/exit_status.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace tarry::test {
namespace {

using result = run_result;

std::filesystem::path write_file(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("tarry_bin_" + std::to_string(::getpid()) + "_" + name);
    std::ofstream(path) << text;
    return path;
}

TEST(BinaryTest, VersionAndHelp) {
    auto v = run_tarry("--version");
    EXPECT_EQ(v.status, 0);
    EXPECT_NE(v.output.find("tarry "), std::string::npos);
    EXPECT_NE(v.output.find("(commit "), std::string::npos) << v.output;
    EXPECT_NE(v.output.find("Boost 1."), std::string::npos) << v.output;
    EXPECT_NE(v.output.find("spdlog "), std::string::npos) << v.output;
    auto h = run_tarry("--help");
    EXPECT_EQ(h.status, 0);
    EXPECT_NE(h.output.find("--keep-alive-timeout"), std::string::npos);
}

// Roff writes a dash as "\-".
std::string unescape_roff(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 2, "\\-") == 0) {
            out += '-';
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

TEST(BinaryTest, ManPrintsTheManualNamingEveryKeyAndFlag) {
    auto r = run_tarry("--man");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.output.rfind(".TH TARRY 8 ", 0), 0U) << r.output.substr(0, 80);
    const std::string text = unescape_roff(r.output);
    for (const server::setting& s : server::settings()) {
        if (!s.flag.empty()) {
            EXPECT_NE(text.find("\\fB" + std::string(s.flag) + "\\fR"), std::string::npos)
                << s.flag;
        }
        if (!s.key.empty()) {
            EXPECT_NE(text.find("\\fB" + std::string(s.key) + "\\fR"), std::string::npos) << s.key;
        }
    }
    for (const server::route_setting& s : server::route_settings())
        EXPECT_NE(text.find("\\fB" + std::string(s.key) + "\\fR"), std::string::npos) << s.key;
    for (const server::upstream_setting& s : server::upstream_settings())
        EXPECT_NE(text.find("\\fB" + std::string(s.key) + "\\fR"), std::string::npos) << s.key;
    // --help lists every flag, this one too.
    EXPECT_NE(run_tarry("--help").output.find("--man"), std::string::npos);
}

TEST(BinaryTest, ManPageIsCleanRoff) {
    if (!std::filesystem::exists("/usr/bin/groff")) GTEST_SKIP() << "groff is not installed";
    // -ww: every warning; -z: no output. Anything printed is a roff problem.
    const std::string cmd = std::string(TARRY_BINARY) + " --man | /usr/bin/groff -man -ww -z 2>&1";
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    EXPECT_EQ(::pclose(p), 0);
    EXPECT_EQ(out, "");
}

TEST(BinaryTest, ProxyConflictExitsTwo) {
    auto r = run_tarry("--check-config --proxy 127.0.0.1:3000 --docroot /srv");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.output, "tarry: --proxy: conflicts with docroot, which also answers \"/\"\n");
    EXPECT_EQ(run_tarry("--check-config --proxy 127.0.0.1:3000").status, 0);
}

TEST(BinaryTest, BadFlagValueExitsTwoNamingTheFlag) {
    auto r = run_tarry("--keep-alive-timeout 65");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("--keep-alive-timeout"), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(BinaryTest, UnknownFlagExitsTwo) {
    auto r = run_tarry("--keepalive 5s");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("--keepalive"), std::string::npos) << r.output;
}

TEST(BinaryTest, BadConfigFileNamesKeyAndLine) {
    const auto f = write_file("bad.toml", "# tarry\nworkers = 1\nheader_timeout = \"sixty\"\n");
    auto r = run_tarry("--check-config --config " + f.string());
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find(":3:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("header_timeout"), std::string::npos) << r.output;
    std::filesystem::remove(f);
}

TEST(BinaryTest, UnknownKeyInConfigFile) {
    const auto f = write_file("unknown.toml", "keepalive_timeout = \"5s\"\n");
    auto r = run_tarry("--config " + f.string());
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("keepalive_timeout"), std::string::npos) << r.output;
    std::filesystem::remove(f);
}

TEST(BinaryTest, CheckConfigAcceptsTheExample) {
    auto r = run_tarry("--check-config --config " + std::string(TARRY_EXAMPLE_CONFIG));
    EXPECT_EQ(r.status, 0) << r.output;
}

TEST(BinaryTest, CheckConfigRefusesWhatAStartWouldRefuse) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("tarry_pre_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "www");
    std::ofstream(dir / "file") << "x";
    const std::string d = dir.string();
    const std::vector<std::pair<std::string, std::string>> cases{
        {"--docroot " + d + "/missing", "tarry: docroot: " + d + "/missing does not exist"},
        {"--docroot " + d + "/file", "tarry: docroot: " + d + "/file is not a directory"},
        {"--access-log " + d + "/nodir/access.log",
         "tarry: access_log: the directory " + d + "/nodir does not exist"},
        {"--listen unix:" + d + "/nodir/t.sock", "tarry: listen: unix:" + d +
                                                     "/nodir/t.sock: the directory " + d +
                                                     "/nodir does not exist"},
        {"--listen 'unix:" + d + "/t.sock owner=no-such-user-here'",
         "tarry: listen: unix:" + d +
             "/t.sock: owner=no-such-user-here: no user no-such-user-here"},
        {"--listen 'unix:" + d + "/t.sock owner=root:no-such-group-here'",
         "tarry: listen: unix:" + d +
             "/t.sock: owner=root:no-such-group-here: no group no-such-group-here"},
        // TEST-NET-1: an address this machine does not have.
        {"--listen 192.0.2.1:8080", "tarry: listen: 192.0.2.1:8080: this machine has no such "
                                    "address"},
        {"--listen 127.0.0.1:0 --admin-listen 192.0.2.1:9090",
         "tarry: admin_listen: 192.0.2.1:9090: this machine has no such address"},
    };
    for (const auto& [args, line] : cases) {
        const result r = run_tarry("--check-config " + args);
        EXPECT_EQ(r.status, 2) << args << ": " << r.output;
        EXPECT_EQ(r.output, line + "\n") << args;
        // A start says the same, at once.
        const result start = run_tarry(
            (args.find("--listen") == std::string::npos ? "--listen 127.0.0.1:0 " : "") + args);
        EXPECT_EQ(start.status, 2) << args << ": " << start.output;
        EXPECT_EQ(start.output, line + "\n") << args;
    }
    const auto route =
        write_file("route.toml", "[[route]]\nprefix = \"/s/\"\ndocroot = \"" + d + "/gone\"\n");
    const result r = run_tarry("--check-config --config " + route.string());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("route[1].docroot: " + d + "/gone does not exist"), std::string::npos)
        << r.output;
    EXPECT_EQ(
        run_tarry("--check-config --docroot " + d + "/www --access-log " + d + "/a.log").status, 0);
    std::filesystem::remove(route);
    std::filesystem::remove_all(dir);
}

/// The admin endpoint's metrics ("" when it does not answer).
std::string metrics_of(std::uint16_t admin) {
    test_client c(admin);
    if (!c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")) return "";
    const auto r = c.read_response();
    return r ? r->body : "";
}

/// Connections whose request head the server has begun to read, by its metrics.
double reading_heads(std::uint16_t admin) {
    return sample(metrics_of(admin), "tarry_connections_by_phase{phase=\"header\"}");
}

/// tarry on `port` with `args`, as a child process killed when destroyed; once it listens.
std::unique_ptr<child_process> start_tarry(std::uint16_t port, std::vector<std::string> args) {
    args.insert(args.begin(), {TARRY_BINARY, "--listen", "127.0.0.1:" + std::to_string(port)});
    child_options o;
    o.stop_signal = SIGKILL;
    auto p = std::make_unique<child_process>(std::move(args), o);
    EXPECT_TRUE(eventually([&] { return test_client(port).connected(); }, 10s))
        << "it did not listen";
    return p;
}

TEST(BinaryTest, SigtermWithARequestInFlightAnswersItAndExitsZero) {
    const std::uint16_t port = free_port();
    const std::uint16_t admin = free_port();
    auto p = start_tarry(port, {"--workers", "1", "--log-level", "warn", "--admin-listen",
                                "127.0.0.1:" + std::to_string(admin)});
    test_client c(port);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: t\r\n"));
    ASSERT_TRUE(eventually([&] { return reading_heads(admin) == 1; })) << metrics_of(admin);
    p->signal(SIGTERM);
    // The stop has begun: the listener is closed.
    ASSERT_TRUE(eventually([&] { return !test_client(port).connected(); }));
    ASSERT_TRUE(c.send("\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_EQ(p->wait(), 0) << "ended by signal " << p->end_signal();
}

TEST(BinaryTest, ABurstOfStopSignalsEndsTheProcessWithExitZero) {
    // An operator's repeated Ctrl-C, or two supervisors each sending SIGTERM: signals keep
    // coming while the process stops and ends. It ends, with 0: a signal caught just before
    // the stop completed once made it wait for signals for good (no workers left), and one
    // arriving as it ended, once the signal set was gone, killed it by the default action.
    for (int round = 0; round < 10; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        auto p = start_tarry(free_port(), {"--workers", "2", "--log-level", "error"});
        const auto deadline = steady::now() + 30s;
        while (p->running() && steady::now() < deadline) {
            p->signal(round % 2 == 0 ? SIGTERM : SIGINT);
            std::this_thread::sleep_for(std::chrono::microseconds(200)); // the burst's pace
        }
        ASSERT_FALSE(p->running()) << "still running 30 s into a burst of stop signals";
        EXPECT_EQ(p->end_signal(), 0) << "ended by signal";
        EXPECT_EQ(p->exit_code(), 0);
    }
}

TEST(BinaryTest, ASecondStopSignalEndsADrainHeldOpenByARequestAtOnce) {
    // The operator's second Ctrl-C: the first starts a drain that a request cut mid-header
    // would hold for the whole drain_timeout; the second stops every worker's loop from the
    // main thread (io_context::stop()), which must wake a loop blocked in its wait.
    const std::uint16_t port = free_port();
    const std::uint16_t admin = free_port();
    auto p = start_tarry(port, {"--workers", "2", "--drain-timeout", "1h", "--log-level", "error",
                                "--admin-listen", "127.0.0.1:" + std::to_string(admin)});
    test_client c(port);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: t\r\n")); // and nothing more
    ASSERT_TRUE(eventually([&] { return reading_heads(admin) == 1; })) << metrics_of(admin);
    p->signal(SIGTERM);
    ASSERT_TRUE(eventually([&] { return !test_client(port).connected(); })); // the drain began
    std::this_thread::sleep_for(300ms); // by design: a while into the drain, it still runs
    EXPECT_TRUE(p->running()) << "the drain waits for the request";
    p->signal(SIGTERM);
    // Far sooner than the hour of drain_timeout.
    ASSERT_TRUE(p->wait_for(60s)) << "still draining 60 s after the second signal";
    EXPECT_EQ(p->end_signal(), 0) << "ended by signal";
}

TEST(BinaryTest, AnAccessLogLineReachesTheFileWhileTheServerRuns) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("tarry_log_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto log = dir / "access.log";
    tarry_process t({"--workers", "2", "--access-log", log.string()});
    test_client c(t.port());
    ASSERT_TRUE(c.send("GET /first HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(c.read_response().has_value());
    // Flushed within a second of the response, not only as the process ends.
    EXPECT_TRUE(eventually([&] {
        return slurp(log).find("\"GET /first HTTP/1.1\" 200") != std::string::npos;
    })) << "not in the file while the server runs";
    EXPECT_EQ(t.stop(), 0);
    std::filesystem::remove_all(dir);
}

TEST(BinaryTest, SigusrOneWithoutAnAccessLogKeepsServing) {
    tarry_process t({"--workers", "1"});
    ::kill(t.pid(), SIGUSR1); // whenever it is handled, the exit status below tells
    test_client c(t.port());
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value()) << "SIGUSR1 must not terminate tarry";
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(t.stop(), 0);
}

TEST(BinaryTest, ThePidFileHoldsTheProcessIdWhileItRunsAndGoesAtExit) {
    scratch_dir dir("pid_file");
    const auto pid = dir / "tarry.pid";
    tarry_process t({"--workers", "1", "--pid-file", pid.string()});
    // Written once the server is built, just after its sockets listen (a connect can succeed
    // before): waited for.
    const std::string own = std::to_string(t.pid()) + "\n";
    EXPECT_TRUE(eventually([&] { return slurp(pid) == own; })) << slurp(pid);
    EXPECT_FALSE(std::filesystem::exists(dir / "tarry.pid.new"));
    EXPECT_EQ(t.stop(), 0);
    EXPECT_FALSE(std::filesystem::exists(pid)) << "removed at exit";

    // Another process's number (a second tarry started on the same file) is left in place.
    tarry_process first({"--workers", "1", "--pid-file", pid.string()});
    const std::string first_own = std::to_string(first.pid()) + "\n";
    ASSERT_TRUE(eventually([&] { return slurp(pid) == first_own; })) << slurp(pid);
    std::ofstream(pid) << "1\n";
    EXPECT_EQ(first.stop(), 0);
    EXPECT_EQ(slurp(pid), "1\n");

    // A directory that is not there: refused by --check-config and at start, naming the key.
    const auto r = run_tarry("--check-config --pid-file " + (dir / "none/tarry.pid").string());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("pid_file: the directory"), std::string::npos) << r.output;
}

TEST(BinaryTest, LogrotateWithTheShippedFileUnderLoadLosesAndRepeatsNoLine) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("tarry_rotate_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto log = dir / "access.log";
    const auto pid = dir / "tarry.pid";
    tarry_process t({"--workers", "2", "--access-log", log.string(), "--pid-file", pid.string()});
    // The shipped file, pointed at this directory and at this process's pid file (the unit's
    // /run/tarry/tarry.pid in the package): the signal goes through the pid file, as where
    // systemd does not run tarry.
    std::string conf = slurp(TARRY_LOGROTATE);
    conf = std::regex_replace(conf, std::regex("/var/log/tarry/"), dir.string() + "/");
    conf = std::regex_replace(conf, std::regex("/run/tarry/tarry.pid"), pid.string());
    ASSERT_NE(conf.find(pid.string()), std::string::npos) << conf;
    const std::string own = std::to_string(t.pid()) + "\n";
    ASSERT_TRUE(eventually([&] { return slurp(pid) == own; })) << slurp(pid); // see above
    std::ofstream(dir / "logrotate.conf") << conf;

    // Two keep-alive clients, each request with a target of its own, until told to stop.
    std::atomic<bool> go{true};
    std::atomic<int> answered{0};
    std::vector<std::thread> load;
    for (int k = 0; k < 2; ++k) {
        load.emplace_back([&, k] {
            auto c = std::make_unique<test_client>(t.port());
            for (int i = 0; go; ++i) {
                if (!c->send("GET /r/" + std::to_string(k) + "/" + std::to_string(i) +
                             " HTTP/1.1\r\nHost: t\r\n\r\n"))
                    return;
                const auto r = c->read_response();
                if (!r) return;
                ++answered;
                // Past max_requests the server says close: go on on a new connection.
                if (r->has("Connection: close")) c = std::make_unique<test_client>(t.port());
            }
        });
    }
    // Lines in the file (flushed within a second): logrotate leaves an empty file alone.
    EXPECT_TRUE(eventually([&] { return !slurp(log).empty(); })) << "the load runs";
    const std::string cmd =
        "logrotate -f -s " + (dir / "state").string() + " " + (dir / "logrotate.conf").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    // logrotate renames the file and signals; the file at the old path is there again once
    // tarry has taken the signal (the signal is asynchronous: answers made before it still go
    // to the renamed file). Lines after that (the stop below flushes them).
    EXPECT_TRUE(eventually([&] { return std::filesystem::exists(log); }))
        << "SIGUSR1 reopens the access log at its path";
    const int at_reopen = answered;
    EXPECT_TRUE(eventually([&] { return answered - at_reopen > 10; }))
        << "the load went on after the reopen";
    go = false;
    for (auto& th : load)
        th.join();
    EXPECT_EQ(t.stop(), 0) << "SIGUSR1 must not terminate tarry";

    const std::string before = slurp(dir / "access.log.1");
    const std::string after = slurp(log);
    EXPECT_FALSE(before.empty()) << "the rotated file has the lines before the signal";
    EXPECT_FALSE(after.empty()) << "the lines after it go to a new file at the old path";
    std::multiset<std::string> targets;
    const std::regex line("\"GET (/r/[0-9]+/[0-9]+) HTTP/1.1\" 200");
    for (const std::string* text : {&before, &after})
        for (std::sregex_iterator m(text->begin(), text->end(), line), e; m != e; ++m)
            targets.insert((*m)[1]);
    EXPECT_EQ(targets.size(), static_cast<std::size_t>(answered.load())) << "one line per response";
    EXPECT_EQ(std::set<std::string>(targets.begin(), targets.end()).size(), targets.size())
        << "no line twice";
    std::filesystem::remove_all(dir);
}

TEST(BinaryTest, ASecondTarryOnABusyPortExitsTwoAndTheFirstServesOn) {
    tarry_process first({"--workers", "2"});
    const std::string where = "127.0.0.1:" + std::to_string(first.port());
    const result second = run_tarry("--listen " + where + " --workers 2");
    EXPECT_EQ(second.status, 2) << second.output;
    EXPECT_NE(
        second.output.find("tarry: listen: " + where + " is already in use by another process"),
        std::string::npos)
        << second.output;
    EXPECT_EQ(std::count(second.output.begin(), second.output.end(), '\n'), 1) << second.output;
    for (int i = 0; i < 8; ++i) { // every new connection still reaches the first
        test_client c(first.port());
        ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
        const auto r = c.read_response();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(first.stop(), 0);
}

// Another program listening on a port of 127.0.0.1 the kernel picks (with SO_REUSEPORT, as
// tarry's workers set it, if `reuse_port`): its descriptor and port, -1 and 0 if it failed.
std::pair<int, std::uint16_t> listening_elsewhere(bool reuse_port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        return {-1, 0};
    }
    return {fd, ntohs(a.sin_port)};
}

TEST(BinaryTest, APortAnotherProgramSharesWithReusePortIsRefused) {
    const auto [fd, port] = listening_elsewhere(true);
    ASSERT_NE(fd, -1);
    const std::string where = "127.0.0.1:" + std::to_string(port);
    const result r = run_tarry("--listen " + where);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("is already in use by another process"), std::string::npos) << r.output;
    ::close(fd);
}

// The manual's EXIT STATUS section: each status and its text, as the page prints them.
std::map<int, std::string> exit_statuses_of_the_manual() {
    const std::string page = unescape_roff(run_tarry("--man").output);
    const std::size_t start = page.find("\n.SH EXIT STATUS\n");
    const std::size_t end = page.find("\n.SH ", start + 1);
    std::map<int, std::string> statuses;
    if (start == std::string::npos) return statuses;
    const std::regex entry(R"(\.TP\n\.B ([0-9]+)\n([^\n]*))");
    const std::string section = page.substr(start, end - start);
    for (std::sregex_iterator m(section.begin(), section.end(), entry), e; m != e; ++m)
        statuses[std::stoi((*m)[1])] = (*m)[2];
    return statuses;
}

TEST(BinaryTest, TheManualListsTheExitStatusesTheBinaryReturns) {
    const std::map<int, std::string> manual = exit_statuses_of_the_manual();
    ASSERT_EQ(manual.size(), server::exit_status_meanings.size());
    for (const server::exit_status_meaning& m : server::exit_status_meanings)
        EXPECT_TRUE(manual.contains(server::code(m.status))) << server::code(m.status);
    // As the README says: 2 for the configuration, and for an address in use.
    EXPECT_EQ(server::code(server::exit_status::config), 2);
    EXPECT_NE(manual.at(2).find("bad flag, key or value"), std::string::npos) << manual.at(2);
    EXPECT_NE(manual.at(2).find("already in use"), std::string::npos) << manual.at(2);
    EXPECT_EQ(run_tarry("--check-config --workers x").status, 2);
    EXPECT_EQ(run_tarry("--check-config").status, 0);
}

TEST(BinaryTest, ABusyPortExitsWithTheStatusTheManualGivesIt) {
    // Something else listens there, without SO_REUSEPORT.
    const auto [fd, port] = listening_elsewhere(false);
    ASSERT_NE(fd, -1);
    const result r = run_tarry("--listen 127.0.0.1:" + std::to_string(port));
    ::close(fd);
    const std::map<int, std::string> manual = exit_statuses_of_the_manual();
    ASSERT_TRUE(manual.contains(r.status)) << r.status << ": " << r.output;
    EXPECT_NE(manual.at(r.status).find("address already in use"), std::string::npos)
        << r.status << ": " << manual.at(r.status);
    EXPECT_EQ(r.status, server::code(server::exit_status::config)) << r.output;
}

} // namespace
} // namespace tarry::test

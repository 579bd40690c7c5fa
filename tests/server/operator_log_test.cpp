// What the error log tells an operator: proxied requests that failed (rate-limited, with the
// client, the request and the upstream), what a reload changed, why the process ended and what
// its drain did. The binary runs as a child process and its log is read from its output file.
#include "tarry_process.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace tarry::test {
namespace {

using namespace std::chrono_literals;

class OperatorLogTest : public ::testing::Test {
protected:
    scratch_dir dir{"operator_log"};
    std::filesystem::path log = dir / "tarry.log";
    std::filesystem::path conf = dir / "tarry.toml";

    void write(const std::string& text) { std::ofstream(conf) << text; }
    std::uint16_t port = free_port();

    /// The binary at log level info (tarry_process runs it at warn), once it listens.
    std::unique_ptr<child_process> start(const std::vector<std::string>& extra = {}) {
        child_options o;
        o.output = log.string();
        std::vector<std::string> args{TARRY_BINARY,
                                      "--config",
                                      conf.string(),
                                      "--listen",
                                      "127.0.0.1:" + std::to_string(port),
                                      "--workers",
                                      "2"};
        args.insert(args.end(), extra.begin(), extra.end());
        auto p = std::make_unique<child_process>(std::move(args), o);
        EXPECT_TRUE(eventually([&] { return test_client(port).connected(); }, 10s));
        return p;
    }
    /// Whether the server has exactly one client connection open (the probes are gone).
    static bool one_open(std::uint16_t admin) {
        test_client c(admin);
        if (!c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")) return false;
        const auto r = c.read_response();
        return r && r->body.find("\ntarry_connections_open 1\n") != std::string::npos;
    }
    bool logged(const std::string& text) {
        return eventually([&] { return slurp(log).find(text) != std::string::npos; });
    }
};

/// Lines of `text` that hold `part`.
std::vector<std::string> lines_with(const std::string& text, const std::string& part) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find(part) != std::string::npos) out.push_back(line);
    return out;
}

/// The status of a GET for `target` on a new connection (0: no answer).
int status_of(std::uint16_t port, const std::string& target) {
    test_client c(port);
    if (!c.send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n")) return 0;
    const auto r = c.read_response();
    return r ? r->status : 0;
}

TEST_F(OperatorLogTest, AProxiedRequestToAClosedPortIsA502AndOneErrorLine) {
    write("");
    const std::string dead = std::to_string(free_port()); // bound, then closed: nothing listens
    auto t = start({"--proxy", "127.0.0.1:" + dead});
    EXPECT_EQ(status_of(port, "/api/x?q=1"), 502);
    const std::string line = "[error] upstream connect() failed (111: Connection refused) while "
                             "connecting to upstream, client: 127.0.0.1, request: \"GET /api/x?q=1 "
                             "HTTP/1.1\", upstream: \"http://127.0.0.1:" +
                             dead + "/api/x?q=1\"\n";
    EXPECT_TRUE(logged(line)) << slurp(log);
    EXPECT_EQ(t->stop(), 0);
    EXPECT_EQ(lines_with(slurp(log), "upstream").size(), 1U) << slurp(log);
}

TEST_F(OperatorLogTest, ABurstOfFailuresIsOneLineAndTheNextSaysHowManyWereLeftOut) {
    write("");
    auto t = start({"--proxy", "127.0.0.1:" + std::to_string(free_port())});
    // 50 requests at once, on 50 connections, over both workers: they fail within a second or
    // two of the limiter's (one line each second at most).
    std::vector<std::unique_ptr<test_client>> burst;
    for (int i = 0; i < 50; ++i) {
        burst.push_back(std::make_unique<test_client>(port));
        ASSERT_TRUE(
            burst.back()->send("GET /b/" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    for (auto& c : burst) {
        const auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 502);
    }
    const std::size_t burst_lines = lines_with(slurp(log), "upstream connect() failed").size();
    EXPECT_GE(burst_lines, 1U);
    EXPECT_LE(burst_lines, 2U) << slurp(log);
    // One more failure a second later is logged, with the count of those left out; each line is
    // written before its 502 is sent.
    int sent = 50;
    for (;;) {
        ASSERT_EQ(status_of(port, "/later"), 502);
        ++sent;
        if (slurp(log).find("GET /later") != std::string::npos) break;
        ASSERT_LT(sent, 50 + 600) << "no line for a failure a minute later";
        std::this_thread::sleep_for(100ms); // the probes' pace, not a wait for a condition
    }
    // Every failure is either a line or counted in the next one.
    const std::regex more(R"(\((\d+) more like it since the last such line, not logged\))");
    std::size_t accounted = 0;
    const auto lines = lines_with(slurp(log), "upstream connect() failed");
    for (const std::string& line : lines) {
        ++accounted;
        std::smatch m;
        if (std::regex_search(line, m, more)) accounted += std::stoul(m[1]);
    }
    EXPECT_EQ(accounted, static_cast<std::size_t>(sent)) << slurp(log);
    EXPECT_NE(lines.back().find("more like it"), std::string::npos) << lines.back();
    EXPECT_EQ(t->stop(), 0);
}

TEST_F(OperatorLogTest, AtDebugLevelEveryFailedRequestHasALine) {
    write("log_level = \"debug\"\n");
    auto t = start({"--proxy", "127.0.0.1:" + std::to_string(free_port())});
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(status_of(port, "/d/" + std::to_string(i)), 502);
    EXPECT_EQ(t->stop(), 0);
    const std::string text = slurp(log);
    EXPECT_EQ(lines_with(text, "[debug] upstream connect() failed").size(), 5U) << text;
    const auto debug = lines_with(text, "[debug] upstream connect() failed");
    EXPECT_EQ(debug.size(), 5U) << text;
    for (std::size_t i = 0; i < debug.size(); ++i)
        EXPECT_NE(debug[i].find("request: \"GET /d/" + std::to_string(i) + " HTTP/1.1\""),
                  std::string::npos)
            << debug[i];
    EXPECT_GE(lines_with(text, "[error] upstream connect() failed").size(), 1U) << text;
}

/// An application that answers every request with bytes that are not HTTP, then closes.
class garbage_backend {
public:
    garbage_backend() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0)
            throw std::system_error(errno, std::generic_category(), "garbage_backend: listen");
        socklen_t len = sizeof a;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] {
            for (;;) {
                const int c = ::accept(fd_, nullptr, nullptr);
                if (c < 0) return; // the listener was shut down
                char buf[4096];
                (void)::recv(c, buf, sizeof buf, 0);
                const std::string answer = "SPLORT 200 yes\r\n\r\n";
                (void)::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
                ::close(c);
            }
        });
    }
    garbage_backend(const garbage_backend&) = delete;
    garbage_backend& operator=(const garbage_backend&) = delete;
    ~garbage_backend() {
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        ::close(fd_);
    }
    [[nodiscard]] std::uint16_t port() const { return port_; }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

TEST_F(OperatorLogTest, AMalformedAnswerIsLoggedAsSuch) {
    garbage_backend app;
    write("");
    auto t = start({"--proxy", "127.0.0.1:" + std::to_string(app.port())});
    EXPECT_EQ(status_of(port, "/m"), 502);
    EXPECT_TRUE(logged("[error] upstream sent an invalid response (")) << slurp(log);
    EXPECT_TRUE(logged(") while reading response header from upstream, client: 127.0.0.1, "
                       "request: \"GET /m HTTP/1.1\", upstream: \"http://127.0.0.1:" +
                       std::to_string(app.port()) + "/m\"\n"))
        << slurp(log);
    EXPECT_EQ(t->stop(), 0);
}

TEST_F(OperatorLogTest, AReloadNamesWhatChangedOrSaysNoChange) {
    write("[[route]]\nprefix = \"/a/\"\nrespond = \"hello\"\n");
    auto t = start();
    t->signal(SIGHUP);
    ASSERT_TRUE(logged("reloaded configuration: no change\n")) << slurp(log);

    write("keep_alive_timeout = \"10s\"\naccess_log_format = \"json\"\n"
          "[[route]]\nprefix = \"/b/\"\nrespond = \"hello\"\n");
    t->signal(SIGHUP);
    EXPECT_TRUE(logged("reloaded configuration: keep_alive_timeout 65s -> 10s; "
                       "access_log_format \"common\" -> \"json\"; route \"/a/\" removed; "
                       "route \"/b/\" added\n"))
        << slurp(log);
    EXPECT_EQ(t->stop(), 0);
}

TEST_F(OperatorLogTest, ExitSaysTheSignalAndThatIdleConnectionsFinished) {
    const std::uint16_t admin = free_port();
    write("close_spread_time = \"0s\"\nkeep_alive_min_timeout = \"0s\"\nadmin_listen = "
          "\"127.0.0.1:" +
          std::to_string(admin) + "\"\n");
    auto t = start();
    test_client idle(port);
    ASSERT_TRUE(idle.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(idle.read_response());
    ASSERT_TRUE(eventually([&] { return one_open(admin); }));
    EXPECT_EQ(t->stop(), 0);
    EXPECT_NE(slurp(log).find("exit (SIGTERM): 1 connection(s) open at the stop: 1 finished; "
                              "drained in "),
              std::string::npos)
        << slurp(log);
}

TEST_F(OperatorLogTest, ExitCountsTheConnectionsClosedAtDrainTimeout) {
    const std::uint16_t admin = free_port();
    write("drain_timeout = \"300ms\"\nadmin_listen = \"127.0.0.1:" + std::to_string(admin) +
          "\"\n");
    auto t = start();
    test_client slow(port);
    ASSERT_TRUE(slow.send("GET / HTTP/1.1\r\nHost: t\r\n")); // and never the end of the head
    // Accepted and reading: the stop finds it open.
    ASSERT_TRUE(eventually([&] { return one_open(admin); }));
    t->signal(SIGINT);
    EXPECT_EQ(t->wait(), 0);
    EXPECT_NE(slurp(log).find("exit (SIGINT): 1 connection(s) open at the stop: 0 finished, 1 "
                              "closed at drain_timeout (300ms)"),
              std::string::npos)
        << slurp(log);
}

} // namespace
} // namespace tarry::test

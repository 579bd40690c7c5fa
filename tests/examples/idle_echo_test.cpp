// examples/idle_echo as its users run it: a child process on 127.0.0.1 port 0, real sockets,
// short timeouts and generous, one-sided timing checks.
#include "child_process.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <memory>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace idle_echo::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr auto login_timeout = 200ms;
constexpr auto idle_timeout = 500ms;

class client {
public:
    explicit client(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        timeval tv{5, 0}; // a read that waits this long has failed
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    ~client() { ::close(fd_); }

    [[nodiscard]] bool connected() const { return connected_; }
    bool send(const std::string& s) {
        return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
    }
    /// The next line without its '\n', or nullopt on EOF, error or a 5 s silence.
    std::optional<std::string> read_line() {
        for (;;) {
            if (auto nl = buf_.find('\n'); nl != std::string::npos) {
                std::string line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return line;
            }
            char b[512];
            const ssize_t n = ::recv(fd_, b, sizeof b, 0);
            if (n <= 0) {
                eof_ = n == 0;
                return std::nullopt;
            }
            buf_.append(b, static_cast<std::size_t>(n));
        }
    }
    /// Whether the server closed the connection (EOF, not a timeout of this read).
    bool closed_by_server() {
        while (read_line()) {
        }
        return eof_;
    }

private:
    int fd_;
    bool connected_ = false;
    bool eof_ = false;
    std::string buf_;
};

class IdleEchoTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        tarry::test::child_options o;
        o.pipe_stdout = true; // kept open: the server prints its count of timeouts as it exits
        child = std::make_unique<tarry::test::child_process>(
            std::vector<std::string>{IDLE_ECHO_BINARY, "--port", "0", "--login-timeout-ms",
                                     std::to_string(login_timeout.count()), "--idle-timeout-ms",
                                     std::to_string(idle_timeout.count())},
            o);
        // "listening on 127.0.0.1:PORT"
        const std::string line = child->read_line().value_or("");
        const auto colon = line.rfind(':');
        ASSERT_NE(colon, std::string::npos) << line;
        port = static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
        ASSERT_NE(port, 0);
    }
    static void TearDownTestSuite() {
        if (!child) return;
        const int code = child->stop();
        EXPECT_EQ(code, 0) << "ended by signal " << child->end_signal();
        child.reset();
    }

    static std::unique_ptr<client> logged_in(const std::string& name) {
        auto c = std::make_unique<client>(port);
        EXPECT_TRUE(c->connected());
        EXPECT_TRUE(c->send("LOGIN " + name + "\n"));
        EXPECT_EQ(c->read_line(), "HELLO " + name);
        return c;
    }

    static inline std::unique_ptr<tarry::test::child_process> child;
    static inline std::uint16_t port = 0;
};

TEST_F(IdleEchoTest, EchoesLinesAfterLogin) {
    auto c = logged_in("ann");
    ASSERT_TRUE(c->send("one\ntwo\n"));
    EXPECT_EQ(c->read_line(), "one");
    EXPECT_EQ(c->read_line(), "two");
    ASSERT_TRUE(c->send("three\r\n"));
    EXPECT_EQ(c->read_line(), "three");
}

TEST_F(IdleEchoTest, AnythingButLoginIsRefused) {
    client c(port);
    ASSERT_TRUE(c.send("hello\n"));
    EXPECT_EQ(c.read_line(), "ERROR expected LOGIN <name>");
    EXPECT_TRUE(c.closed_by_server());
}

TEST_F(IdleEchoTest, LoginTimeoutClosesASilentConnection) {
    const auto start = steady::now();
    client c(port);
    ASSERT_TRUE(c.connected());
    EXPECT_TRUE(c.closed_by_server());
    EXPECT_GE(steady::now() - start, login_timeout);
}

TEST_F(IdleEchoTest, IdleTimeoutClosesAnIdleLoggedInConnection) {
    auto c = logged_in("bob");
    const auto logged_in_at = steady::now();
    EXPECT_TRUE(c->closed_by_server());
    // Closed by the idle timeout, not the (shorter) login one it left.
    EXPECT_GE(steady::now() - logged_in_at, idle_timeout);
}

TEST_F(IdleEchoTest, ActiveConnectionOutlivesTheIdleTimeout) {
    auto c = logged_in("cy");
    const auto start = steady::now();
    int i = 0;
    while (steady::now() - start < 3 * idle_timeout) {
        const std::string line = "line " + std::to_string(i++);
        ASSERT_TRUE(c->send(line + "\n"));
        ASSERT_EQ(c->read_line(), line);
        std::this_thread::sleep_for(idle_timeout / 5);
    }
    ASSERT_TRUE(c->send("still here\n"));
    EXPECT_EQ(c->read_line(), "still here");
}

} // namespace
} // namespace idle_echo::test

// The access log of proxied answers, a Node.js application behind (backend.js, ws_backend.js):
// the body bytes the client received however the answer is framed (nginx's $body_bytes_sent:
// a chunked body's framing counts), a tunnel's bytes each way, and the upstream's times and
// status (nginx's $upstream_*). Every check reads the log line of a response a real client read.
#include "proxy_fixture.hpp"

#include "server/log_file.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;

class ProxyAccessLogTest : public ProxyTest {
protected:
    fs::path log = fs::temp_directory_path() /
                   ("tarry_proxy_access_log_" + std::to_string(::getpid()) + ".log");
    std::unique_ptr<node_backend> app;

    void SetUp() override {
        fs::remove(log);
        cfg.access_log = log;
        cfg.access_log_format = "extended";
    }
    void TearDown() override {
        ProxyTest::TearDown();
        app.reset();
        fs::remove(log);
    }
    void start_behind(const char* script = TARRY_BACKEND_JS) {
        app = std::make_unique<node_backend>(5000, std::string{}, script);
        ASSERT_TRUE(app->started()) << script;
        ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(app->port()))};
        start();
    }

    /// The log's line holding `needle`, once it is there.
    std::string line_with(const std::string& needle) { return log_line_with(log, needle); }

    /// The body bytes logged for the request `request_line` (with status `status`).
    std::int64_t logged_bytes(const std::string& request_line, int status) {
        const std::string line = line_with("\"" + request_line + "\" " + std::to_string(status));
        std::smatch m;
        if (!std::regex_search(line, m, std::regex("\" " + std::to_string(status) + R"( (\d+) )")))
            return -1;
        return std::stoll(m[1].str());
    }

    /// One request on a fresh connection that closes after it: the bytes after the head that
    /// the client received, and the head.
    std::pair<std::string, std::string> exchange_raw(const std::string& request) {
        test_client c(port);
        EXPECT_TRUE(c.send(request));
        EXPECT_TRUE(c.wait_closed(10s).has_value());
        const std::string& all = c.pending();
        const auto end = all.find("\r\n\r\n");
        if (end == std::string::npos) return {all, {}};
        return {all.substr(0, end + 4), all.substr(end + 4)};
    }
};

TEST_F(ProxyAccessLogTest, AChunkedJsonAnswerIsLoggedWithTheBytesTheClientGot) {
    start_behind();
    // res.writeHead(200); res.end(json): no Content-Length, so it comes chunked.
    const auto [head, body] =
        exchange_raw("GET /api/hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0U) << head;
    ASSERT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
    ASSERT_NE(body.find("hello from the application"), std::string::npos) << body;
    EXPECT_EQ(logged_bytes("GET /api/hello HTTP/1.1", 200), static_cast<std::int64_t>(body.size()))
        << "the chunked body as sent, framing included (nginx's rule)";
    const std::string line = line_with("\"GET /api/hello HTTP/1.1\" 200");
    EXPECT_TRUE(std::regex_search(
        line, std::regex(R"( rt=\d+\.\d{3} uct="\d+\.\d{3}" uht="\d+\.\d{3}" urt="\d+\.\d{3}" )"
                         R"(us="200" scheme=http port=)" +
                         std::to_string(port) + " tls=-$")))
        << line;
}

TEST_F(ProxyAccessLogTest, ALargeStreamedAnswerIsLoggedWithItsBytesChunkedAndToTheClose) {
    start_behind();
    constexpr std::size_t n = 320 * 1024;
    const auto [head, body] =
        exchange_raw("GET /stream?n=327680 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    ASSERT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
    ASSERT_GT(body.size(), n);
    EXPECT_EQ(logged_bytes("GET /stream?n=327680 HTTP/1.1", 200),
              static_cast<std::int64_t>(body.size()));
    // To an HTTP/1.0 client it is delimited by the close: exactly its bytes.
    const auto [head10, body10] = exchange_raw("GET /stream?n=327681 HTTP/1.0\r\n\r\n");
    ASSERT_EQ(head10.find("Transfer-Encoding"), std::string::npos) << head10;
    ASSERT_EQ(body10.size(), n + 1);
    EXPECT_EQ(logged_bytes("GET /stream?n=327681 HTTP/1.0", 200), static_cast<std::int64_t>(n + 1));
}

TEST_F(ProxyAccessLogTest, ContentLengthHeadAndErrorAnswersAreLoggedWithTheirBytes) {
    start_behind();
    const auto [head, body] =
        exchange_raw("GET /big?n=100000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(body.size(), 100000U);
    EXPECT_EQ(logged_bytes("GET /big?n=100000 HTTP/1.1", 200), 100000);
    const auto [head_only, none] =
        exchange_raw("HEAD /api/hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(head_only.rfind("HTTP/1.1 200", 0), 0U) << head_only;
    ASSERT_TRUE(none.empty());
    EXPECT_EQ(logged_bytes("HEAD /api/hello HTTP/1.1", 200), 0);
}

TEST_F(ProxyAccessLogTest, TheRequestTimeCoversTheUpstreamsDelay) {
    start_behind();
    const auto r = get_once("/slow?ms=120");
    ASSERT_TRUE(r.has_value());
    const std::string line = line_with("\"GET /slow?ms=120 HTTP/1.1\" 200 4 ");
    std::smatch m;
    const std::regex times(R"re( rt=(\d+\.\d{3}) .* uht="(\d+\.\d{3})" )re");
    ASSERT_TRUE(std::regex_search(line, m, times)) << line;
    EXPECT_GE(std::stod(m[1].str()), 0.120) << line;
    EXPECT_GE(std::stod(m[2].str()), 0.120) << line;
}

TEST_F(ProxyAccessLogTest, AnUnreachableUpstreamIsLogged502WithItsUpstreamStatus) {
    // A port nothing listens on: every connect is refused.
    ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(free_port()))};
    start();
    const auto r = get_once("/down");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 502);
    const std::string line = line_with("\"GET /down HTTP/1.1\" 502 ");
    EXPECT_NE(line.find(" uct=\"-\" uht=\"-\" urt=\""), std::string::npos) << line;
    EXPECT_NE(line.find(" us=\"502\" "), std::string::npos) << line;
}

TEST_F(ProxyAccessLogTest, AClientThatLeavesBeforeItsAnswerIsLogged499) {
    start_behind();
    {
        test_client c(port);
        ASSERT_TRUE(c.send("GET /slow?ms=2000 HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(eventually([&] { return metrics().busy.get() == 1; }));
        // A reset, not a half-close (after which the answer would still be sent).
        const linger reset{1, 0};
        ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    } // gone
    const std::string line = line_with("\"GET /slow?ms=2000 HTTP/1.1\" 499 0 ");
    EXPECT_NE(line.find(" us=\"-\" "), std::string::npos) << line;
}

TEST_F(ProxyAccessLogTest, ATunnelIsLoggedWhenItEndsWithItsBytesEachWay) {
    start_behind(TARRY_WS_BACKEND_JS);
    test_client c(port);
    ASSERT_TRUE(c.send("GET /raw HTTP/1.1\r\nHost: t\r\nUpgrade: tarry-raw\r\n"
                       "Connection: Upgrade\r\n\r\nearly,"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 101);
    ASSERT_TRUE(c.send("late"));
    ASSERT_TRUE(eventually([&] { return metrics().tunnel_bytes_down.get() >= 10; }));
    c.shutdown_write();
    ASSERT_TRUE(c.wait_closed(5s).has_value());
    ASSERT_EQ(c.pending(), "early,latebye:10");
    // Down: "early,late" echoed and "bye:10"; up: "early," and "late".
    const std::string line = line_with("\"GET /raw HTTP/1.1\" 101 16 ");
    EXPECT_NE(line.find(" us=\"101\" "), std::string::npos) << line;
    EXPECT_NE(line.find(" in=10"), std::string::npos) << line;
}

} // namespace
} // namespace tarry::test

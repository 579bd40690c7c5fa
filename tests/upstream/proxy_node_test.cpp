// The proxy in front of a Node.js application (backend.js): bodies both ways, framing, errors,
// and the upstream's keep-alive. Timing checks are one-sided with generous slack.
#include "proxy_fixture.hpp"

#include <tarry/http/route_handler.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace tarry::test {
namespace {

class ProxyNodeTest : public ProxyTest {
protected:
    /// One application for the suite, with a 5 s keep-alive: each test has a server of its own,
    /// so pools of its own, and looks at nothing the application keeps but through /stats.
    static void SetUpTestSuite() { shared_node = std::make_unique<node_backend>(); }
    static void TearDownTestSuite() { shared_node.reset(); }

    /// A test's own application, where it needs another keep-alive, a Unix socket, or counts
    /// (/stats) of its own.
    std::unique_ptr<node_backend> node;

    void start_with(int keep_alive_ms = 5000, bool own_application = false) {
        if (keep_alive_ms != 5000 || own_application)
            node = std::make_unique<node_backend>(keep_alive_ms);
        const node_backend& app = node ? *node : *shared_node;
        ASSERT_NE(app.port(), 0) << "node did not start";
        ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(app.port()))};
        start();
    }
    void TearDown() override {
        ProxyTest::TearDown();
        node.reset();
    }

    static inline std::unique_ptr<node_backend> shared_node;
};

/// TCP_NODELAY on each of this process's TCP sockets connected to `port`: the proxy's
/// connections to the application there.
std::vector<int> nodelay_towards(std::uint16_t port) {
    std::vector<int> on;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const int fd = std::stoi(e.path().filename().string());
        sockaddr_in peer{};
        socklen_t len = sizeof peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
            peer.sin_family != AF_INET || ntohs(peer.sin_port) != port)
            continue;
        int v = 0;
        socklen_t vlen = sizeof v;
        if (::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &vlen) == 0) on.push_back(v != 0);
    }
    return on;
}

/// Reads a Content-Length response to `fd`, counting and discarding its body (so the test's
/// own memory stays flat). Returns the body size, or -1.
std::int64_t drain_response(int fd, steady::duration timeout, std::string* head_out = nullptr) {
    const auto deadline = steady::now() + timeout;
    std::string head;
    std::int64_t length = -1;
    std::int64_t got = 0;
    static char buf[1 << 16];
    while (steady::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return -1;
        if (length < 0) {
            head.append(buf, static_cast<std::size_t>(n));
            const auto end = head.find("\r\n\r\n");
            if (end == std::string::npos) continue;
            const auto at = head.find("Content-Length: ");
            if (at == std::string::npos) return -1;
            length = std::stoll(head.substr(at + 16));
            got = static_cast<std::int64_t>(head.size() - end - 4);
            if (head_out != nullptr) *head_out = head.substr(0, end + 4);
        } else {
            got += n;
        }
        if (got >= length) return got;
    }
    return -1;
}

TEST_F(ProxyNodeTest, ForwardsFieldsWithoutHopByHopAndAddsForwarded) {
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /headers HTTP/1.1\r\nHost: example.test\r\nConnection: X-Private\r\n"
                       "X-Private: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n"
                       "Proxy-Connection: keep-alive\r\nX-Forwarded-For: 192.0.2.9\r\n"
                       "Accept: */*\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    const std::string& b = r->body;
    EXPECT_NE(b.find("host: example.test\n"), std::string::npos) << b;
    EXPECT_NE(b.find("accept: */*\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-for: 127.0.0.1\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-proto: http\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-host: example.test\n"), std::string::npos) << b;
    for (const char* gone : {"x-private", "keep-alive:", "te:", "proxy-connection", "192.0.2.9"})
        EXPECT_EQ(b.find(gone), std::string::npos) << gone << " in\n" << b;
    // The upstream's Connection and the field it names stay on its side; its Date passes.
    EXPECT_EQ(r->head.find("X-Hop"), std::string::npos) << r->head;
    EXPECT_EQ(r->head.find("Connection: X-Hop"), std::string::npos) << r->head;
    EXPECT_EQ(r->head.find("Server: tarry"), std::string::npos) << r->head;
    EXPECT_NE(r->head.find("\r\nDate: "), std::string::npos) << r->head;
}

TEST_F(ProxyNodeTest, SequentialRequestsShareOneUpstreamConnection) {
    start_with(5000, true); // the application's own count of connections
    test_client c(port);
    for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(c.send("GET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r) << i;
        ASSERT_EQ(r->body, "ok");
    }
    EXPECT_TRUE(c.wait_closed()); // max_requests_per_connection is 1000
    test_client d(port);
    ASSERT_TRUE(d.send("GET /stats HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto s = d.read_response();
    ASSERT_TRUE(s);
    EXPECT_NE(s->body.find("\"connections\":1,"), std::string::npos) << s->body;
    EXPECT_EQ(metrics().opened.get(), 1);
    EXPECT_EQ(metrics().reused.get(), 1000); // 999 and /stats
    // The last response may reach the client a moment before its connection is pooled.
    EXPECT_TRUE(eventually([&] { return metrics().idle.get() == 1; }));
    EXPECT_EQ(metrics().busy.get(), 0);
}

TEST_F(ProxyNodeTest, ChunkedUploadIsEchoedChunked) {
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "a\r\n0123456789\r\n5\r\nabcde\r\n0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Transfer-Encoding: chunked"));
    EXPECT_EQ(r->body, "0123456789abcde");
    // Content-Length upload, and the connection goes on.
    ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"));
    auto u = c.read_response();
    ASSERT_TRUE(u);
    EXPECT_EQ(u->body, "5");
    ASSERT_TRUE(c.send("GET /chunked HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto k = c.read_response();
    ASSERT_TRUE(k);
    EXPECT_EQ(k->body, "one,two,three");
}

// Many upstream responses in flight at once, each bigger than the share of the worker's read
// space a batch lends an upstream connection (64 KiB split between a batch's readers): every
// client gets its own bytes, in order, however the reads fell between batches and slices.
TEST_F(ProxyNodeTest, ConcurrentResponsesReadWithTheBatchEachReachTheirOwnClient) {
    start_with();
    constexpr int clients = 16;
    constexpr std::size_t size = 300 * 1024;
    std::atomic<int> intact{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < clients; ++id) {
        threads.emplace_back([&, id] {
            std::string body(size, '\0');
            for (std::size_t i = 0; i < size; ++i)
                body[i] = static_cast<char>('a' + (id * 7 + i / 1000) % 26);
            test_client c(port);
            for (int round = 0; round < 3; ++round) {
                if (!c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                            std::to_string(size) + "\r\n\r\n" + body))
                    return;
                auto r = c.read_response(20s);
                if (!r || r->status != 200 || r->body != body) return;
            }
            ++intact;
        });
    }
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(intact, clients);
}

TEST_F(ProxyNodeTest, HundredMegabytesEachWayWithBoundedMemory) {
    start_with();
    constexpr std::int64_t total = 100LL * 1024 * 1024;
    test_client c(port);
    const std::int64_t before = heap_in_use();
    ASSERT_TRUE(c.send("GET /big?n=" + std::to_string(total) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_EQ(drain_response(c.fd(), 60s), total);
    const std::int64_t after_download = heap_in_use();
    ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                       std::to_string(total) + "\r\n\r\n"));
    const std::string piece(64 * 1024, 'u');
    for (std::int64_t sent = 0; sent < total; sent += static_cast<std::int64_t>(piece.size()))
        ASSERT_TRUE(c.send(piece));
    auto r = c.read_response(60s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, std::to_string(total));
    const std::int64_t after_upload = heap_in_use();
    EXPECT_LT(after_download - before, 2 << 20) << "bytes held after the download";
    EXPECT_LT(after_upload - before, 2 << 20) << "bytes held after the upload";
}

TEST_F(ProxyNodeTest, SlowClientDoesNotMakeTheProxyBuffer) {
    start_with();
    constexpr std::int64_t total = 32LL * 1024 * 1024;
    test_client c(port, 4096);
    const std::int64_t before = heap_in_use();
    ASSERT_TRUE(c.send("GET /big?n=" + std::to_string(total) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    std::this_thread::sleep_for(1s); // by design: a while of not reading, as the body comes
    const std::int64_t stalled = heap_in_use();
    EXPECT_LT(stalled - before, 2 << 20) << "bytes held while the client did not read";
    EXPECT_EQ(drain_response(c.fd(), 60s), total);
}

TEST_F(ProxyNodeTest, HundredsOfSlowReadersCostOneOutputQueueEachAndGiveItBack) {
    start_with();
    constexpr int clients = 200;
    const std::int64_t before = heap_in_use();
    const std::int64_t rss_before = rss_kib();
    std::vector<std::unique_ptr<test_client>> slow;
    for (int i = 0; i < clients; ++i) {
        slow.push_back(std::make_unique<test_client>(port, 4096));
        ASSERT_TRUE(slow.back()->send("GET /big?n=8388608 HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    // Every response started and stalled: the client's window and the proxy's queue are full.
    ASSERT_TRUE(eventually([&] { return metrics().requests.get() == clients; }, 30s));
    // Until the responses stop moving: the backend filling 200 windows takes longer on a busy
    // machine, and a connection caught mid-flow still holds a read buffer beside its queue.
    // Settled means two half-second samples in a row within 1%: one quiet sample can fall
    // between two bursts of a backend still filling windows on a busy machine.
    std::int64_t held = heap_in_use() - before;
    int quiet = 0;
    for (const auto until = steady::now() + 20s; steady::now() < until && quiet < 2;) {
        std::this_thread::sleep_for(500ms);
        const std::int64_t now = heap_in_use() - before;
        quiet = std::abs(now - held) < held / 100 ? quiet + 1 : 0;
        held = now;
    }
    const std::int64_t rss_held = rss_kib() - rss_before;
    EXPECT_LT(held / clients, 80'000) << "bytes per slow client (one 64 KiB output queue)";
    std::printf("slow readers: %lld B of heap, %lld KiB resident per client\n",
                static_cast<long long>(held / clients), static_cast<long long>(rss_held / clients));
    slow.clear(); // they go away
    ASSERT_TRUE(eventually([&] { return metrics().busy.get() == 0; }, 30s));
    EXPECT_TRUE(eventually([&] { return heap_in_use() - before < held / 10; }, 10s))
        << "given back once they left: " << heap_in_use() - before << " of " << held;
    // And from the allocator to the system (a trim after the closes): the process's resident
    // size comes back near where it started.
    // (Not under the sanitizer, whose quarantine keeps freed blocks resident.)
    if (resident_follows_heap) {
        EXPECT_TRUE(eventually([&] { return rss_kib() - rss_before < rss_held / 10 + 1024; }, 10s))
            << rss_kib() - rss_before << " KiB still resident; " << rss_held << " KiB at the peak";
    }
}

TEST_F(ProxyNodeTest, ProxiedResponsesAreLoggedAndCounted) {
    const auto log = std::filesystem::temp_directory_path() /
                     ("tarry_proxy_access_" + std::to_string(::getpid()) + ".log");
    std::filesystem::remove(log);
    cfg.access_log = log;
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /slow?ms=20 HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->body, "slow");
    // An answer that came later, outside the read that brought its request, is logged (within
    // a second) and counted like any other.
    std::string text;
    EXPECT_TRUE(eventually(
        [&] {
            std::ifstream in(log);
            text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
            return text.find("\"GET /slow?ms=20 HTTP/1.1\" 200 4") != std::string::npos;
        },
        3s))
        << text;
    const std::string m = srv->metrics();
    EXPECT_NE(m.find("tarry_responses_total{code=\"2xx\"} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("tarry_requests_total 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("tarry_request_duration_seconds_bucket{le=\"0.01\"} 0\n"), std::string::npos)
        << "it took the upstream's 20 ms: " << m;
    EXPECT_NE(m.find("tarry_request_duration_seconds_bucket{le=\"0.5\"} 1\n"), std::string::npos)
        << m;
    std::filesystem::remove(log);
}

TEST_F(ProxyNodeTest, ABodyAfterItsHeadGoesUpWithoutWaitingForAnAck) {
    start_with();
    test_client c(port);
    const int one = 1; // this client's own Nagle is not what is tested
    ::setsockopt(c.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // On a pooled connection the head and the body are two writes: with Nagle on, the second
    // would wait for the upstream's delayed ACK (about 40 ms each). So Nagle is off.
    for (int i = 0; i < 20; ++i) {
        ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n"));
        std::this_thread::sleep_for(1ms); // the body in a packet of its own
        ASSERT_TRUE(c.send("hello"));
        const auto r = c.read_response();
        ASSERT_TRUE(r.has_value());
        ASSERT_EQ(r->body, "5");
    }
    EXPECT_EQ(metrics().opened.get(), 1);
    EXPECT_EQ(nodelay_towards(shared_node->port()), std::vector<int>{1});
}

TEST_F(ProxyNodeTest, Http10ClientGetsAnUnknownLengthBodyToTheClose) {
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /chunked HTTP/1.0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "one,two,three");
    EXPECT_TRUE(c.closed());
}

TEST_F(ProxyNodeTest, PipelinedResponsesComeInOrder) {
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /slow?ms=100 HTTP/1.1\r\nHost: t\r\n\r\n"
                       "GET /chunked HTTP/1.1\r\nHost: t\r\n\r\n"
                       "GET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto a = c.read_response();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->body, "slow");
    auto b = c.read_response();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->body, "one,two,three");
    auto n = c.read_response();
    ASSERT_TRUE(n);
    EXPECT_EQ(n->body, "ok");
}

TEST_F(ProxyNodeTest, HeadGetsTheUpstreamLengthAndNoBody) {
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("HEAD /big?n=1000 HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_FALSE(c.read_response(500ms)); // it waits for 1000 bytes that must never come
    const std::string& got = c.pending();
    EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n")) << got;
    EXPECT_NE(got.find("\r\nContent-Length: 1000\r\n"), std::string::npos) << got;
    EXPECT_TRUE(got.ends_with("\r\n\r\n")) << got;
    EXPECT_FALSE(c.closed());
}

TEST_F(ProxyNodeTest, ExpectContinueIsAnsweredByTheProxy) {
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n"
                       "Expect: 100-continue\r\n\r\n"));
    auto cont = c.read_response();
    ASSERT_TRUE(cont);
    EXPECT_EQ(cont->status, 100);
    ASSERT_TRUE(c.send("0123456789"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "10");
}

TEST_F(ProxyNodeTest, SlowUpstreamGets504AfterTheResponseTimeout) {
    ups.response_timeout = 300ms;
    start_with();
    const auto sent = steady::now();
    auto r = get_once("/slow?ms=30000"); // the 504, not the answer, ends the wait
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 504);
    EXPECT_GE(steady::now() - sent, 300ms);
    EXPECT_EQ(metrics().errors_of(upstream::upstream_error::timeout), 1);
    EXPECT_TRUE(eventually([&] { return metrics().busy.get() == 0; }));
}

TEST_F(ProxyNodeTest, StalledUpstreamClosesTheClientAfterTheReadTimeout) {
    ups.read_timeout = 300ms;
    start_with();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /stall HTTP/1.1\r\nHost: t\r\n\r\n"));
    // The head went out already: a 504 is impossible, so the client sees the close.
    EXPECT_TRUE(c.wait_closed(3s));
    EXPECT_TRUE(c.pending().starts_with("HTTP/1.1 200 OK\r\n")) << c.pending();
    EXPECT_EQ(c.pending().find("0\r\n\r\n"), std::string::npos); // never a clean end
    EXPECT_EQ(metrics().errors_of(upstream::upstream_error::timeout), 1);
    EXPECT_TRUE(eventually([&] { return metrics().busy.get() == 0; }));
    EXPECT_EQ(metrics().idle.get(), 0);
}

TEST_F(ProxyNodeTest, UnixSocketUpstream) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("tarry-upstream-" + std::to_string(::getpid()) + ".sock");
    std::filesystem::remove(path);
    node = std::make_unique<node_backend>(5000, path.string());
    ASSERT_TRUE(node->started());
    ups.servers = {upstream::server_address::parse("unix:" + path.string())};
    start();
    test_client c(port);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(c.send("GET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->body, "ok");
    }
    EXPECT_EQ(metrics().opened.get(), 1);
    node.reset();
    std::filesystem::remove(path);
}

TEST_F(ProxyNodeTest, UpstreamClosingAfterTheResponseIsNotPooled) {
    start_with();
    test_client c(port);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(c.send("GET /close HTTP/1.1\r\nHost: t\r\n\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->body, "closing");
        EXPECT_FALSE(r->has("Connection: close")); // the client's connection stays
    }
    EXPECT_EQ(metrics().opened.get(), 3);
    EXPECT_EQ(metrics().idle.get(), 0);
}

TEST_F(ProxyNodeTest, KeepAliveHintRetiresConnectionsBeforeTheUpstreamCloses) {
    start_with(1000); // Node says Keep-Alive: timeout=1 and closes after about a second
    test_client c(port);
    int errors = 0;
    const auto until = steady::now() + 5s;
    for (int i = 0; steady::now() < until; ++i) {
        if (!c.send("GET /n HTTP/1.1\r\nHost: t\r\n\r\n")) {
            ++errors;
            break;
        }
        auto r = c.read_response();
        if (!r || r->status != 200) ++errors;
        std::this_thread::sleep_for(std::chrono::milliseconds(850 + (i % 5) * 75));
    }
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(metrics().errors_of(upstream::upstream_error::reset), 0);
    // timeout=1 leaves no safe idle time (1 s minus a 1 s margin): never pooled.
    EXPECT_GT(metrics().closes_of(upstream::upstream_close::keep_alive_hint), 0);
}

TEST_F(ProxyNodeTest, KeepAliveHintShortensTheIdleTime) {
    start_with(3000); // timeout=3: pooled for 2 s
    test_client c(port);
    ASSERT_TRUE(c.send("GET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(c.read_response());
    // The response may reach the client a moment before the connection is pooled.
    EXPECT_TRUE(eventually([&] { return metrics().idle.get() == 1; }));
    EXPECT_TRUE(eventually(
        [&] { return metrics().closes_of(upstream::upstream_close::keep_alive_hint) == 1; }, 4s));
    EXPECT_EQ(metrics().idle.get(), 0);
}

// A lone server is never marked down: each request tries it (502 while it refuses), so the
// first request after the application is back is served (ProxyBackendTest has the restart).
TEST_F(ProxyNodeTest, ALoneServerThatRefusesGets502AndIsNeverSkipped) {
    ups.servers = {
        upstream::server_address::parse("127.0.0.1:1")}; // nothing listens there: refused
    start();
    auto r = get_once("/");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502);
    auto s = get_once("/");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->status, 502);
    EXPECT_EQ(metrics().errors_of(upstream::upstream_error::connect), 2);
    EXPECT_EQ(metrics().busy.get(), 0);
}

TEST_F(ProxyNodeTest, ClientGoneMidResponseReleasesTheUpstreamConnection) {
    start_with();
    {
        test_client c(port, 4096);
        ASSERT_TRUE(c.send("GET /big?n=20000000 HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(c.wait_for("\r\n\r\n")); // mid-response
    }
    EXPECT_TRUE(eventually([&] { return metrics().busy.get() == 0; }));
    EXPECT_EQ(metrics().idle.get(), 0); // half-used: closed, never pooled
    EXPECT_EQ(metrics().closes_of(upstream::upstream_close::error), 1);
    auto r = get_once("/n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "ok");
}

} // namespace
TEST_F(ProxyNodeTest, AnAnswerThatOvertakesTheBodyOnARouteWithOptionsLetsTheBodyEndThenServesOn) {
    // A route with options (strip_prefix here; headers, error pages and the rest alike) hands
    // the proxy an exchange of its own around the connection's. The application answers before
    // the request body has come: the proxy has finished its answer, and the rest of the body
    // still goes through that exchange to be dropped, so it must outlive the answer until the
    // body ends (under the sanitizers, a use after free otherwise).
    ASSERT_NE(shared_node->port(), 0) << "node did not start";
    ups.servers = {
        upstream::server_address::parse("127.0.0.1:" + std::to_string(shared_node->port()))};
    custom.push_back({"/", [this](server::handler_context& h) -> std::shared_ptr<http::handler> {
                          proxy = upstream::make_proxy_handler(h.io, h.poll, h.registry, ups,
                                                               h.upstreams);
                          http::route_options options;
                          options.strip_prefix = "/app";
                          return std::make_shared<http::route_handler>(proxy, std::move(options));
                      }});
    ServerTest::start();
    test_client c(port);
    const std::string rest(std::size_t{1} << 20, 'x');
    ASSERT_TRUE(c.send("POST /app/early HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                       std::to_string(rest.size() + 1) + "\r\n\r\nx"));
    const auto early = c.read_response();
    ASSERT_TRUE(early.has_value());
    EXPECT_EQ(early->status, 200);
    EXPECT_EQ(early->body, "early\n");
    ASSERT_TRUE(c.send(rest)); // read and dropped
    ASSERT_TRUE(c.send("GET /app/api/hello HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto next = c.read_response();
    ASSERT_TRUE(next.has_value()) << "the connection serves on";
    EXPECT_EQ(next->status, 200);
    EXPECT_NE(next->body.find("hello from the application"), std::string::npos) << next->body;
}

} // namespace tarry::test

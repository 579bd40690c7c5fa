// The proxy in front of a backend written here, on threads, whose misbehaviour is exact: it
// closes idle connections at a chosen time without saying so, or closes a reused connection
// on the request it just read (the keep-alive race, made deterministic).
#include "thread_backend.hpp"

#include <tarry/http/hello_handler.hpp>

namespace tarry::test {
namespace {

class ProxyBackendTest : public ThreadBackendProxyTest {
protected:
    std::optional<response> call(test_client& c, const std::string& method) {
        const std::string body = method == "POST" ? "Content-Length: 3\r\n\r\nabc" : "\r\n";
        if (!c.send(method + " /x HTTP/1.1\r\nHost: t\r\n" + body)) return std::nullopt;
        return c.read_response();
    }
};

TEST_F(ProxyBackendTest, IdempotentRequestOnADeadReusedConnectionIsRetriedOnce) {
    start_with({.die_on_second = true});
    test_client c(port);
    auto a = call(c, "GET");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 200);
    auto b = call(c, "GET"); // the pooled connection dies on it: replayed on a fresh one
    ASSERT_TRUE(b);
    EXPECT_EQ(b->status, 200);
    EXPECT_EQ(metrics().retries.get(), 1);
    EXPECT_EQ(backend->connections, 2);
    EXPECT_EQ(backend->requests, 3);
}

// RFC 9112, 5.2: an upstream's obs-fold reaches the client as spaces inside the field it
// continues, never as a line of its own that a lenient client would read as a second field.
TEST_F(ProxyBackendTest, AnUpstreamObsFoldIsNeverForwardedAsALine) {
    start_with({.answer = "HTTP/1.1 200 OK\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n"
                          "Content-Length: 2\r\n\r\nok"});
    test_client c(port);
    auto r = call(c, "GET");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "ok");
    EXPECT_EQ(r->head.find("\n "), std::string::npos) << r->head;
    EXPECT_TRUE(r->has("X-A: a   Transfer-Encoding: chunked")) << r->head;
    EXPECT_TRUE(r->has("Content-Length: 2")) << r->head;
    auto again = call(c, "GET"); // the connection stays in step
    ASSERT_TRUE(again);
    EXPECT_EQ(again->body, "ok");
}

TEST_F(ProxyBackendTest, PostOnADeadReusedConnectionIsNeverReplayed) {
    start_with({.die_on_second = true});
    test_client c(port);
    auto a = call(c, "POST");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 200);
    auto b = call(c, "POST");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->status, 502);
    EXPECT_EQ(metrics().retries.get(), 0);
    EXPECT_EQ(metrics().errors_of(upstream::upstream_error::reset), 1);
    EXPECT_TRUE(eventually([&] { return backend->posts == 2; }));
    // By design: a replay would have come by now.
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(backend->posts, 2); // received twice, once per request: never a third
    EXPECT_EQ(metrics().busy.get(), 0);
}

TEST_F(ProxyBackendTest, OutOfDescriptorsAnIdleUpstreamConnectionGoesFirst) {
    start_with({.answer_after = 4});
    {
        // Four requests at once: four upstream connections, then four idle in the pool.
        std::vector<std::unique_ptr<test_client>> cs;
        for (int i = 0; i < 4; ++i) {
            cs.push_back(std::make_unique<test_client>(port));
            ASSERT_TRUE(cs.back()->send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
        }
        for (auto& c : cs) {
            auto r = c->read_response();
            ASSERT_TRUE(r);
            EXPECT_EQ(r->status, 200);
        }
    }
    ASSERT_TRUE(eventually([&] { return metrics().idle.get() == 4; }));
    ASSERT_TRUE(eventually([&] { return srv->workers()[0]->connections() == 0; }));
    test_client keeper(port); // an idle client connection, which must not be the one closed
    ASSERT_TRUE(keeper.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(keeper.read_response());

    std::optional<response> r;
    {
        const descriptor_limit limit; // one spare: the client's socket; none for the accept
        test_client c(port);
        if (c.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n")) r = c.read_response();
    }
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    // One idle upstream connection closed, for the one newcomer, and no client connection.
    EXPECT_EQ(metrics().closes_of(upstream::upstream_close::pressure), 1);
    ASSERT_TRUE(keeper.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto k = keeper.read_response();
    ASSERT_TRUE(k);
    EXPECT_EQ(k->status, 200);
}

TEST_F(ProxyBackendTest, AtTheDescriptorLimitARequestAfterTheNewcomerClosesNothingMore) {
    start_with({.answer_after = 3});
    {
        std::vector<std::unique_ptr<test_client>> cs;
        for (int i = 0; i < 3; ++i) {
            cs.push_back(std::make_unique<test_client>(port));
            ASSERT_TRUE(cs.back()->send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
        }
        for (auto& c : cs)
            ASSERT_TRUE(c->read_response());
    }
    ASSERT_TRUE(eventually([&] { return metrics().idle.get() == 3; }));
    // Their client connections closed on the server's side too: no descriptor frees later.
    ASSERT_TRUE(eventually([&] { return srv->workers()[0]->connections() == 0; }));
    // At the limit: the newcomer's accept costs one idle pooled connection, and its requests
    // then go on the pooled ones left, needing no descriptor and closing nothing more.
    std::vector<std::unique_ptr<test_client>> served;
    {
        const descriptor_limit limit;
        served.push_back(std::make_unique<test_client>(port));
        ASSERT_TRUE(served.back()->send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
        auto r = served.back()->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(metrics().closes_of(upstream::upstream_close::pressure), 1);
        // The same client again: no accept, no descriptor needed, nothing closed.
        ASSERT_TRUE(served.back()->send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
        r = served.back()->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(metrics().closes_of(upstream::upstream_close::pressure), 1);
    }
}

TEST_F(ProxyBackendTest, MetricsHaveTheResponseTimeHistogram) {
    cfg.admin_listen = server::listen_address{"127.0.0.1", 0};
    start_with({});
    for (int i = 0; i < 3; ++i) {
        auto r = get_once("/x");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    test_client admin(srv->admin_endpoint()->port());
    ASSERT_TRUE(admin.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto m = admin.read_response();
    ASSERT_TRUE(m);
    const std::string server = "127.0.0.1:" + std::to_string(backend->port());
    for (const std::string& line :
         {"tarry_upstream_response_seconds_count{server=\"" + server + "\"} 3\n",
          "tarry_upstream_response_seconds_bucket{server=\"" + server + "\",le=\"+Inf\"} 3\n",
          "tarry_upstream_requests_total{server=\"" + server + "\"} 3\n",
          "tarry_upstream_closes_total{server=\"" + server + "\",reason=\"pressure\"} 0\n"})
        EXPECT_NE(m->body.find(line), std::string::npos) << line << m->body;
    EXPECT_NE(m->body.find("tarry_upstream_response_seconds_bucket{server=\"" + server +
                           "\",le=\"0.001\"}"),
              std::string::npos);
}

TEST_F(ProxyBackendTest, UpstreamClosingIdleConnectionsWithoutAHintCostsNoClientError) {
    start_with({.idle_close = 1000ms});
    test_client c(port);
    int errors = 0;
    int sent = 0;
    const auto until = steady::now() + 5s;
    for (int i = 0; steady::now() < until; ++i) {
        auto r = call(c, "GET");
        ++sent;
        if (!r || r->status != 200) ++errors;
        std::this_thread::sleep_for(std::chrono::milliseconds(900 + (i % 5) * 50));
    }
    EXPECT_EQ(errors, 0) << "of " << sent;
    // Most closes are seen while idle (the pending read); a request that met one was retried.
    EXPECT_GT(
        metrics().closes_of(upstream::upstream_close::upstream_close) + metrics().retries.get(), 0);
    std::cout << "[ info ] retries: " << metrics().retries.get() << ", upstream closes while idle: "
              << metrics().closes_of(upstream::upstream_close::upstream_close) << "\n";
}

// The only application restarts: while it is down each request gets 502, and the first request
// after it listens again is served (a lone server is never marked down for fail_timeout).
TEST_F(ProxyBackendTest, ALoneApplicationThatRestartsIsServedByTheFirstRequestAfter) {
    start_with({});
    const std::uint16_t app = backend->port();
    test_client c(port);
    auto a = call(c, "GET");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 200);
    backend.reset(); // killed: its pooled connection closes too
    for (int i = 0; i < 3; ++i) {
        test_client d(port);
        auto r = call(d, "GET");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 502);
    }
    backend = std::make_unique<thread_backend>(thread_backend::behaviour{}, app);
    test_client e(port);
    auto r = call(e, "GET");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200); // the very first: not refused for a fail_timeout
}

// Every server of a group down: a request still tries the one marked longest ago, and so the
// first request after one comes back is served, not answered 503 for fail_timeout.
TEST_F(ProxyBackendTest, WithEveryServerDownARequestStillTriesTheOldestMark) {
    backend = std::make_unique<thread_backend>(thread_backend::behaviour{});
    auto other = std::make_unique<thread_backend>(thread_backend::behaviour{});
    const std::uint16_t a = backend->port();
    const std::uint16_t b = other->port();
    ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(a)),
                   upstream::server_address::parse("127.0.0.1:" + std::to_string(b))};
    ups.fail_timeout = 1h;
    start();
    backend.reset();
    other.reset();
    for (int i = 0; i < 2; ++i) {
        auto r = get_once("/x");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 502); // both tried, both refused: both marked down
    }
    other = std::make_unique<thread_backend>(thread_backend::behaviour{}, b);
    auto r = get_once("/x");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(other->requests, 1);
}

// RFC 9112, 9.6: a client may shut down its sending side once its request is out (printf ... |
// nc -N, and the half-closing cases of public HTTP/1.1 suites). The answer still comes, then
// the connection closes.
TEST_F(ProxyBackendTest, AClientThatHalfClosesAfterItsRequestGetsTheAnswer) {
    start_with({});
    backend->hold_until = 1'000'000; // the EOF arrives while the proxy waits for the upstream
    test_client c(port);
    ASSERT_TRUE(c.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
    c.shutdown_write();
    ASSERT_TRUE(eventually([&] { return backend->requests == 1; }));
    // The end is read while the answer is held (no counter tells when: a moment for it).
    std::this_thread::sleep_for(50ms);
    backend->hold_until = 0;
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "ok");
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_TRUE(c.wait_closed(5s));
    // Answered whole: the upstream connection goes back to the pool.
    EXPECT_TRUE(eventually([&] { return metrics().idle.get() == 1; }));
    for (int i = 0; i < 3; ++i) { // and at once, the EOF in the same segment as the request
        test_client d(port);
        ASSERT_TRUE(d.send("GET /y HTTP/1.1\r\nHost: t\r\n\r\n"));
        d.shutdown_write();
        auto s = d.read_response();
        ASSERT_TRUE(s);
        EXPECT_EQ(s->status, 200);
    }
}

// Pipelined requests, then the half-close, while the first waits for the upstream: every
// request read whole before the end is answered, in order, the last with Connection: close
// (the end once took the first answer as the last, and the rest went unanswered). A request
// cut short behind them is an abort: the connection closes after the whole ones' answers.
TEST_F(ProxyBackendTest, AHalfClosedClientsPipelinedRequestsAreAllAnswered) {
    start_with({});
    for (const bool cut_short : {false, true}) {
        SCOPED_TRACE(cut_short ? "and a request cut short" : "whole requests only");
        const int before = backend->requests;
        backend->hold_until = 1'000'000;
        test_client c(port);
        std::string pipeline;
        for (const char* path : {"/1", "/2", "/3"})
            pipeline += std::string("GET ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n";
        if (cut_short) pipeline += "GET /4 HTTP/1.1\r\nHo";
        ASSERT_TRUE(c.send(pipeline));
        c.shutdown_write();
        ASSERT_TRUE(eventually([&] { return backend->requests == before + 1; }));
        std::this_thread::sleep_for(50ms); // the end is read while the first answer is held
        backend->hold_until = 0;
        for (int i = 0; i < 3; ++i) {
            auto r = c.read_response();
            ASSERT_TRUE(r) << "answer " << i + 1 << " of 3";
            EXPECT_EQ(r->status, 200);
            EXPECT_EQ(r->has("Connection: close"), i == 2 && !cut_short) << "answer " << i + 1;
        }
        EXPECT_TRUE(c.wait_closed(5s));
        EXPECT_EQ(c.pending(), "");
        EXPECT_EQ(backend->requests, before + 3);
    }
}

// Requests read after the client's end (behind a proxied answer that took its time): the last
// whole one is answered with Connection: close whoever answers it (the built-in answer once
// said nothing, then closed), and one that cannot come whole (its body cut short, or a body the
// client asked leave to send) is never started: nothing goes up for it, no 100 Continue.
TEST_F(ProxyBackendTest, AfterTheClientsEndTheLastAnswerSaysCloseAndNothingCutShortStarts) {
    custom.push_back(
        {"/b/", [](server::handler_context&) { return std::make_shared<http::hello_handler>(); }});
    start_with({});
    const std::string cut = "POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc";
    const std::string asks =
        "POST /up HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
    const std::string chunks =
        "POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
    const std::string asks_chunked = "POST /up HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                                     "Transfer-Encoding: chunked\r\n\r\n";
    for (const std::string& last : {std::string(), cut, asks, chunks, asks_chunked}) {
        SCOPED_TRACE(last.empty() ? "the built-in answer last" : last.substr(0, 40));
        const int before = backend->requests;
        const auto errors = metrics().closes_of(upstream::upstream_close::error);
        backend->hold_until = 1'000'000;
        test_client c(port);
        ASSERT_TRUE(c.send("GET /1 HTTP/1.1\r\nHost: t\r\n\r\n"
                           "GET /b/2 HTTP/1.1\r\nHost: t\r\n\r\n"
                           "GET /b/3 HTTP/1.1\r\nHost: t\r\n\r\n" +
                           last));
        c.shutdown_write();
        ASSERT_TRUE(eventually([&] { return backend->requests == before + 1; }));
        std::this_thread::sleep_for(50ms); // the end is read while the first answer is held
        backend->hold_until = 0;
        for (int i = 0; i < 3; ++i) {
            auto r = c.read_response();
            ASSERT_TRUE(r) << "answer " << i + 1 << " of 3";
            EXPECT_EQ(r->status, 200);
            EXPECT_EQ(r->has("Connection: close"), i == 2 && last.empty()) << "answer " << i + 1;
        }
        EXPECT_TRUE(c.wait_closed(5s));
        EXPECT_EQ(c.pending(), "");
        EXPECT_TRUE(eventually([&] { return metrics().busy.get() == 0; }));
        EXPECT_EQ(metrics().closes_of(upstream::upstream_close::error), errors)
            << "a request cut short went up, then its upstream connection was closed";
        EXPECT_EQ(backend->requests, before + 1);
    }
    EXPECT_EQ(metrics().opened.get(), 1);
}

// Half-closed and waiting for its answer when a graceful stop comes: the answer still comes
// (with Connection: close), and the stop completes once it is written.
TEST_F(ProxyBackendTest, AHalfClosedClientWaitingThroughAGracefulStopGetsItsAnswer) {
    start_with({});
    backend->hold_until = 1'000'000;
    test_client c(port);
    ASSERT_TRUE(c.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
    c.shutdown_write();
    ASSERT_TRUE(eventually([&] { return backend->requests == 1; }));
    srv->stop();
    ASSERT_TRUE(eventually([&] { return !test_client(port).connected(); })); // the stop ran
    backend->hold_until = 0;
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_TRUE(c.wait_closed(5s));
    runner.join();
    srv.reset();
}

// A half-close in the middle of a request body is an abort: no answer, and the upstream
// connection that carried the half request is closed, never pooled.
TEST_F(ProxyBackendTest, AClientThatHalfClosesMidBodyAborts) {
    start_with({});
    test_client c(port);
    ASSERT_TRUE(c.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabcde"));
    std::this_thread::sleep_for(50ms); // the half body is read before the end (no counter tells)
    c.shutdown_write();
    EXPECT_TRUE(c.wait_closed(5s));
    EXPECT_EQ(c.pending().find("HTTP/1.1 200"), std::string::npos) << c.pending();
    EXPECT_TRUE(eventually([&] { return metrics().busy.get() == 0; }));
    EXPECT_EQ(metrics().idle.get(), 0);
    EXPECT_EQ(metrics().closes_of(upstream::upstream_close::error), 1);
}

// The pool keeps what concurrency needed: 64 clients at once (above the old fixed cap of 32)
// open at most 64 upstream connections over 1,280 requests, none closed and reopened.
TEST_F(ProxyBackendTest, SixtyFourClientsAtOnceOpenAtMostSixtyFourConnections) {
    start_with({});
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 64; ++i) {
        clients.emplace_back([&] {
            test_client c(port);
            for (int n = 0; n < 20; ++n) {
                auto r = call(c, "GET");
                if (r && r->status == 200) ++ok;
            }
        });
    }
    for (auto& t : clients)
        t.join();
    EXPECT_EQ(ok, 1280);
    EXPECT_LE(backend->connections, 64);
    EXPECT_EQ(metrics().closes_of(upstream::upstream_close::max_idle), 0);
    EXPECT_EQ(metrics().closes_of(upstream::upstream_close::surplus), 0);
}

TEST_F(ProxyBackendTest, RoundRobinAndLeastConnectionsSpreadRequests) {
    thread_backend other({});
    backend = std::make_unique<thread_backend>(thread_backend::behaviour{});
    ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(backend->port())),
                   upstream::server_address::parse("127.0.0.1:" + std::to_string(other.port()))};
    start();
    test_client c(port);
    for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(call(c, "GET"));
    EXPECT_EQ(backend->requests, 5);
    EXPECT_EQ(other.requests, 5);
    TearDown();
    srv.reset();
}

TEST_F(ProxyBackendTest, LeastConnectionsPrefersTheIdleServer) {
    thread_backend other({});
    backend = std::make_unique<thread_backend>(thread_backend::behaviour{});
    ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(backend->port())),
                   upstream::server_address::parse("127.0.0.1:" + std::to_string(other.port()))};
    ups.balance = upstream::upstream_settings::balance_mode::least_conn;
    start();
    test_client c(port);
    for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(call(c, "GET"));
    EXPECT_EQ(backend->requests + other.requests, 10);
    EXPECT_GT(backend->requests, 0); // ties rotate
    EXPECT_GT(other.requests, 0);
    TearDown();
    srv.reset();
}

TEST_F(ProxyBackendTest, DownServerIsSkippedForAnother) {
    backend = std::make_unique<thread_backend>(thread_backend::behaviour{});
    ups.servers = {upstream::server_address::parse("127.0.0.1:1"),
                   upstream::server_address::parse("127.0.0.1:" + std::to_string(backend->port()))};
    start();
    for (int i = 0; i < 4; ++i) {
        auto r = get_once("/x");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(metrics(0).errors_of(upstream::upstream_error::connect), 1);
}

} // namespace
} // namespace tarry::test

namespace tarry::test {
namespace {

// Two routes naming one upstream share its group: one pool per server (a connection pooled by
// one route serves the other), one view of which servers are down, counted once in /metrics.
class SharedUpstreamTest : public ServerFromFileTest {};

TEST_F(SharedUpstreamTest, RoutesNamingOneUpstreamShareItsPool) {
    thread_backend backend({});
    const std::uint16_t port = free_port();
    const std::uint16_t admin = free_port();
    write("listen = \"127.0.0.1:" + std::to_string(port) +
          "\"\nadmin_listen = \"127.0.0.1:" + std::to_string(admin) +
          "\"\n[[route]]\nprefix = \"/a/\"\nupstream = \"app\"\n"
          "[[route]]\nprefix = \"/b/\"\nupstream = \"app\"\n"
          "[upstream.app]\nservers = [\"127.0.0.1:" +
          std::to_string(backend.port()) + "\"]\n");
    start();
    for (const char* path : {"/a/x", "/b/y", "/a/z"}) {
        test_client c(port);
        ASSERT_TRUE(c.send("GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(backend.requests, 3);
    EXPECT_EQ(backend.connections, 1) << "each route kept a pool of its own";
    test_client m(admin);
    ASSERT_TRUE(m.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto metrics = m.read_response();
    ASSERT_TRUE(metrics);
    const std::string line =
        "tarry_upstream_requests_total{server=\"127.0.0.1:" + std::to_string(backend.port()) +
        "\"} 3\n";
    EXPECT_NE(metrics->body.find(line), std::string::npos) << metrics->body;
}

} // namespace
} // namespace tarry::test

// The server in-process on 127.0.0.1:0 with real sockets and short timeouts. Every timing check
// is one-sided: "not before the deadline" is exact, and what must happen is waited for with a
// generous deadline, never timed, so a loaded machine makes these slower, never red.
#include "server_fixture.hpp"

#include <tarry/server/server.hpp>

#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

namespace tarry::test {
namespace {

using server::close_reason;
using server::config;

TEST_F(ServerTest, TwoRequestsOnOneConnection) {
    cfg.keep_alive_timeout = 65s;
    start();
    test_client c(port);
    ASSERT_TRUE(c.connected());
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(c.send(get));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, "Hello, World!");
        EXPECT_TRUE(r->has("Content-Type: text/plain"));
        EXPECT_TRUE(r->has("Content-Length: 13"));
        EXPECT_TRUE(r->has("Server: tarry"));
        EXPECT_TRUE(r->has("Keep-Alive: timeout=64"));
        EXPECT_FALSE(r->has("Connection: close"));
    }
    EXPECT_FALSE(c.closed());
}

TEST_F(ServerTest, DateIsCurrentImfFixdate) {
    start();
    test_client c(port);
    ASSERT_TRUE(c.send(get));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    const auto at = r->head.find("\r\nDate: ");
    ASSERT_NE(at, std::string::npos);
    const std::string date = r->head.substr(at + 8, 29);
    std::tm tm{};
    ASSERT_NE(strptime(date.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm), nullptr) << date;
    const std::time_t sent = timegm(&tm);
    EXPECT_LE(std::abs(std::time(nullptr) - sent), 2) << date;
}

TEST_F(ServerTest, IdleConnectionClosedAfterKeepAliveTimeoutNeverBefore) {
    cfg.keep_alive_timeout = 300ms;
    start();
    test_client c(port);
    // From before the request: the server cannot have answered earlier, whereas reading the
    // response can trail its write by a scheduling delay on a loaded machine.
    const auto answered = steady::now();
    ASSERT_TRUE(c.send(get));
    ASSERT_TRUE(c.read_response());
    const auto closed = c.wait_closed(10s);
    ASSERT_TRUE(closed);
    EXPECT_GE(*closed - answered, 300ms);
    EXPECT_TRUE(c.pending().empty()); // a silent close
    EXPECT_TRUE(eventually([&] { return closes(*srv, close_reason::keep_alive_timeout) == 1; }));
}

TEST_F(ServerTest, ActivityEveryHalfTimeoutKeepsItOpenForThreeTimeouts) {
    cfg.keep_alive_timeout = 300ms;
    start();
    test_client c(port);
    const auto until = steady::now() + 900ms;
    while (steady::now() < until) {
        ASSERT_TRUE(c.send(get));
        ASSERT_TRUE(c.read_response());
        std::this_thread::sleep_for(150ms);
    }
    EXPECT_FALSE(c.closed());
    EXPECT_EQ(closes(*srv, close_reason::keep_alive_timeout), 0);
}

TEST_F(ServerTest, SlowlorisTrickleClosedAtHeaderTimeoutWith408) {
    cfg.header_timeout = 300ms;
    start();
    const auto started = steady::now(); // the first request's deadline counts from accept
    test_client c(port);
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\n"));
    // One header line every 50 ms: the deadline is a total from the first byte, not a gap
    // (which each line would put off until the trickle ends).
    int lines = 0;
    for (; lines < 40 && !c.closed(); ++lines) {
        c.send("X-Trickle-" + std::to_string(lines) + ": y\r\n");
        c.wait_closed(50ms);
    }
    EXPECT_LT(lines, 40) << "closed only once the trickle ended";
    auto r = c.read_response(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(r->has("Connection: close"));
    const auto closed = c.wait_closed(5s);
    ASSERT_TRUE(closed);
    EXPECT_GE(*closed - started, 300ms);
    EXPECT_TRUE(eventually([&] { return closes(*srv, close_reason::header_timeout) == 1; }));
}

TEST_F(ServerTest, NothingSentIsClosedSilentlyAtHeaderTimeout) {
    cfg.header_timeout = 200ms;
    start();
    const auto started = steady::now(); // before connecting: the server accepts after this
    test_client c(port);
    const auto closed = c.wait_closed(5s);
    ASSERT_TRUE(closed);
    EXPECT_GE(*closed - started, 200ms);
    EXPECT_TRUE(c.pending().empty());
}

TEST_F(ServerTest, StalledBodyGets408AtBodyTimeout) {
    cfg.body_timeout = 250ms;
    custom.push_back({"/upload", [this](server::handler_context& h) {
                          return std::make_shared<upload_counter>(h.io, 1 << 20, counts);
                      }});
    start();
    test_client c(port);
    const auto sent = steady::now(); // before the server can have read the last body byte
    ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc"));
    auto r = c.read_response(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_GE(steady::now() - sent, 250ms);
    EXPECT_TRUE(c.wait_closed(5s));
    EXPECT_TRUE(eventually([&] { return closes(*srv, close_reason::body_timeout) == 1; }));
}

TEST_F(ServerTest, BodyReadsResetTheBodyTimeout) {
    cfg.body_timeout = 300ms;
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 8\r\n\r\n"));
    for (int i = 0; i < 8; ++i) { // 8 gaps of 150 ms: 1.2 s in all, each gap under the timeout
        std::this_thread::sleep_for(150ms);
        ASSERT_TRUE(c.send("x"));
    }
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405); // the hello route takes GET and HEAD
    EXPECT_FALSE(c.closed());
}

TEST_F(ServerTest, ClientThatStopsReadingIsClosedAtSendTimeout) {
    // Larger than what loopback's auto-tuned socket buffers can absorb.
    const auto root =
        std::filesystem::temp_directory_path() / ("tarry_big_" + std::to_string(::getpid()));
    std::filesystem::create_directories(root);
    std::ofstream(root / "big") << std::string(32 << 20, 'x');
    cfg.docroot = root;
    cfg.send_timeout = 300ms;
    start();
    test_client c(port, 4096);
    const auto sent = steady::now(); // before the server's first write
    ASSERT_TRUE(c.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_TRUE(eventually([&] { return closes(*srv, close_reason::send_timeout) == 1; }, 10s));
    EXPECT_GE(steady::now() - sent, 300ms);
    std::filesystem::remove_all(root);
}

TEST_F(ServerTest, PipelinedResponsesComeInRequestOrder) {
    const auto root =
        std::filesystem::temp_directory_path() / ("tarry_pipe_" + std::to_string(::getpid()));
    std::filesystem::create_directories(root);
    for (const char* n : {"a", "b", "c"})
        std::ofstream(root / n) << "body-" << n;
    cfg.docroot = root;
    start();
    test_client c(port);
    ASSERT_TRUE(
        c.send("GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n"
               "GET /missing HTTP/1.1\r\nHost: t\r\n\r\nGET /c HTTP/1.1\r\nHost: t\r\n\r\n"));
    for (const char* want : {"body-a", "body-b", "", "body-c"}) {
        auto r = c.read_response();
        ASSERT_TRUE(r);
        if (*want == '\0') {
            EXPECT_EQ(r->status, 404);
        } else {
            EXPECT_EQ(r->status, 200);
            EXPECT_EQ(r->body, want);
        }
    }
    std::filesystem::remove_all(root);
}

TEST_F(ServerTest, Http10ClosesUnlessKeepAliveRequested) {
    start();
    {
        test_client c(port);
        ASSERT_TRUE(c.send("GET / HTTP/1.0\r\n\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_TRUE(r->has("Connection: close"));
        EXPECT_TRUE(c.wait_closed());
    }
    {
        test_client c(port);
        ASSERT_TRUE(c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_TRUE(r->has("Connection: keep-alive"));
        ASSERT_TRUE(c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        EXPECT_TRUE(c.read_response());
        EXPECT_FALSE(c.closed());
    }
}

TEST_F(ServerTest, ConnectionCloseIsHonoured) {
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_TRUE(c.wait_closed());
}

TEST_F(ServerTest, MaxRequestsPerConnection) {
    cfg.max_requests_per_connection = 3;
    start();
    test_client c(port);
    for (int i = 1; i <= 3; ++i) {
        ASSERT_TRUE(c.send(get));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->has("Connection: close"), i == 3) << i;
    }
    EXPECT_TRUE(c.wait_closed());
}

struct bad_request {
    std::string bytes;
    int status;
};

class MalformedRequestTest : public ServerTest,
                             public ::testing::WithParamInterface<bad_request> {};

TEST_P(MalformedRequestTest, GetsItsStatusAndAClose) {
    cfg.max_header_bytes = 1024;
    cfg.max_body_bytes = 100;
    start();
    test_client c(port);
    ASSERT_TRUE(c.send(GetParam().bytes));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, GetParam().status);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_TRUE(c.wait_closed(5s));
}

INSTANTIATE_TEST_SUITE_P(
    Classes, MalformedRequestTest,
    ::testing::Values(
        bad_request{"GET / HTTP/1.1\r\n\r\n", 400},                                // no Host
        bad_request{"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},          // two Hosts
        bad_request{"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n  folded\r\n\r\n", 400}, // obs-fold
        bad_request{"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400}, // space before colon
        bad_request{"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                    "Content-Length: 3\r\n\r\n",
                    400},
        bad_request{"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: foo, chunked\r\n\r\n", 501},
        bad_request{"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
        bad_request{"GET /" + std::string(2000, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n", 414},
        bad_request{"GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(2000, 'a') + "\r\n\r\n", 431},
        bad_request{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n", 413},
        bad_request{"GET / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n\r\n", 417},
        bad_request{"G\x01T / HTTP/1.1\r\nHost: a\r\n\r\n", 400}));

TEST_F(ServerTest, ExpectContinue) {
    custom.push_back({"/upload", [this](server::handler_context& h) {
                          return std::make_shared<upload_counter>(h.io, 1 << 20, counts);
                      }});
    start();
    test_client c(port);
    ASSERT_TRUE(c.send(
        "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
    auto interim = c.read_response();
    ASSERT_TRUE(interim);
    EXPECT_EQ(interim->status, 100);
    ASSERT_TRUE(c.send("hello"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "5");
    ASSERT_TRUE(c.send(get)); // the body was consumed: the connection is in step
    auto next = c.read_response();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->status, 200);
}

TEST_F(ServerTest, GracefulStopFinishesTheRequestInFlight) {
    cfg.keep_alive_timeout = 60s;
    start();
    test_client idle(port);
    ASSERT_TRUE(idle.send(get));
    ASSERT_TRUE(idle.read_response());
    test_client busy(port);
    ASSERT_TRUE(busy.send("GET / HTTP/1.1\r\nHost: t\r\n")); // headers not finished yet
    ASSERT_TRUE(eventually([&] { return in_phase(*srv, server::conn_phase::header) == 1; }));

    srv->stop();
    EXPECT_TRUE(idle.wait_closed(3s)); // idle connections close at once
    test_client late(port);            // the listener is closed
    EXPECT_FALSE(late.connected() && late.send(get) && late.read_response(500ms));

    ASSERT_TRUE(busy.send("\r\n"));
    auto r = busy.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_TRUE(busy.wait_closed());
    runner.join(); // run() returns by itself: nothing is left to keep the workers alive
    srv.reset();
}

TEST_F(ServerTest, StopWithNothingOpenReturnsPromptly) {
    cfg.drain_timeout = 1h; // nothing to drain: run() returns without waiting for it
    srv = std::make_unique<server::server>(cfg);
    auto ran = std::async(std::launch::async, [this] { srv->run(); });
    srv->stop();
    // No Date timer or empty timeout list holds it.
    ASSERT_EQ(ran.wait_for(60s), std::future_status::ready);
    srv.reset();
}

TEST_F(ServerTest, TwoWorkersShareOnePort) {
    cfg.workers = 2;
    start();
    for (int i = 0; i < 20; ++i) {
        test_client c(port);
        ASSERT_TRUE(c.send(get));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
}

// ---- Handlers that answer later (the handler seam) ----

class AsyncHandlerTest : public ServerTest {
protected:
    void stream_route(slow_stream::shape shape) {
        custom.push_back({"/stream", [this, shape](server::handler_context& h) {
                              return std::make_shared<slow_stream>(h.io, shape, counts);
                          }});
    }
    void upload_route(std::size_t per_call) {
        custom.push_back({"/upload", [this, per_call](server::handler_context& h) {
                              return std::make_shared<upload_counter>(h.io, per_call, counts);
                          }});
    }
    static std::string expected_body(const slow_stream::shape& s) {
        std::string b;
        for (int i = 0; i < s.pieces; ++i)
            b += std::string(s.piece_size, static_cast<char>('a' + i % 26));
        return b;
    }
};

TEST_F(AsyncHandlerTest, StreamsAChunkedBodyAndKeepsPipelinedResponsesInOrder) {
    const slow_stream::shape shape{};
    stream_route(shape);
    start();
    test_client c(port);
    // Both at once: the second must wait for the first's answer, which comes later.
    ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n" + get));
    auto first = c.read_response();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->status, 200);
    EXPECT_TRUE(first->has("Transfer-Encoding: chunked"));
    EXPECT_EQ(first->body, expected_body(shape));
    auto second = c.read_response();
    ASSERT_TRUE(second);
    EXPECT_EQ(second->body, "Hello, World!");
    EXPECT_FALSE(c.closed());
    EXPECT_EQ(counts.finished, 1);
    EXPECT_TRUE(eventually([&] { return counts.alive == 0; }));
}

TEST_F(AsyncHandlerTest, Http10ClientGetsTheBodyDelimitedByTheClose) {
    const slow_stream::shape shape{3, 100, 20ms, 5ms};
    stream_route(shape);
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_EQ(r->head.find("Content-Length"), std::string::npos);
    EXPECT_EQ(r->body, expected_body(shape));
    EXPECT_TRUE(c.closed());
}

TEST_F(AsyncHandlerTest, ClientGoneMidStreamAbortsTheAnswer) {
    stream_route({50, 1000, 10ms, 20ms});
    start();
    {
        test_client c(port);
        ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(c.wait_for("\r\n\r\n")); // the head is out, the pieces follow
    }
    EXPECT_TRUE(eventually([&] { return counts.aborted == 1; }));
    EXPECT_TRUE(eventually([&] { return counts.alive == 0; }));
    EXPECT_EQ(counts.finished, 0);
    // The server goes on: the connection is gone and a new one is served.
    test_client d(port);
    ASSERT_TRUE(d.send(get));
    auto r = d.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

TEST_F(AsyncHandlerTest, SlowReaderMakesTheAnswerWaitForRoom) {
    const slow_stream::shape shape{512, 32 * 1024, 1ms,
                                   0ms}; // 16 MiB: more than the kernel buffers
    stream_route(shape);
    start();
    test_client c(port, 4096);
    ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
    // Not reading: the socket and then the queue fill up.
    EXPECT_TRUE(eventually([&] { return counts.paused > 0; }));
    auto r = c.read_response(10s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.size(), expected_body(shape).size());
    EXPECT_EQ(r->body, expected_body(shape));
    EXPECT_EQ(counts.finished, 1);
}

TEST_F(AsyncHandlerTest, UploadIsTakenWithBackpressure) {
    upload_route(1000);
    start();
    test_client c(port);
    const std::string body(200 * 1000, 'u');
    ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body + get));
    auto r = c.read_response(10s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::to_string(body.size()));
    EXPECT_GT(counts.paused, 10);
    auto next = c.read_response();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "Hello, World!");
}

TEST_F(AsyncHandlerTest, ChunkedUploadIsTakenWhole) {
    upload_route(7);
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "a\r\n0123456789\r\n5\r\nabcde\r\n0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "15");
}

TEST_F(AsyncHandlerTest, RequestsAHandlerCannotTakeAreRefusedAtTheHeader) {
    cfg.body_timeout = 1h;
    start();
    test_client c(port);
    // The built-in answer takes no body: 405 at once, not after a body that never comes (nor
    // 408 at the body timeout).
    ASSERT_TRUE(c.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc"));
    auto r = c.read_response(30s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
}

TEST_F(AsyncHandlerTest, StopWaitsForAnAnswerInFlight) {
    stream_route({3, 100, 200ms, 10ms});
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(eventually([&] { return counts.alive == 1; })); // the answer has begun
    srv->stop();
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_EQ(r->body.size(), 300U);
    runner.join();
    srv.reset();
}

} // namespace
} // namespace tarry::test

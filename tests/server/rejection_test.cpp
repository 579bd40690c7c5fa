// Malformed requests over real sockets: each is answered as soon as its bytes show it is
// malformed, never by a timeout. The timeouts are a few seconds, so a request left waiting would
// get 408 (or nothing) instead of the status these tests expect; no timing is asserted.
#include "test_client.hpp"
#include "test_handlers.hpp"

#include <tarry/server/server.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

namespace tarry::test {
namespace {

using server::config;

class RejectionTest : public ::testing::Test {
protected:
    config cfg;
    handler_counts counts;
    std::unique_ptr<server::server> srv;
    std::thread runner;
    std::uint16_t port = 0;

    RejectionTest() {
        cfg.listen = {{"127.0.0.1", 0}};
        cfg.workers = 1;
        cfg.drain_timeout = 5s;
        cfg.header_timeout = 3s;
        cfg.body_timeout = 3s;
    }

    void SetUp() override {
        // Requests with bodies go to a handler that reads them, so that the body is parsed
        // before any answer (the built-in answer refuses a POST at its header).
        std::vector<server::custom_route> custom{{"/upload", [this](server::handler_context& h) {
                                                      return std::make_shared<upload_counter>(
                                                          h.io, std::size_t{1} << 20, counts);
                                                  }}};
        srv = std::make_unique<server::server>(cfg, std::vector<std::string>{}, custom);
        port = srv->endpoints().at(0).port();
        runner = std::thread([this] { srv->run(); });
    }

    void TearDown() override {
        srv->stop();
        runner.join();
    }

    /// Sends `bytes` on a new connection and expects one response with `status`, then a close
    /// with nothing after the response.
    void expect_answer(const std::string& bytes, int status) {
        SCOPED_TRACE(::testing::PrintToString(bytes.substr(0, 80)));
        test_client c(port);
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(c.send(bytes));
        const auto r = c.read_response(10s);
        ASSERT_TRUE(r) << "no response";
        EXPECT_EQ(r->status, status);
        if (status >= 400) {
            EXPECT_TRUE(r->has("Connection: close"));
            EXPECT_TRUE(c.wait_closed(10s));
            EXPECT_TRUE(c.pending().empty()) << c.pending();
        }
    }
};

const std::string chunked_post =
    "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";

TEST_F(RejectionTest, CompleteHeaderWithAnIncompleteRequestLineIs400) {
    expect_answer("GET / \r\n\r\n", 400);
    expect_answer("GET / H\r\n\r\n", 400);
}

TEST_F(RejectionTest, RequestLineWithoutVersionIs400) {
    expect_answer("GET /\r\n", 400);
}

TEST_F(RejectionTest, BinaryGarbageIs400) {
    // What a TLS client sends first to a plain-text port.
    expect_answer(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11), 400);
}

TEST_F(RejectionTest, GarbageAfterTheRequestLineIs400) {
    expect_answer(std::string("GET / HTTP/1.1\r\n\0\x01\x02", 19), 400);
    expect_answer("GET / HTTP/1.1\r\nHost: a\r\nX: \x1b[2J", 400);
}

TEST_F(RejectionTest, LeadingEmptyLinesAreStillTolerated) {
    expect_answer("\r\n\r\n" + get, 200);
}

TEST_F(RejectionTest, TargetOutsideRfc3986Is400) {
    expect_answer("GET /\xc0\xaf HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    expect_answer("GET /\"x HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

TEST_F(RejectionTest, OverlongMethodIs501) {
    expect_answer(std::string(64, 'A'), 501);
}

TEST_F(RejectionTest, ConnectIs501) {
    expect_answer("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 501);
}

TEST_F(RejectionTest, FinalChunkEndingInBareLfIs400) {
    expect_answer(chunked_post + "0\r\n\n", 400);
}

TEST_F(RejectionTest, RequestSmuggledInAChunkExtensionIsNotAnswered) {
    expect_answer("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5;a=\"\nAB\"\r\n\n0040\r\n0\r\n\r\n"
                  "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"
                  "PPPPPPPPPPPPPPPPPPPPPPPP\r\n0\r\n\r\n",
                  400);
}

TEST_F(RejectionTest, RequestSmuggledPastAnEarlyAnswerIsNotAnswered) {
    // The built-in answer refuses the POST at its header (405) and discards the body: the
    // malformed chunk there closes the connection, and the hidden request is never answered.
    test_client c(port);
    ASSERT_TRUE(c.send("POST /hello.txt HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "5;a=\"\nAB\"\r\n\n0040\r\n0\r\n\r\n"
                       "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"
                       "PPPPPPPPPPPPPPPPPPPPPPPP\r\n0\r\n\r\n"));
    const auto r = c.read_response(10s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
    EXPECT_TRUE(c.wait_closed(10s));
    EXPECT_TRUE(c.pending().empty()) << c.pending();
}

TEST_F(RejectionTest, ChunkExtensionsBeyondTheHeaderLimitAre413) {
    std::string body;
    const std::string ext = ";e=" + std::string(1000, 'x');
    for (std::size_t total = 0; total <= cfg.max_header_bytes; total += ext.size())
        body += "1" + ext + "\r\na\r\n";
    expect_answer(chunked_post + body + "0\r\n\r\n", 413);
}

TEST_F(RejectionTest, EmptyHostIsServed) {
    expect_answer("GET / HTTP/1.1\r\nHost:\r\n\r\n", 200);
}

} // namespace
} // namespace tarry::test

// The request's way upstream on its own, without sockets: the forwarded head, the chunk framing
// of a body, the bound on what waits, and the replay copy.
#include <tarry/upstream/proxy_tunnel.hpp>
#include <tarry/upstream/request_forwarding.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tarry::upstream {
namespace {

namespace bh = boost::beast::http;

http::request_head request(std::string_view header, std::string target = "/",
                           std::string host = "example.com") {
    http::request_head req;
    req.method = bh::string_to_verb(header.substr(0, header.find(' ')));
    req.target = std::move(target);
    req.host = std::move(host);
    req.header = header;
    return req;
}

/// Everything written out: what next() hands the connection, each write finishing at once.
std::string drain(request_writer& w) {
    std::string out;
    while (w.has_pending()) {
        out.append(w.next());
        w.wrote();
    }
    return out;
}

TEST(RequestForwardingTest, IdempotentMethodsAreTheOnesAReplayMaySendTwice) {
    EXPECT_TRUE(is_idempotent(bh::verb::get));
    EXPECT_TRUE(is_idempotent(bh::verb::head));
    EXPECT_TRUE(is_idempotent(bh::verb::options));
    EXPECT_TRUE(is_idempotent(bh::verb::trace));
    EXPECT_TRUE(is_idempotent(bh::verb::put));
    EXPECT_TRUE(is_idempotent(bh::verb::delete_));
    EXPECT_FALSE(is_idempotent(bh::verb::post));
    EXPECT_FALSE(is_idempotent(bh::verb::patch));
    EXPECT_FALSE(is_idempotent(bh::verb::connect));
}

TEST(RequestForwardingTest, HopByHopFieldsAreDroppedAndForwardedOnesAdded) {
    const std::string header = "get /a?b HTTP/1.1\r\nHost: example.com\r\n"
                               "Connection: keep-alive, X-Private\r\nKeep-Alive: timeout=5\r\n"
                               "TE: trailers\r\nX-Private: secret\r\nAccept: */*\r\n"
                               "X-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: https\r\n\r\n";
    forward_context ctx;
    ctx.server = "127.0.0.1:3000";
    ctx.peer = "192.0.2.7";
    const forwarded_head head = forward_head(request(header, "/a?b"), ctx);
    EXPECT_FALSE(head.chunked);
    // The method as the client spelled it; always HTTP/1.1 upstream.
    EXPECT_EQ(head.bytes, "get /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n"
                          "X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n"
                          "X-Forwarded-Host: example.com\r\n\r\n");
}

TEST(RequestForwardingTest, TrustedForwardedFieldsAreKeptAndAppendedTo) {
    const std::string header = "GET / HTTP/1.1\r\nHost: example.com\r\n"
                               "X-Forwarded-For: 10.0.0.1\r\nX-Forwarded-For: 10.0.0.2\r\n"
                               "X-Forwarded-Proto: https\r\nX-Forwarded-Host: front\r\n\r\n";
    forward_context ctx;
    ctx.peer = "192.0.2.7";
    ctx.secure = true;
    ctx.trust_forwarded = true;
    const forwarded_head head = forward_head(request(header), ctx);
    EXPECT_EQ(head.bytes, "GET / HTTP/1.1\r\nHost: example.com\r\n"
                          "X-Forwarded-Proto: https\r\nX-Forwarded-Host: front\r\n"
                          "X-Forwarded-For: 10.0.0.1, 10.0.0.2, 192.0.2.7\r\n\r\n");
}

TEST(RequestForwardingTest, ARequestWithoutHostNamesTheServerAndAUnixSocketLocalhost) {
    const std::string header = "GET / HTTP/1.0\r\n\r\n";
    forward_context ctx;
    ctx.server = "10.1.2.3:8080";
    ctx.secure = true;
    EXPECT_EQ(forward_head(request(header, "/", ""), ctx).bytes,
              "GET / HTTP/1.1\r\nHost: 10.1.2.3:8080\r\nX-Forwarded-Proto: https\r\n\r\n");
    ctx.server = "unix:/run/app.sock";
    EXPECT_EQ(forward_head(request(header, "/", ""), ctx).bytes,
              "GET / HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-Proto: https\r\n\r\n");
}

TEST(RequestForwardingTest, TheBodyFramingIsRestatedChunkedWinningOverALength) {
    const std::string with_length = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n";
    const forwarded_head a = forward_head(request(with_length, "/", "h"), {});
    EXPECT_FALSE(a.chunked);
    EXPECT_NE(a.bytes.find("\r\nContent-Length: 5\r\n\r\n"), std::string::npos);

    const std::string chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                                "Content-Length: 5\r\n\r\n";
    const forwarded_head b = forward_head(request(chunked, "/", "h"), {});
    EXPECT_TRUE(b.chunked);
    EXPECT_NE(b.bytes.find("\r\nTransfer-Encoding: chunked\r\n\r\n"), std::string::npos);
    EXPECT_EQ(b.bytes.find("Content-Length"), std::string::npos);
}

TEST(RequestForwardingTest, AnUpgradeGoesUpWithItsConnectionToken) {
    const std::string header = "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n"
                               "Upgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n";
    forward_context ctx;
    const forwarded_head refused = forward_head(request(header, "/ws", "h"), ctx);
    EXPECT_EQ(refused.bytes.find("Upgrade"), std::string::npos);
    ctx.upgrade = "websocket";
    const forwarded_head passed = forward_head(request(header, "/ws", "h"), ctx);
    EXPECT_NE(passed.bytes.find("\r\nSec-WebSocket-Key: k\r\n"), std::string::npos);
    EXPECT_NE(passed.bytes.find("\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"),
              std::string::npos);
}

TEST(RequestForwardingTest, AChunkedBodyIsFramedPieceByPieceAndEnded) {
    request_writer w;
    w.set_chunked(true);
    w.append("HEAD\r\n\r\n");
    w.append_body("hello");
    w.append_body(std::string(26, 'x'));
    w.end_body();
    EXPECT_EQ(drain(w),
              "HEAD\r\n\r\n5\r\nhello\r\n1a\r\n" + std::string(26, 'x') + "\r\n0\r\n\r\n");
}

TEST(RequestForwardingTest, ABodyWithALengthGoesAsItIs) {
    request_writer w;
    w.append("HEAD\r\n\r\n");
    w.append_body("hello");
    w.end_body();
    EXPECT_EQ(drain(w), "HEAD\r\n\r\nhello");
}

TEST(RequestForwardingTest, RoomIsWhatTheBoundLeavesAndComesBackOnceWritten) {
    request_writer w;
    EXPECT_EQ(w.room(), request_writer::max_pending);
    w.append_body(std::string(1000, 'a'));
    EXPECT_EQ(w.room(), request_writer::max_pending - 1000);
    w.append_body(std::string(request_writer::max_pending, 'b'));
    EXPECT_EQ(w.room(), 0U);
    // Being written no longer counts as waiting.
    const std::string& writing = w.next();
    EXPECT_EQ(writing.size(), request_writer::max_pending + 1000);
    EXPECT_EQ(w.room(), request_writer::max_pending);
    EXPECT_FALSE(w.has_pending());
}

TEST(RequestForwardingTest, BytesBeingWrittenStayInPlaceWhileMoreArrive) {
    request_writer w;
    w.append("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    const std::string& writing = w.next();
    const char* at = writing.data();
    w.append_body("more bytes, more bytes, more bytes");
    EXPECT_EQ(writing.data(), at);
    EXPECT_EQ(writing, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    w.wrote();
    EXPECT_EQ(drain(w), "more bytes, more bytes, more bytes");
}

TEST(RequestForwardingTest, AReplayStartsTheWholeRequestOver) {
    request_writer w;
    w.set_chunked(true);
    w.append("HEAD\r\n\r\n");
    w.append_body("abc");
    (void)w.next(); // in flight when the connection died
    w.append_body("de");
    w.end_body();
    ASSERT_TRUE(w.replayable());
    w.replay();
    EXPECT_EQ(drain(w), "HEAD\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
}

TEST(RequestForwardingTest, ARequestPastTheReplayBoundIsNoLongerReplayableAndItsCopyFreed) {
    request_writer w;
    w.append(std::string(request_writer::max_replay - 10, 'h'));
    w.append_body(std::string(10, 'b'));
    EXPECT_TRUE(w.replayable()); // exactly the bound
    EXPECT_EQ(w.replay_copy().size(), request_writer::max_replay);
    w.append_body("x");
    EXPECT_FALSE(w.replayable());
    EXPECT_EQ(w.replay_copy().capacity(), std::string().capacity());
    // What goes up is not affected.
    EXPECT_EQ(drain(w).size(), request_writer::max_replay + 1);
}

TEST(RequestForwardingTest, ForgettingTheReplayFreesItsCopy) {
    request_writer w;
    w.append("GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n");
    w.forget_replay();
    EXPECT_FALSE(w.replayable());
    EXPECT_TRUE(w.replay_copy().empty());
    EXPECT_TRUE(w.has_pending());
}

TEST(RequestForwardingTest, A101PassesOnItsUpgradeFieldButNoOtherHopByHopOne) {
    const std::string header = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                               "Connection: Upgrade, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: t=1\r\n"
                               "Sec-WebSocket-Accept: abc\r\n\r\n";
    std::string fields;
    append_upgrade_fields(fields, header);
    EXPECT_EQ(fields, "Upgrade: websocket\r\nSec-WebSocket-Accept: abc\r\n");
}

} // namespace
} // namespace tarry::upstream

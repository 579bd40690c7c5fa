#include "connection_fixture.hpp"

#include <tarry/h2/request_checks.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace h2_test {
namespace {

namespace flag = h2::flag;

field_list with_expect(field_list f) {
    f.emplace_back("expect", "100-continue");
    return f;
}

// The prefaces.

TEST_F(connection_test, ServerPrefaceSaysOurSettingsAndRaisesTheConnectionWindow) {
    config.max_concurrent_streams = 7;
    config.enable_connect_protocol = true;
    open(false);
    EXPECT_TRUE(conn->settings_pending());
    const auto f = frames();
    ASSERT_EQ(f.size(), 2U);
    ASSERT_EQ(f[0].type, frame_type::settings);
    h2::settings s;
    EXPECT_EQ(h2::apply_settings(s, h2::as_bytes(f[0].payload)), error_code::no_error);
    EXPECT_EQ(s.max_concurrent_streams, 7U);
    EXPECT_EQ(s.enable_connect_protocol, 1U);
    EXPECT_EQ(s.max_header_list_size, config.header_limits.max_list_size);
    EXPECT_EQ(f[1].type, frame_type::window_update);
    EXPECT_EQ(f[1].stream, 0U);

    send(client_start());
    const auto g = frames();
    ASSERT_EQ(g.size(), 1U);
    EXPECT_EQ(g[0].type, frame_type::settings);
    EXPECT_TRUE(g[0].has(flag::ack));
    send(raw_frame(frame_type::settings, flag::ack, 0));
    EXPECT_FALSE(conn->settings_pending());
    EXPECT_EQ(owner.acks, 1U);
}

TEST_F(connection_test, PrefaceArrivesInPieces) {
    open(false);
    frames();
    const std::string start = client_start();
    for (char c : start)
        send(std::string_view(&c, 1));
    const auto f = frames();
    ASSERT_EQ(f.size(), 1U);
    EXPECT_TRUE(f[0].has(flag::ack));
}

TEST_F(connection_test, WrongPrefaceIsAProtocolError) {
    open(false);
    frames();
    send("GET / HTTP/1.1\r\n\r\n");
    expect_goaway(error_code::protocol_error);
}

TEST_F(connection_test, FirstFrameOtherThanSettingsIsAProtocolError) {
    open(false);
    frames();
    send(std::string(h2::client_preface) + raw_frame(frame_type::ping, 0, 0, "12345678"));
    expect_goaway(error_code::protocol_error);
}

// Requests and responses.

TEST_F(connection_test, BrowserGetIsAnsweredAndTheTableFreed) {
    open();
    send(headers_frame(1, browser_get("/index.html?q=1"), true));
    ASSERT_EQ(owner.requests.count(1), 1U);
    const auto& r = owner.requests[1];
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.scheme, "https");
    EXPECT_EQ(r.authority, "example.com");
    EXPECT_EQ(r.path, "/index.html?q=1");
    EXPECT_TRUE(r.end_stream);
    ASSERT_EQ(r.fields.size(), 3U); // the regular fields only, in order
    EXPECT_EQ(r.fields[0], (std::pair<std::string, std::string>{"user-agent", "Mozilla/5.0"}));
    EXPECT_FALSE(conn->idle());

    const std::array<h2::field, 1> fields{{{"content-type", "text/html"}}};
    EXPECT_TRUE(conn->respond(1, 200, fields, false, out));
    EXPECT_EQ(conn->data(1, "<html></html>", true, out), 13U);
    const auto f = frames();
    ASSERT_EQ(f.size(), 2U);
    EXPECT_EQ(f[0].type, frame_type::headers);
    EXPECT_EQ(f[0].fields, (field_list{{":status", "200"}, {"content-type", "text/html"}}));
    EXPECT_EQ(f[1].type, frame_type::data);
    EXPECT_TRUE(f[1].has(flag::end_stream));
    EXPECT_EQ(f[1].payload, "<html></html>");
    EXPECT_TRUE(conn->idle());
    EXPECT_EQ(conn->requests(), 1U);
    EXPECT_FALSE(conn->respond(1, 200, {}, true, out)); // gone
}

TEST_F(connection_test, InterimResponseBeforeTheFinalOne) {
    open();
    send(headers_frame(1, with_expect(post(3)), false));
    EXPECT_FALSE(conn->respond(1, 100, {}, true, out)); // an interim response cannot end it
    EXPECT_TRUE(conn->respond(1, 100, {}, false, out));
    send(data_frame(1, "abc", true));
    EXPECT_TRUE(conn->respond(1, 201, {}, true, out));
    const auto f = frames();
    ASSERT_EQ(f.size(), 2U);
    EXPECT_EQ(f[0].fields, (field_list{{":status", "100"}}));
    EXPECT_FALSE(f[0].has(flag::end_stream));
    EXPECT_EQ(f[1].fields, (field_list{{":status", "201"}}));
    EXPECT_TRUE(conn->idle());
}

TEST_F(connection_test, ResponseFieldsAreLoweredAndConnectionSpecificOnesLeftOut) {
    open();
    send(headers_frame(1, browser_get(), true));
    const std::array<h2::field, 4> fields{{{"Content-Type", "text/plain"},
                                           {"Connection", "keep-alive"},
                                           {"transfer-encoding", "chunked"},
                                           {"X-Upstream", "a"}}};
    conn->respond(1, 200, fields, true, out);
    const auto f = frames();
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(
        f[0].fields,
        (field_list{{":status", "200"}, {"content-type", "text/plain"}, {"x-upstream", "a"}}));
}

TEST_F(connection_test, HostStandsForAMissingAuthority) {
    open();
    send(headers_frame(
        1, {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {"host", "h.example"}}, true));
    EXPECT_EQ(owner.requests[1].authority, "h.example");
}

TEST_F(connection_test, PostBodyLargerThanTheInitialWindowIsReplenishedAsTaken) {
    open();
    const std::size_t size = 200000;
    send(headers_frame(1, post(size), false));
    const std::string chunk(16384, 'x');
    std::size_t sent = 0;
    std::int64_t stream_window = 65535;
    std::int64_t conn_window = config.connection_window;
    while (sent < size) {
        const std::size_t n = std::min<std::size_t>(
            {chunk.size(), size - sent, static_cast<std::size_t>(stream_window)});
        ASSERT_GT(n, 0U) << "the stream's window was never replenished";
        send(data_frame(1, std::string_view(chunk).substr(0, n), sent + n == size));
        sent += n;
        stream_window -= static_cast<std::int64_t>(n);
        conn_window -= static_cast<std::int64_t>(n);
        for (const auto& w : only(frames(), frame_type::window_update)) {
            const auto inc = h2::read_u31(h2::as_bytes(w.payload));
            (w.stream == 0 ? conn_window : stream_window) += inc;
            EXPECT_TRUE(w.stream == 0 || w.stream == 1);
        }
    }
    EXPECT_EQ(owner.bodies[1].size(), size);
    EXPECT_EQ(owner.ended.count(1), 1U);
    EXPECT_GT(conn_window, 0);
}

TEST_F(connection_test, PausedBodyHoldsTheWindowUntilResumed) {
    open();
    send(headers_frame(1, post(40000), false));
    owner.take = 0;
    send(data_frame(1, std::string(16384, 'a'), false));
    send(data_frame(1, std::string(16384, 'b'), false));
    send(data_frame(1, std::string(7232, 'c'), true));
    EXPECT_TRUE(only(frames(), frame_type::window_update).empty());
    EXPECT_EQ(owner.ended.count(1), 0U); // the end waits for the body
    owner.take = 10000;
    conn->resume(1, out);
    EXPECT_EQ(owner.bodies[1].size(), 10000U);
    owner.take = SIZE_MAX;
    conn->resume(1, out);
    EXPECT_EQ(owner.bodies[1].size(), 40000U);
    EXPECT_EQ(owner.bodies[1].substr(16384, 1), "b");
    EXPECT_EQ(owner.ended.count(1), 1U);
}

TEST_F(connection_test, DataBeyondTheStreamWindowIsAFlowControlError) {
    config.initial_window_size = 16384;
    open();
    send(raw_frame(frame_type::settings, flag::ack, 0));
    send(headers_frame(1, post(40000), false));
    owner.take = 0; // nothing taken: no update
    send(data_frame(1, std::string(16384, 'a'), false));
    send(data_frame(1, std::string(1, 'a'), false));
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::flow_control_error));
    EXPECT_EQ(owner.resets.size(), 1U);
    expect_alive();
}

TEST_F(connection_test, ResponseLargerThanTheWindowsWaitsForUpdates) {
    config.max_queued = 1 << 20;
    open();
    send(headers_frame(1, browser_get(), true));
    conn->respond(1, 200, {}, false, out);
    const std::string body(100000, 'z');
    EXPECT_EQ(conn->data(1, body, true, out), body.size());
    auto d = only(frames(), frame_type::data);
    std::size_t got = 0;
    for (const auto& f : d)
        got += f.payload.size();
    EXPECT_EQ(got, 65535U);
    send(window_update(1, 50000)); // the connection's window is still shut
    EXPECT_TRUE(only(frames(), frame_type::data).empty());
    send(window_update(0, 100000));
    d = only(frames(), frame_type::data);
    got = 0;
    for (const auto& f : d)
        got += f.payload.size();
    EXPECT_EQ(got, 34465U);
    ASSERT_FALSE(d.empty());
    EXPECT_TRUE(d.back().has(flag::end_stream));
    EXPECT_TRUE(conn->idle());
}

TEST_F(connection_test, QueueIsBoundedAndTheOwnerHearsOfRoom) {
    config.max_queued = 10000;
    open();
    send(settings_frame({{h2::settings_id::initial_window_size, 0}}));
    send(headers_frame(1, browser_get(), true));
    conn->respond(1, 200, {}, false, out);
    EXPECT_EQ(conn->data(1, std::string(25000, 'q'), false, out), 10000U);
    EXPECT_EQ(conn->room(1), 0U);
    send(window_update(1, 4000));
    EXPECT_EQ(conn->room(1), 4000U);
    EXPECT_EQ(owner.writable, (std::vector<std::uint32_t>{1}));
}

TEST_F(connection_test, SmallerInitialWindowMakesOpenStreamsNegative) {
    config.max_queued = 1 << 20;
    open();
    send(window_update(0, 1000000));
    send(headers_frame(1, browser_get(), true));
    conn->respond(1, 200, {}, false, out);
    conn->data(1, std::string(100000, 'n'), true, out);
    frames();
    // All 65,535 used; the new initial size 10,000 leaves -55,535 (6.9.2).
    send(settings_frame({{h2::settings_id::initial_window_size, 10000}}));
    send(window_update(1, 55535));
    EXPECT_TRUE(only(frames(), frame_type::data).empty());
    send(window_update(1, 100));
    const auto d = only(frames(), frame_type::data);
    ASSERT_EQ(d.size(), 1U);
    EXPECT_EQ(d[0].payload.size(), 100U);
}

TEST_F(connection_test, InitialWindowPastTheLargestIsAFlowControlError) {
    open();
    send(headers_frame(1, browser_get(), true));
    send(window_update(1, h2::max_window - 65535));
    send(settings_frame({{h2::settings_id::initial_window_size, 65536}}));
    expect_goaway(error_code::flow_control_error);
}

TEST_F(connection_test, ManyStreamsInterleaveRoundRobin) {
    config.max_queued = 1 << 20;
    open();
    for (std::uint32_t id = 1; id <= 19; id += 2)
        send(headers_frame(id, browser_get(), true));
    send(window_update(0, 10 * 100000));
    send(settings_frame({{h2::settings_id::initial_window_size, 0}}));
    frames();
    for (std::uint32_t id = 1; id <= 19; id += 2) {
        conn->respond(id, 200, {}, false, out);
        conn->data(id, std::string(100000, static_cast<char>('a' + id / 2)), true, out);
    }
    frames();
    send(settings_frame({{h2::settings_id::initial_window_size, 200000}}));
    const auto d = only(frames(), frame_type::data);
    // Each round gives every stream one frame: no stream's second frame before all had one.
    ASSERT_GE(d.size(), 20U);
    std::vector<std::uint32_t> first_round;
    for (std::size_t i = 0; i < 10; ++i)
        first_round.push_back(d[i].stream);
    std::sort(first_round.begin(), first_round.end());
    EXPECT_EQ(std::unique(first_round.begin(), first_round.end()), first_round.end());
    std::size_t total = 0;
    for (const auto& f : d)
        total += f.payload.size();
    EXPECT_EQ(total, 1000000U);
    EXPECT_TRUE(conn->idle());
}

TEST_F(connection_test, TrailersBothWays) {
    open();
    send(headers_frame(1, post(5), false));
    send(data_frame(1, "12345", false));
    send(headers_frame(1, {{"x-checksum", "abc"}}, true));
    EXPECT_EQ(owner.ended[1], (field_list{{"x-checksum", "abc"}}));
    conn->respond(1, 200, {}, false, out);
    conn->data(1, "body", false, out);
    const std::array<h2::field, 1> t{{{"grpc-status", "0"}}};
    EXPECT_TRUE(conn->trailers(1, t, out));
    const auto f = frames();
    ASSERT_EQ(f.size(), 3U);
    EXPECT_EQ(f[2].type, frame_type::headers);
    EXPECT_TRUE(f[2].has(flag::end_stream));
    EXPECT_EQ(f[2].fields, (field_list{{"grpc-status", "0"}}));
    EXPECT_TRUE(conn->idle());
}

TEST_F(connection_test, TrailersWithoutEndStreamResetTheStream) {
    open();
    send(headers_frame(1, post(5), false));
    send(headers_frame(1, {{"x-a", "b"}}, false));
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::protocol_error));
}

TEST_F(connection_test, OwnerResetIgnoresFramesInFlight) {
    config.max_resets = 1;
    open();
    send(headers_frame(1, post(100), false));
    conn->reset(1, error_code::cancel, out);
    EXPECT_TRUE(conn->idle());
    EXPECT_TRUE(owner.resets.empty());                // the owner knows
    send(data_frame(1, std::string(100, 'x'), true)); // sent before the peer saw the reset
    auto f = frames();
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].type, frame_type::rst_stream);
    EXPECT_EQ(f[0].code(), static_cast<std::uint32_t>(error_code::cancel));
    EXPECT_EQ(conn->resets(), 1U);
    // NO_ERROR after a whole response is no abuse and not counted.
    send(headers_frame(3, post(100), false));
    conn->respond(3, 413, {}, true, out);
    conn->reset(3, error_code::no_error, out);
    EXPECT_EQ(conn->resets(), 1U);
    expect_alive();
}

TEST_F(connection_test, PeerResetTellsTheOwner) {
    open();
    send(headers_frame(1, browser_get(), true));
    std::string rst;
    h2::write_rst_stream(rst, 1, error_code::cancel);
    send(rst);
    ASSERT_EQ(owner.peer_resets, (std::vector<std::uint32_t>{1}));
    EXPECT_EQ(owner.resets[0].second, error_code::cancel);
    EXPECT_TRUE(conn->idle());
    EXPECT_FALSE(conn->respond(1, 200, {}, true, out));
}

// Stream identifiers and states (RFC 9113, 5.1).

TEST_F(connection_test, EvenStreamIsAProtocolError) {
    open();
    send(headers_frame(2, browser_get(), true));
    expect_goaway(error_code::protocol_error);
}

TEST_F(connection_test, LowerStreamIsAProtocolError) {
    owner.answer = true;
    open();
    send(headers_frame(5, browser_get(), true));
    send(headers_frame(3, browser_get(), true));
    expect_goaway(error_code::protocol_error);
}

TEST_F(connection_test, HeadersOnAClosedStreamIsStreamClosed) {
    owner.answer = true;
    open();
    send(headers_frame(1, browser_get(), true));
    send(headers_frame(1, browser_get(), true));
    expect_goaway(error_code::stream_closed);
}

TEST_F(connection_test, DataOnAClosedStreamIsAStreamError) {
    owner.answer = true;
    open();
    send(headers_frame(1, browser_get(), true));
    send(data_frame(1, "late", true));
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::stream_closed));
    expect_alive();
}

TEST_F(connection_test, FramesOnAnIdleStreamAreProtocolErrors) {
    for (const std::string& f : {data_frame(1, "x", true), window_update(3, 1),
                                 raw_frame(frame_type::rst_stream, 0, 1, std::string(4, '\0'))}) {
        conn.reset();
        open();
        send(f);
        expect_goaway(error_code::protocol_error);
    }
}

TEST_F(connection_test, PriorityOnAnIdleStreamIsAcceptedAndIgnored) {
    open();
    send(raw_frame(frame_type::priority, 0, 9, std::string("\0\0\0\1\x10", 5)));
    EXPECT_TRUE(conn->idle());
    expect_alive();
    send(raw_frame(frame_type::priority, 0, 9, std::string("\0\0\0\x09\x10", 5))); // on itself
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::protocol_error));
}

TEST_F(connection_test, PushPromiseFromAClientIsAProtocolError) {
    open();
    send(raw_frame(frame_type::push_promise, flag::end_headers, 1, std::string("\0\0\0\2", 4)));
    expect_goaway(error_code::protocol_error);
}

TEST_F(connection_test, ConcurrentStreamsPastTheLimitAreRefused) {
    config.max_concurrent_streams = 2;
    open();
    send(headers_frame(1, browser_get(), true));
    send(headers_frame(3, browser_get(), true));
    send(headers_frame(5, browser_get(), true));
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].stream, 5U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::refused_stream));
    EXPECT_EQ(owner.requests.size(), 2U);
    conn->respond(1, 200, {}, true, out);
    send(headers_frame(7, browser_get(), true));
    EXPECT_EQ(owner.requests.size(), 3U);
}

// CONTINUATION.

TEST_F(connection_test, HeadersInContinuationsAreGathered) {
    open();
    std::string wire;
    h2::write_headers(wire, 1, block_of(browser_get()), true, 10); // 10-byte fragments
    send(wire);
    EXPECT_EQ(owner.requests[1].path, "/");
    EXPECT_FALSE(conn->receiving_headers());
}

TEST_F(connection_test, AFrameBetweenHeadersAndContinuationIsAProtocolError) {
    open();
    const std::string block = block_of(browser_get());
    send(raw_frame(frame_type::headers, flag::end_stream, 1, block.substr(0, 5)));
    EXPECT_TRUE(conn->receiving_headers());
    send(raw_frame(frame_type::ping, 0, 0, "12345678"));
    expect_goaway(error_code::protocol_error);
}

TEST_F(connection_test, ContinuationOnAnotherStreamIsAProtocolError) {
    open();
    const std::string block = block_of(browser_get());
    send(raw_frame(frame_type::headers, flag::end_stream, 1, block.substr(0, 5)));
    send(raw_frame(frame_type::continuation, flag::end_headers, 3, block.substr(5)));
    expect_goaway(error_code::protocol_error);
}

TEST_F(connection_test, ContinuationsAtTheirCapAndOnePast) {
    for (const std::uint32_t n : {config.max_continuations, config.max_continuations + 1}) {
        conn.reset();
        open();
        const std::string block = block_of(browser_get());
        send(raw_frame(frame_type::headers, flag::end_stream, 1, block.substr(0, 1)));
        for (std::uint32_t i = 1; i < n; ++i)
            send(raw_frame(frame_type::continuation, 0, 1, block.substr(i, 1)));
        send(raw_frame(frame_type::continuation, flag::end_headers, 1, block.substr(n)));
        if (n == config.max_continuations) {
            EXPECT_EQ(owner.requests.count(1), 1U);
            expect_alive();
        } else {
            expect_goaway(error_code::enhance_your_calm);
        }
        owner.requests.clear();
    }
}

TEST_F(connection_test, GatheredBlockAtItsCapIsDecoded) {
    config.max_block_size = 1000;
    open();
    // 1,000 one-byte fields: gathered whole and decoded, past the decoder's field count: 431.
    send(raw_frame(frame_type::headers, flag::end_stream, 1, std::string(600, '\x82')));
    send(raw_frame(frame_type::continuation, flag::end_headers, 1, std::string(400, '\x82')));
    const auto f = frames();
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].fields, (field_list{{":status", "431"}}));
    expect_alive();
}

TEST_F(connection_test, GatheredBlockPastItsCapEndsTheConnection) {
    config.max_block_size = 1000;
    open();
    send(raw_frame(frame_type::headers, 0, 1, std::string(600, '\x82')));
    send(raw_frame(frame_type::continuation, 0, 1, std::string(600, '\x82')));
    expect_goaway(error_code::enhance_your_calm);
}

TEST_F(connection_test, HeaderListPastTheDecoderLimitsIsAnswered431) {
    config.header_limits.max_fields = 4;
    open();
    send(headers_frame(1, browser_get(), false)); // 7 fields
    const auto f = frames();
    ASSERT_EQ(f.size(), 2U);
    EXPECT_EQ(f[0].fields, (field_list{{":status", "431"}}));
    EXPECT_TRUE(f[0].has(flag::end_stream));
    EXPECT_EQ(f[1].type, frame_type::rst_stream);
    EXPECT_TRUE(owner.requests.empty());
    send(data_frame(1, "in flight", true)); // ignored: this side reset it
    EXPECT_TRUE(frames().empty());
    expect_alive();
}

TEST_F(connection_test, CompressionErrorEndsTheConnection) {
    open();
    send(raw_frame(frame_type::headers, flag::end_headers | flag::end_stream, 1, "\xff\xff\xff"));
    expect_goaway(error_code::compression_error);
}

// Malformed requests (RFC 9113, 8.2 and 8.3): each a stream error, the connection goes on.

struct malformed_case {
    const char* what;
    field_list fields;
};

class malformed_request : public connection_test,
                          public ::testing::WithParamInterface<malformed_case> {};

TEST_P(malformed_request, IsResetWithProtocolError) {
    open();
    send(headers_frame(1, GetParam().fields, true));
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U) << GetParam().what;
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::protocol_error));
    EXPECT_TRUE(owner.requests.empty());
    expect_alive();
}

field_list with(field_list f, std::pair<std::string, std::string> extra) {
    f.push_back(std::move(extra));
    return f;
}

field_list without(field_list f, const std::string& name) {
    std::erase_if(f, [&](const auto& p) { return p.first == name; });
    return f;
}

INSTANTIATE_TEST_SUITE_P(
    Rfc9113, malformed_request,
    ::testing::Values(
        malformed_case{"upper case", with(browser_get(), {"X-Upper", "1"})},
        malformed_case{"pseudo after regular", with(browser_get(), {":foo", "1"})},
        malformed_case{
            "unknown pseudo",
            field_list{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":foo", "x"}}},
        malformed_case{"response pseudo", field_list{{":status", "200"},
                                                     {":method", "GET"},
                                                     {":scheme", "https"},
                                                     {":path", "/"}}},
        malformed_case{
            "duplicated :path",
            field_list{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":path", "/"}}},
        malformed_case{"no :method", without(browser_get(), ":method")},
        malformed_case{"no :scheme", without(browser_get(), ":scheme")},
        malformed_case{"no :path", without(browser_get(), ":path")},
        malformed_case{"empty :path", browser_get("")},
        malformed_case{"* without OPTIONS", browser_get("*")},
        malformed_case{"connection", with(browser_get(), {"connection", "keep-alive"})},
        malformed_case{"keep-alive", with(browser_get(), {"keep-alive", "5"})},
        malformed_case{"proxy-connection", with(browser_get(), {"proxy-connection", "x"})},
        malformed_case{"transfer-encoding", with(browser_get(), {"transfer-encoding", "chunked"})},
        malformed_case{"upgrade", with(browser_get(), {"upgrade", "websocket"})},
        malformed_case{"te: gzip", with(browser_get(), {"te", "gzip"})},
        malformed_case{"value with LF", with(browser_get(), {"x-a", "b\nc"})},
        malformed_case{"value with leading space", with(browser_get(), {"x-a", " b"})},
        malformed_case{"host differs", with(browser_get(), {"host", "other.example"})},
        malformed_case{"content-length with END_STREAM",
                       with(browser_get(), {"content-length", "3"})},
        malformed_case{"content-length not a number",
                       with(browser_get(), {"content-length", "3a"})},
        malformed_case{"CONNECT with :path",
                       field_list{{":method", "CONNECT"}, {":authority", "a:443"}, {":path", "/"}}},
        malformed_case{"CONNECT without :authority", field_list{{":method", "CONNECT"}}},
        malformed_case{":protocol on a GET", with(browser_get(), {":protocol", "websocket"})},
        malformed_case{"extended CONNECT without :path", field_list{{":method", "CONNECT"},
                                                                    {":protocol", "websocket"},
                                                                    {":scheme", "https"},
                                                                    {":authority", "a"}}},
        malformed_case{"empty :protocol", field_list{{":method", "CONNECT"},
                                                     {":protocol", ""},
                                                     {":scheme", "https"},
                                                     {":path", "/chat"},
                                                     {":authority", "a"}}}),
    [](const auto& p) { return "Case" + std::to_string(p.index); });

TEST_F(connection_test, TeTrailersOptionsStarAndConnectAreWellFormed) {
    open();
    send(headers_frame(1, with(browser_get(), {"te", "trailers"}), true));
    send(headers_frame(3, {{":method", "OPTIONS"}, {":scheme", "https"}, {":path", "*"}}, true));
    send(headers_frame(5, {{":method", "CONNECT"}, {":authority", "a.example:443"}}, false));
    EXPECT_EQ(owner.requests.size(), 3U);
    EXPECT_EQ(owner.requests[5].authority, "a.example:443");
    EXPECT_TRUE(only(frames(), frame_type::rst_stream).empty());
}

TEST_F(connection_test, ProtocolWithoutTheSettingIsMalformed) {
    config.enable_connect_protocol = false; // RFC 8441 3: :protocol only after our SETTINGS say 1
    open();
    send(headers_frame(1,
                       {{":method", "CONNECT"},
                        {":protocol", "websocket"},
                        {":scheme", "https"},
                        {":path", "/chat"},
                        {":authority", "a"}},
                       false));
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::protocol_error));
    EXPECT_TRUE(owner.requests.empty());
    expect_alive();
}

TEST_F(connection_test, ExtendedConnectIsOnByDefault) {
    open(false);
    const auto f = frames();
    ASSERT_FALSE(f.empty());
    h2::settings s;
    EXPECT_EQ(h2::apply_settings(s, h2::as_bytes(f[0].payload)), error_code::no_error);
    EXPECT_EQ(s.enable_connect_protocol, 1U);
}

TEST_F(connection_test, ExtendedConnectHasNoBodyDeadline) {
    // Its DATA are a tunnel's bytes: the tunnel's idle timeout watches them, not body_timeout.
    open();
    send(headers_frame(1,
                       {{":method", "CONNECT"},
                        {":protocol", "websocket"},
                        {":scheme", "https"},
                        {":path", "/chat"},
                        {":authority", "a"}},
                       false));
    ASSERT_EQ(owner.requests.count(1), 1U);
    EXPECT_FALSE(owner.watched(1, h2::watch::body));
    send(data_frame(1, "frame", false));
    EXPECT_FALSE(owner.watched(1, h2::watch::body));
    send(headers_frame(3, post(5), false)); // an ordinary body beside it is watched
    EXPECT_TRUE(owner.watched(3, h2::watch::body));
}

TEST_F(connection_test, ARefusedExtendedConnectIsWatchedAsAnyRequest) {
    open();
    send(headers_frame(1,
                       {{":method", "CONNECT"},
                        {":protocol", "websocket"},
                        {":scheme", "https"},
                        {":path", "/chat"},
                        {":authority", "a"}},
                       false));
    send(headers_frame(3,
                       {{":method", "CONNECT"},
                        {":protocol", "websocket"},
                        {":scheme", "https"},
                        {":path", "/chat"},
                        {":authority", "a"}},
                       false));
    conn->respond(1, 200, {}, false, out); // the tunnel is open: still no body deadline
    EXPECT_FALSE(owner.watched(1, h2::watch::body));
    conn->respond(3, 403, {}, true, out); // refused: the rest of its request is a body
    EXPECT_TRUE(owner.watched(3, h2::watch::body));
}

TEST_F(connection_test, ExtendedConnectWhenEnabled) {
    open();
    send(headers_frame(1,
                       {{":method", "CONNECT"},
                        {":protocol", "websocket"},
                        {":scheme", "https"},
                        {":path", "/chat"},
                        {":authority", "example.com"},
                        {"sec-websocket-version", "13"}},
                       false));
    ASSERT_EQ(owner.requests.count(1), 1U);
    EXPECT_EQ(owner.requests[1].protocol, "websocket");
    send(headers_frame(
        3, {{":method", "CONNECT"}, {":protocol", "websocket"}, {":authority", "example.com"}},
        false)); // no :scheme, :path
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].stream, 3U);
}

TEST_F(connection_test, ContentLengthAgainstTheData) {
    open();
    send(headers_frame(1, post(5), false));
    send(data_frame(1, "123", true)); // fewer
    send(headers_frame(3, post(5), false));
    send(data_frame(3, "123456", false)); // more
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 2U);
    EXPECT_EQ(r[0].stream, 1U);
    EXPECT_EQ(r[1].stream, 3U);
    EXPECT_EQ(owner.resets.size(), 2U);
    EXPECT_TRUE(conn->idle());
    expect_alive();
}

// SETTINGS, PING, GOAWAY.

TEST_F(connection_test, PingIsAnsweredWithItsData) {
    open();
    send(raw_frame(frame_type::ping, 0, 0, "abcdefgh"));
    const auto f = frames();
    ASSERT_EQ(f.size(), 1U);
    EXPECT_TRUE(f[0].has(flag::ack));
    EXPECT_EQ(f[0].payload, "abcdefgh");
}

TEST_F(connection_test, BadSettingIsItsError) {
    open();
    send(settings_frame({{h2::settings_id::enable_push, 2}}));
    expect_goaway(error_code::protocol_error);
}

TEST_F(connection_test, PeerMaxFrameSizeCutsOurHeaders) {
    open();
    send(headers_frame(1, browser_get(), true));
    std::vector<h2::field> big;
    const std::string value(20000, 'v');
    big.push_back({"x-big", value});
    conn->respond(1, 200, big, true, out);
    std::string copy = out;
    const auto f = frames();
    ASSERT_EQ(f.size(), 1U); // one HEADERS with its CONTINUATION, decoded whole
    EXPECT_EQ(f[0].fields.back().second, value);
    EXPECT_NE(copy.find(std::string("\x09\x04", 2)), std::string::npos); // a CONTINUATION
}

TEST_F(connection_test, GoawayReceivedLetsStreamsFinish) {
    open();
    send(headers_frame(1, browser_get(), true));
    std::string g;
    h2::write_goaway(g, 0, error_code::no_error);
    send(g);
    EXPECT_EQ(owner.goaways, 1U);
    EXPECT_FALSE(conn->closing());
    conn->respond(1, 200, {}, true, out);
    EXPECT_TRUE(conn->closing());
}

TEST_F(connection_test, GracefulShutdownWaitsForThePingAck) {
    open();
    send(headers_frame(1, browser_get(), true));
    conn->shutdown(out);
    auto f = frames();
    ASSERT_EQ(f.size(), 2U);
    EXPECT_EQ(f[0].type, frame_type::goaway);
    EXPECT_EQ(f[0].last_stream(), h2::max_stream_id);
    EXPECT_EQ(f[1].type, frame_type::ping);
    send(headers_frame(3, browser_get(), true)); // sent before the client saw the GOAWAY
    EXPECT_EQ(owner.requests.size(), 2U);
    send(raw_frame(frame_type::ping, flag::ack, 0, f[1].payload));
    f = frames();
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].type, frame_type::goaway);
    EXPECT_EQ(f[0].last_stream(), 3U);
    send(headers_frame(5, browser_get(), true)); // past the last: ignored
    EXPECT_EQ(owner.requests.size(), 2U);
    EXPECT_FALSE(conn->closing());
    conn->respond(1, 200, {}, true, out);
    conn->respond(3, 200, {}, true, out);
    EXPECT_TRUE(conn->closing());
}

TEST_F(connection_test, ShutdownFinishedByTheOwnersTimer) {
    open();
    conn->shutdown(out);
    frames();
    EXPECT_FALSE(conn->closing());
    conn->finish_shutdown(out);
    const auto f = frames();
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].last_stream(), 0U);
    EXPECT_TRUE(conn->closing());
}

TEST_F(connection_test, ConnectionErrorResetsEveryStreamForTheOwner) {
    open();
    send(headers_frame(1, browser_get(), true));
    send(headers_frame(3, browser_get(), true));
    send(raw_frame(frame_type::continuation, flag::end_headers, 3, ""));
    EXPECT_EQ(owner.connection_errors, (std::vector<error_code>{error_code::protocol_error}));
    EXPECT_EQ(owner.resets.size(), 2U);
    EXPECT_TRUE(conn->idle());
    EXPECT_EQ(conn->consume("junk", 4, out), 4U); // everything taken and dropped
}

// Every split point of one conversation: the same events and frames.

TEST_F(connection_test, EverySplitPointGivesTheSameConversation) {
    std::string wire = client_start();
    wire += headers_frame(1, browser_get(), true);
    wire += headers_frame(3, post(20), false);
    std::string padded;
    h2::write_frame_header(padded, 1 + 10 + 4, frame_type::data, flag::padded, 3);
    padded += '\x04';
    padded += "0123456789";
    padded += std::string(4, '\0');
    wire += padded;
    wire += raw_frame(frame_type::ping, 0, 0, "pingpong");
    std::string cont;
    h2::write_headers(cont, 5, block_of(browser_get("/c")), true, 7);
    wire += cont;
    wire += data_frame(3, "abcdefghij", true);

    owner.answer = true;
    open(false);
    send(wire);
    const auto whole = frames();
    const auto requests = owner.requests.size();
    const auto body = owner.bodies[3];
    ASSERT_EQ(requests, 3U);
    ASSERT_EQ(body, "0123456789abcdefghij");

    for (std::size_t split = 1; split < wire.size(); ++split) {
        owner = recorder{};
        owner.answer = true;
        pending.clear();
        out.clear();
        open(false);
        send(std::string_view(wire).substr(0, split));
        send(std::string_view(wire).substr(split));
        const auto f = frames();
        ASSERT_EQ(f.size(), whole.size()) << "split at " << split;
        for (std::size_t i = 0; i < f.size(); ++i) {
            EXPECT_EQ(f[i].type, whole[i].type) << "split at " << split;
            EXPECT_EQ(f[i].payload, whole[i].payload) << "split at " << split;
        }
        EXPECT_EQ(owner.requests.size(), requests);
        EXPECT_EQ(owner.bodies[3], body) << "split at " << split;
        EXPECT_TRUE(conn->idle());
    }
}

// Floods: each kind at its bound goes on, one past ends the connection.

struct flood_case {
    const char* what;
    std::string frame;
};

class flood : public connection_test, public ::testing::WithParamInterface<flood_case> {};

TEST_P(flood, AtTheBoundAndOnePast) {
    config.max_control_frames = 50;
    config.max_resets = 1000;
    open();
    send(headers_frame(1, post(0x7fffffff), false)); // a stream for stream-level frames
    frames();
    // SETTINGS: the client's first one counted already.
    const std::uint32_t already = GetParam().frame[3] == '\x04' ? 1 : 0;
    std::string burst;
    for (std::uint32_t i = already; i < config.max_control_frames; ++i)
        burst += GetParam().frame;
    send(burst);
    EXPECT_FALSE(conn->closing()) << GetParam().what;
    frames();
    send(GetParam().frame);
    expect_goaway(error_code::enhance_your_calm);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, flood,
    ::testing::Values(flood_case{"ping", raw_frame(frame_type::ping, 0, 0, "12345678")},
                      flood_case{"settings", raw_frame(frame_type::settings, 0, 0)},
                      flood_case{"priority", raw_frame(frame_type::priority, 0, 3,
                                                       std::string("\0\0\0\1\x10", 5))},
                      flood_case{"window update", window_update(1, 1)},
                      flood_case{"empty data", raw_frame(frame_type::data, 0, 1)},
                      flood_case{"rst_stream on closed streams",
                                 raw_frame(frame_type::rst_stream, 0, 1, std::string(4, '\0'))}),
    [](const auto& p) { return "Kind" + std::to_string(p.index); });

TEST_F(connection_test, EmptyContinuationFlood) {
    config.max_control_frames = 20;
    open();
    send(raw_frame(frame_type::headers, 0, 1, block_of(browser_get()).substr(0, 3)));
    config.max_continuations = 1000;
    std::string burst;
    for (int i = 0; i < 20; ++i)
        burst += raw_frame(frame_type::continuation, 0, 1);
    send(burst);
    EXPECT_FALSE(conn->closing());
    send(raw_frame(frame_type::continuation, 0, 1));
    expect_goaway(error_code::enhance_your_calm);
}

TEST_F(connection_test, WindowUpdatesAfterOurDataAreNotAFlood) {
    config.max_control_frames = 10;
    config.max_queued = 1 << 20;
    open();
    send(headers_frame(1, browser_get(), true));
    conn->respond(1, 200, {}, false, out);
    conn->data(1, std::string(500000, 'd'), true, out);
    for (int i = 0; i < 40; ++i) {
        send(window_update(0, 10000) + window_update(1, 10000));
        frames();
    }
    EXPECT_FALSE(conn->closing());
}

TEST_F(connection_test, RapidResetIsBoundedPerConnection) {
    config.max_resets = 30;
    open();
    std::string rst;
    std::uint32_t id = 1;
    for (; id < 2 * 30; id += 2) {
        send(headers_frame(id, browser_get(), true));
        rst.clear();
        h2::write_rst_stream(rst, id, error_code::cancel);
        send(rst);
    }
    EXPECT_FALSE(conn->closing());
    EXPECT_EQ(conn->resets(), 30U);
    send(headers_frame(id, browser_get(), true));
    rst.clear();
    h2::write_rst_stream(rst, id, error_code::cancel);
    send(rst);
    expect_goaway(error_code::enhance_your_calm);
}

TEST_F(connection_test, MadeYouResetCountsOurResetsToo) {
    config.max_resets = 10;
    open();
    std::string burst;
    // Each stream made malformed by a frame the server must reset it for.
    for (std::uint32_t id = 1; id <= 21; id += 2) {
        burst += headers_frame(id, post(4), false);
        burst += window_update(id, h2::max_window); // past 2^31-1: FLOW_CONTROL_ERROR
    }
    send(burst);
    expect_goaway(error_code::enhance_your_calm);
    EXPECT_EQ(conn->resets(), 11U);
}

TEST_F(connection_test, ServedRequestsEarnMoreResets) {
    config.max_resets = 4;
    owner.answer = true;
    open();
    for (std::uint32_t id = 1; id <= 39; id += 2)
        send(headers_frame(id, browser_get(), true));
    EXPECT_EQ(conn->requests(), 20U);
    std::string rst;
    for (std::uint32_t id = 41; id <= 65; id += 2) { // 4 + 20 / 2 = 14 resets allowed
        owner.answer = false;
        send(headers_frame(id, browser_get(), true));
        rst.clear();
        h2::write_rst_stream(rst, id, error_code::cancel);
        send(rst);
    }
    EXPECT_FALSE(conn->closing());
    EXPECT_EQ(conn->resets(), 13U);
}

TEST_F(connection_test, NewStreamsPerReadAreBounded) {
    config.max_new_streams_per_read = 10;
    config.max_resets = 1000;
    owner.answer = true;
    open();
    std::string burst;
    for (std::uint32_t id = 1; id <= 19; id += 2)
        burst += headers_frame(id, browser_get(), true);
    send(burst);
    EXPECT_FALSE(conn->closing());
    burst.clear();
    for (std::uint32_t id = 21; id <= 41; id += 2)
        burst += headers_frame(id, browser_get(), true);
    send(burst);
    expect_goaway(error_code::enhance_your_calm);
}

// Memory.

TEST_F(connection_test, IdleConnectionHoldsNoStreamTable) {
    open();
    std::printf("sizeof(h2::connection) = %zu, sizeof(h2::stream) = %zu\n", sizeof(h2::connection),
                sizeof(h2::stream));
    EXPECT_LE(sizeof(h2::connection), 256U);
    EXPECT_TRUE(conn->idle());
    EXPECT_EQ(conn->open_streams(), 0U);
    EXPECT_EQ(conn->allocated(), 0U);
    send(headers_frame(1, browser_get(), true));
    EXPECT_EQ(conn->open_streams(), 1U);
    EXPECT_GT(conn->allocated(), sizeof(h2::stream));
    conn->respond(1, 200, {}, true, out);
    EXPECT_EQ(conn->open_streams(), 0U);
    EXPECT_TRUE(conn->idle());
    EXPECT_EQ(conn->allocated(), 0U); // nothing indexed, no stream: nothing at all
}

TEST_F(connection_test, IdleHeapIsWhatTheBrowserIndexed) {
    open();
    // A browser's first request: its fields literal with incremental indexing (6.2.1)...
    const field_list fields{
        {":authority", "www.example.com"},
        {"user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                       "Chrome/120.0.0.0 Safari/537.36"},
        {"accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
                   "image/webp,*/*;q=0.8"},
        {"accept-language", "en-US,en;q=0.9"},
        {"sec-ch-ua", "\"Chromium\";v=\"120\", \"Not?A_Brand\";v=\"24\""},
    };
    std::string block = "\x82\x87\x84"; // GET, https, /
    for (const auto& [n, v] : fields) {
        block += '\x40';
        h2::encode_string(block, n);
        h2::encode_string(block, v);
    }
    send(raw_frame(frame_type::headers, flag::end_headers | flag::end_stream, 1, block));
    conn->respond(1, 200, {}, true, out);
    // ...and its next one all indexed: static 2, 7, 4 and the five dynamic entries.
    send(raw_frame(frame_type::headers, flag::end_headers | flag::end_stream, 3,
                   "\x82\x87\x84\xc2\xc1\xc0\xbf\xbe"));
    ASSERT_EQ(owner.requests.size(), 2U);
    EXPECT_EQ(owner.requests[3].authority, "www.example.com");
    EXPECT_EQ(owner.requests[3].fields.size(), 4U);
    conn->respond(3, 200, {}, true, out);
    EXPECT_TRUE(conn->idle());
    std::printf("idle: sizeof(h2::connection) = %zu, heap = %zu (the HPACK table)\n",
                sizeof(h2::connection), conn->allocated());
    EXPECT_LT(conn->allocated(), 1024U);
}

// The owner's deadlines (on_watch, expired): the connection says when each starts, goes on and
// ends; the owner's timeouts keep the time.

using h2::watch;

TEST_F(connection_test, SettingsDeadlineRunsUntilTheAck) {
    open();
    EXPECT_TRUE(owner.watched(0, watch::settings));
    send(raw_frame(frame_type::settings, flag::ack, 0));
    EXPECT_FALSE(owner.watched(0, watch::settings));
    EXPECT_FALSE(owner.any_watched());
}

TEST_F(connection_test, SettingsNeverAcknowledgedIsSettingsTimeout) {
    open();
    expire(0, watch::settings);
    expect_goaway(error_code::settings_timeout);
    EXPECT_FALSE(owner.any_watched());
}

TEST_F(connection_test, BodyDeadlineGoesOnWithEachDataAndEndsWithTheBody) {
    open();
    send(raw_frame(frame_type::settings, flag::ack, 0));
    send(headers_frame(1, post(30), false));
    EXPECT_TRUE(owner.watched(1, watch::body));
    EXPECT_EQ((owner.starts[{1, watch::body}]), 1);
    send(data_frame(1, std::string(10, 'a'), false));
    send(data_frame(1, std::string(10, 'b'), false));
    EXPECT_EQ((owner.starts[{1, watch::body}]), 3); // each DATA starts the gap again
    send(data_frame(1, std::string(10, 'c'), true));
    EXPECT_FALSE(owner.watched(1, watch::body));
    send(headers_frame(3, browser_get(), true)); // no body: no deadline
    EXPECT_FALSE(owner.watched(3, watch::body));
}

TEST_F(connection_test, PausedBodyIsNotTheClientsDelay) {
    open();
    send(headers_frame(1, post(20), false));
    owner.take = 0;
    send(data_frame(1, std::string(10, 'a'), false));
    EXPECT_FALSE(owner.watched(1, watch::body)); // the owner holds it
    owner.take = SIZE_MAX;
    conn->resume(1, out);
    EXPECT_TRUE(owner.watched(1, watch::body)); // the client's turn again, from now
}

TEST_F(connection_test, BodyGapResetsTheStreamAndTellsTheOwner) {
    open();
    send(headers_frame(1, post(30), false));
    send(headers_frame(3, browser_get(), true));
    frames();
    expire(1, watch::body);
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].stream, 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::cancel));
    ASSERT_EQ(owner.resets.size(), 1U);
    EXPECT_EQ(owner.resets[0].first, 1U);
    EXPECT_FALSE(owner.watched(1, watch::body));
    send(data_frame(1, "late", false)); // in flight: ignored, the connection goes on
    conn->respond(3, 200, {}, true, out);
    expect_alive();
}

TEST_F(connection_test, BodyGapAfterAWholeResponseIsResetWithoutError) {
    open();
    send(headers_frame(1, post(30), false));
    conn->respond(1, 413, {}, true, out);
    frames();
    EXPECT_TRUE(owner.watched(1, watch::body)); // the client is still to send its body
    expire(1, watch::body);
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::no_error));
    EXPECT_TRUE(owner.resets.empty()); // its answer was over
    EXPECT_TRUE(conn->idle());
}

TEST_F(connection_test, StallDeadlineRunsWhileTheWindowsHoldData) {
    config.max_queued = 1 << 20;
    open();
    send(headers_frame(1, browser_get(), true));
    conn->respond(1, 200, {}, false, out);
    EXPECT_EQ(conn->data(1, std::string(100000, 'z'), true, out), 100000U);
    EXPECT_TRUE(owner.watched(1, watch::stall));
    EXPECT_EQ((owner.starts[{1, watch::stall}]), 1);
    send(window_update(1, 50000)); // the connection's window is still shut: no progress
    EXPECT_EQ((owner.starts[{1, watch::stall}]), 1);
    send(window_update(0, 10000)); // progress: from now
    EXPECT_EQ((owner.starts[{1, watch::stall}]), 2);
    EXPECT_TRUE(owner.watched(1, watch::stall));
    send(window_update(0, 100000)); // all of it out
    EXPECT_FALSE(owner.watched(1, watch::stall));
    EXPECT_TRUE(conn->idle());
}

TEST_F(connection_test, StreamHeldAtAZeroWindowIsResetAtItsDeadline) {
    config.max_queued = 1 << 20;
    open();
    send(settings_frame({{h2::settings_id::initial_window_size, 0}}));
    send(headers_frame(1, browser_get(), true));
    send(headers_frame(3, browser_get(), true));
    conn->respond(1, 200, {}, false, out);
    conn->data(1, "held", true, out);
    conn->respond(3, 200, {}, true, out);
    frames();
    EXPECT_TRUE(owner.watched(1, watch::stall));
    expire(1, watch::stall);
    const auto r = only(frames(), frame_type::rst_stream);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].code(), static_cast<std::uint32_t>(error_code::cancel));
    EXPECT_TRUE(conn->idle());
    EXPECT_FALSE(owner.watched(1, watch::stall));
}

TEST_F(connection_test, IncompleteFrameIsATotalNotAGap) {
    open();
    send(headers_frame(1, post(10), false)); // a stream busy meanwhile
    const std::string h = headers_frame(3, browser_get(), true);
    send(h.substr(0, 5));
    EXPECT_TRUE(owner.watched(0, watch::block));
    send(h.substr(5, 5));
    send(h.substr(10, 5));
    EXPECT_EQ((owner.starts[{0, watch::block}]), 1); // bytes of the same frame: no new start
    send(h.substr(15));
    EXPECT_FALSE(owner.watched(0, watch::block));
    // A frame begun after complete ones has its own total.
    const std::string p = raw_frame(frame_type::ping, 0, 0, "12345678");
    send(p + p.substr(0, 4));
    EXPECT_EQ((owner.starts[{0, watch::block}]), 2);
    send(p.substr(4) + p + p.substr(0, 4));
    EXPECT_EQ((owner.starts[{0, watch::block}]), 3);
    expire(0, watch::block);
    expect_goaway(error_code::enhance_your_calm);
    EXPECT_FALSE(owner.any_watched());
}

TEST_F(connection_test, BlockInContinuationsIsOneTotal) {
    open();
    const std::string block = block_of(browser_get());
    std::string frames_in;
    h2::write_frame_header(frames_in, 10, frame_type::headers, flag::end_stream, 1);
    frames_in += block.substr(0, 10);
    send(frames_in);
    EXPECT_TRUE(owner.watched(0, watch::block));
    std::string c;
    h2::write_frame_header(c, 5, frame_type::continuation, 0, 1);
    send(c + block.substr(10, 5));
    EXPECT_EQ((owner.starts[{0, watch::block}]), 1); // whole frames, one block: one total
    c.clear();
    h2::write_frame_header(c, static_cast<std::uint32_t>(block.size() - 15),
                           frame_type::continuation, flag::end_headers, 1);
    send(c + block.substr(15));
    EXPECT_FALSE(owner.watched(0, watch::block));
    EXPECT_EQ(owner.requests.size(), 1U);
}

TEST_F(connection_test, GracefulPingWaitIsTheOwnersDeadline) {
    open();
    send(headers_frame(1, browser_get(), true));
    conn->shutdown(out);
    const auto f = frames();
    EXPECT_TRUE(owner.watched(0, watch::ping));
    expire(0, watch::ping);
    const auto g = only(frames(), frame_type::goaway);
    ASSERT_EQ(g.size(), 1U);
    EXPECT_EQ(g[0].last_stream(), 1U);
    EXPECT_FALSE(owner.watched(0, watch::ping));
    conn->shutdown(out); // once only
    send(raw_frame(frame_type::ping, flag::ack, 0, f[1].payload));
    EXPECT_TRUE(frames().empty());
}

// Dead-peer detection (connection_config::probe_peer).

TEST_F(connection_test, NoProbeUnlessAsked) {
    open();
    send(headers_frame(1, post(5), false));
    EXPECT_FALSE(owner.watched(0, watch::probe)); // off by default
}

TEST_F(connection_test, NoProbeWhileIdle) {
    config.probe_peer = true;
    open();
    EXPECT_FALSE(owner.watched(0, watch::probe)); // no stream: the keep-alive timeout's time
    send(headers_frame(1, browser_get(), true));
    EXPECT_TRUE(owner.watched(0, watch::probe));
    conn->respond(1, 200, {}, true, out); // the last stream ends: so does the probe
    EXPECT_FALSE(owner.watched(0, watch::probe));
    EXPECT_FALSE(owner.watched(0, watch::probe_ack));
}

TEST_F(connection_test, AQuietPeerIsPingedAndAnythingReadAnswersIt) {
    config.probe_peer = true;
    open();
    send(headers_frame(1, post(5), false));
    const int before = owner.starts[{0, watch::probe}];
    send(data_frame(1, "ab", false));
    EXPECT_EQ((owner.starts[{0, watch::probe}]), before + 1); // a read: the interval from now
    expire(0, watch::probe);
    const auto p = only(frames(), frame_type::ping);
    ASSERT_EQ(p.size(), 1U);
    EXPECT_FALSE(p[0].has(flag::ack));
    EXPECT_TRUE(owner.watched(0, watch::probe_ack));
    send(raw_frame(frame_type::ping, flag::ack, 0, p[0].payload));
    EXPECT_FALSE(owner.watched(0, watch::probe_ack));
    EXPECT_TRUE(owner.watched(0, watch::probe));
    expire(0, watch::probe);
    ASSERT_EQ(only(frames(), frame_type::ping).size(), 1U);
    send(data_frame(1, "c", false)); // not the ACK, but the peer is alive all the same
    EXPECT_FALSE(owner.watched(0, watch::probe_ack));
    expect_alive();
}

TEST_F(connection_test, NoAnswerToTheProbeEndsTheConnection) {
    config.probe_peer = true;
    open();
    send(headers_frame(1, post(5), false));
    expire(0, watch::probe);
    frames();
    expire(0, watch::probe_ack);
    const auto g = only(frames(), frame_type::goaway);
    ASSERT_EQ(g.size(), 1U);
    EXPECT_EQ(g[0].code(), static_cast<std::uint32_t>(error_code::no_error));
    EXPECT_TRUE(conn->closing());
    EXPECT_EQ(owner.resets.size(), 1U) << "the open stream is told";
    EXPECT_FALSE(owner.any_watched());
}

TEST_F(connection_test, TheProbesAckIsNotTheGracefulOnes) {
    config.probe_peer = true;
    open();
    send(headers_frame(1, post(5), false));
    conn->shutdown(out);
    frames();
    expire(0, watch::probe);
    const auto p = only(frames(), frame_type::ping);
    ASSERT_EQ(p.size(), 1U);
    send(raw_frame(frame_type::ping, flag::ack, 0, p[0].payload));
    // Still waiting for the graceful PING's answer: no final GOAWAY yet.
    EXPECT_TRUE(only(frames(), frame_type::goaway).empty());
    EXPECT_TRUE(owner.watched(0, watch::ping));
}

TEST_F(connection_test, ConnectionErrorEndsEveryDeadline) {
    config.max_queued = 1 << 20;
    open();
    send(settings_frame({{h2::settings_id::initial_window_size, 0}}));
    send(headers_frame(1, post(10), false));
    send(headers_frame(3, browser_get(), true));
    conn->respond(3, 200, {}, false, out);
    conn->data(3, "held", false, out);
    send(raw_frame(frame_type::ping, 0, 0, "12345678").substr(0, 12)); // an incomplete frame
    EXPECT_TRUE(owner.watched(0, watch::block));
    EXPECT_TRUE(owner.watched(0, watch::settings));
    EXPECT_TRUE(owner.watched(1, watch::body));
    EXPECT_TRUE(owner.watched(3, watch::stall));
    conn->goaway(error_code::internal_error, out);
    EXPECT_FALSE(owner.any_watched());
}

} // namespace
} // namespace h2_test

#include <tarry/h2/frame.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace h2 = tarry::h2;
using h2::error_code;
using h2::frame_error;
using h2::frame_reader;
using h2::frame_type;

namespace {

std::string frame(std::uint32_t length, frame_type type, std::uint8_t flags, std::uint32_t stream,
                  std::string payload = {}) {
    std::string out;
    h2::write_frame_header(out, length, type, flags, stream);
    if (payload.size() < length) payload.resize(length, '\0');
    return out + payload;
}

std::string frame(frame_type type, std::uint8_t flags, std::uint32_t stream,
                  const std::string& payload) {
    return frame(static_cast<std::uint32_t>(payload.size()), type, flags, stream, payload);
}

/// What a caller sees of a byte stream, however it arrives: one record per frame (a DATA
/// frame's pieces joined), or the error that ended it.
struct record {
    std::uint8_t type;
    std::uint8_t flags;
    std::uint32_t stream;
    std::string payload;
    frame_error error;
    friend bool operator==(const record&, const record&) = default;
};

/// Feeds `chunks` as a connection would: keeps only the tail the reader did not consume.
struct feeder {
    h2::frame_reader reader;
    std::string kept;
    std::string data; // the DATA frame in progress
    std::vector<record> records;
    bool failed = false;
    std::size_t largest_kept = 0;

    void feed(std::string_view chunk) {
        if (failed) return;
        kept.append(chunk);
        h2::bytes in = h2::as_bytes(kept);
        for (;;) {
            const auto r = reader.read(in);
            in = in.subspan(r.consumed);
            if (r.what == frame_reader::event::need_more) break;
            if (r.what == frame_reader::event::error) {
                records.push_back({0xff, 0, r.error.stream, {}, r.error});
                if (r.error.connection_error()) {
                    failed = true;
                    break;
                }
                continue;
            }
            const std::string piece(reinterpret_cast<const char*>(r.payload.data()),
                                    r.payload.size());
            if (r.what == frame_reader::event::data) {
                EXPECT_EQ(r.first, data.empty() && !in_data);
                in_data = true;
                data += piece;
                if (r.last) {
                    records.push_back({r.header.type, r.header.flags, r.header.stream, data, {}});
                    data.clear();
                    in_data = false;
                }
                continue;
            }
            records.push_back({r.header.type, r.header.flags, r.header.stream, piece, r.error});
        }
        kept.erase(0, kept.size() - in.size());
        largest_kept = std::max(largest_kept, kept.size());
    }
    bool in_data = false;
};

std::vector<record> read_whole(const std::string& wire) {
    feeder f;
    f.feed(wire);
    return f.records;
}

frame_error first_error(const std::string& wire) {
    const auto records = read_whole(wire);
    for (const auto& r : records)
        if (r.error.code != error_code::no_error) return r.error;
    return {};
}

constexpr frame_error conn(error_code c) {
    return {c, 0};
}

} // namespace

TEST(FrameTest, HeaderRoundTrips) {
    std::string out;
    h2::write_frame_header(out, 0x123456, frame_type::headers, 0x25, 0x7fffffff);
    ASSERT_EQ(out.size(), 9U);
    const auto h = h2::parse_frame_header(h2::as_bytes(out).data());
    EXPECT_EQ(h.length, 0x123456U);
    EXPECT_TRUE(h.is(frame_type::headers));
    EXPECT_EQ(h.flags, 0x25);
    EXPECT_EQ(h.stream, 0x7fffffffU);
    // The reserved bit is ignored on receipt.
    out[5] = static_cast<char>(0xff);
    EXPECT_EQ(h2::parse_frame_header(h2::as_bytes(out).data()).stream, 0x7fffffffU);
}

TEST(FrameTest, FixedLengthsAndStreamRules) {
    using enum frame_type;
    const auto pe = conn(error_code::protocol_error);
    const auto fse = conn(error_code::frame_size_error);
    struct rule {
        std::string wire;
        frame_error want;
    };
    const std::vector<rule> rules{
        {frame(0, data, 0, 0), pe},
        {frame(0, headers, 0, 0), pe},
        {frame(5, priority, 0, 0), pe},
        {frame(4, priority, 0, 3), {error_code::frame_size_error, 3}},
        {frame(6, priority, 0, 3), {error_code::frame_size_error, 3}},
        {frame(4, rst_stream, 0, 0), pe},
        {frame(3, rst_stream, 0, 1), fse},
        {frame(5, rst_stream, 0, 1), fse},
        {frame(6, settings, 0, 1), pe},
        {frame(5, settings, 0, 0), fse},
        {frame(7, settings, 0, 0), fse},
        {frame(6, settings, h2::flag::ack, 0), fse},
        {frame(4, push_promise, 0, 0), pe},
        {frame(3, push_promise, 0, 1), fse},
        {frame(8, ping, 0, 1), pe},
        {frame(7, ping, 0, 0), fse},
        {frame(9, ping, 0, 0), fse},
        {frame(8, goaway, 0, 1), pe},
        {frame(7, goaway, 0, 0), fse},
        {frame(3, window_update, 0, 0), fse},
        {frame(5, window_update, 0, 1), fse},
        {frame(0, continuation, 0, 0), pe},
        {frame(0, data, h2::flag::padded, 1), fse},
        {frame(4, headers, h2::flag::priority, 1), fse},
        {frame(5, headers, h2::flag::priority | h2::flag::padded, 1), fse},
        {frame(16385, data, 0, 1), fse}, // past SETTINGS_MAX_FRAME_SIZE
    };
    for (const auto& r : rules) {
        const auto h = h2::parse_frame_header(h2::as_bytes(r.wire).data());
        EXPECT_EQ(first_error(r.wire), r.want) << "type " << int(h.type) << " length " << h.length;
    }
    // And what is allowed.
    for (const auto& ok :
         {frame(0, settings, 0, 0), frame(0, settings, h2::flag::ack, 0), frame(12, settings, 0, 0),
          frame(8, ping, h2::flag::ack, 0), frame(8, goaway, 0, 0), frame(20, goaway, 0, 0),
          frame(0, headers, 0, 1), frame(0, continuation, 0, 1), frame(16384, data, 0, 1),
          frame(100, frame_type{0x42}, 0xff, 0)}) {
        EXPECT_EQ(first_error(ok), frame_error{});
    }
}

TEST(FrameTest, PaddingLongerThanThePayloadIsAProtocolError) {
    using enum frame_type;
    // DATA: pad length 4 in a 5-byte payload leaves 0 data bytes (fine); 5 is too long.
    EXPECT_EQ(first_error(frame(data, h2::flag::padded, 1, std::string("\x04xxxx", 5))),
              frame_error{});
    EXPECT_EQ(first_error(frame(data, h2::flag::padded, 1, std::string("\x05xxxx", 5))),
              conn(error_code::protocol_error));
    EXPECT_EQ(first_error(frame(headers, h2::flag::padded, 1, std::string("\x05xxxx", 5))),
              conn(error_code::protocol_error));
    EXPECT_EQ(first_error(frame(headers, h2::flag::padded | h2::flag::priority, 1,
                                std::string("\x01\0\0\0\x03\x10", 6))),
              conn(error_code::protocol_error));
    EXPECT_EQ(
        first_error(frame(push_promise, h2::flag::padded, 1, std::string("\x01\0\0\0\x02", 5))),
        conn(error_code::protocol_error));
}

TEST(FrameTest, HeadersPayloadIsTheFragment) {
    const auto records = read_whole(
        frame(frame_type::headers, h2::flag::padded | h2::flag::priority | h2::flag::end_headers, 5,
              std::string("\x02\x80\0\0\x03\x10"
                          "abc"
                          "pp",
                          11)));
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].payload, "abc");
    EXPECT_EQ(records[0].error, frame_error{});
}

TEST(FrameTest, SelfDependencyIsAStreamError) {
    // HEADERS: still delivered (its block must be decoded), with the stream error.
    const auto records = read_whole(frame(frame_type::headers, h2::flag::priority, 5,
                                          std::string("\0\0\0\x05\x10"
                                                      "abc",
                                                      8)));
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].payload, "abc");
    EXPECT_EQ(records[0].error, (frame_error{error_code::protocol_error, 5}));
    // PRIORITY: dropped, and the frames after it still read.
    const auto more =
        read_whole(frame(frame_type::priority, 0, 7, std::string("\0\0\0\x07\x10", 5)) +
                   frame(4, frame_type::priority, 0, 3) + frame(8, frame_type::ping, 0, 0));
    ASSERT_EQ(more.size(), 3U);
    EXPECT_EQ(more[0].error, (frame_error{error_code::protocol_error, 7}));
    EXPECT_EQ(more[1].error, (frame_error{error_code::frame_size_error, 3}));
    EXPECT_TRUE(more[2].type == static_cast<std::uint8_t>(frame_type::ping));
}

TEST(FrameTest, ZeroWindowIncrement) {
    EXPECT_EQ(first_error(frame(4, frame_type::window_update, 0, 0)),
              conn(error_code::protocol_error));
    EXPECT_EQ(first_error(frame(4, frame_type::window_update, 0, 9)),
              (frame_error{error_code::protocol_error, 9}));
    std::string out;
    h2::write_window_update(out, 9, 1);
    EXPECT_EQ(first_error(out), frame_error{});
}

TEST(FrameTest, UnknownTypesAreReportedAndSkipped) {
    feeder f;
    const std::string wire =
        frame(frame_type{0xfa}, 0, 0, std::string(300, 'z')) + frame(8, frame_type::ping, 0, 0);
    for (char c : wire)
        f.feed(std::string_view(&c, 1));
    ASSERT_EQ(f.records.size(), 2U);
    EXPECT_EQ(f.records[0].type, 0xfa);
    EXPECT_EQ(f.records[0].payload, "");
    EXPECT_LE(f.largest_kept, 16U); // the skipped payload is never kept
}

TEST(FrameTest, WritersRoundTrip) {
    std::string wire;
    const h2::setting values[] = {{h2::settings_id::max_concurrent_streams, 100},
                                  {h2::settings_id::initial_window_size, 1 << 20},
                                  {h2::settings_id::header_table_size, 0}};
    h2::write_settings(wire, values);
    h2::write_settings_ack(wire);
    const std::string opaque = "12345678";
    h2::write_ping_ack(wire, h2::as_bytes(opaque));
    h2::write_goaway(wire, 7, error_code::enhance_your_calm, "flood");
    h2::write_rst_stream(wire, 3, error_code::cancel);
    h2::write_window_update(wire, 0, h2::max_window);
    h2::write_data(wire, 1, "hello", true);
    h2::write_data_header(wire, 3, 0, false);

    const auto r = read_whole(wire);
    ASSERT_EQ(r.size(), 8U);
    h2::settings s;
    EXPECT_EQ(h2::apply_settings(s, h2::as_bytes(r[0].payload)), error_code::no_error);
    EXPECT_EQ(s.max_concurrent_streams, 100U);
    EXPECT_EQ(s.initial_window_size, 1U << 20);
    EXPECT_EQ(s.header_table_size, 0U);
    EXPECT_EQ(r[1].flags, h2::flag::ack);
    EXPECT_EQ(r[1].payload, "");
    EXPECT_EQ(r[2].flags, h2::flag::ack);
    EXPECT_EQ(r[2].payload, opaque);
    const auto g = h2::parse_goaway(h2::as_bytes(r[3].payload));
    EXPECT_EQ(g.last_stream, 7U);
    EXPECT_EQ(g.code, static_cast<std::uint32_t>(error_code::enhance_your_calm));
    EXPECT_EQ(std::string(g.debug.begin(), g.debug.end()), "flood");
    EXPECT_EQ(r[4].stream, 3U);
    EXPECT_EQ(h2::read_u32(h2::as_bytes(r[4].payload).data()),
              static_cast<std::uint32_t>(error_code::cancel));
    EXPECT_EQ(h2::read_u31(h2::as_bytes(r[5].payload)), h2::max_window);
    EXPECT_EQ(r[6].payload, "hello");
    EXPECT_EQ(r[6].flags, h2::flag::end_stream);
    EXPECT_EQ(r[7].stream, 3U);
    EXPECT_EQ(r[7].payload, "");
}

TEST(FrameTest, HeadersSplitIntoContinuationsAtTheMaxFrameSize) {
    std::string block(40000, 'b');
    for (std::size_t i = 0; i < block.size(); ++i)
        block[i] = static_cast<char>('a' + i % 26);
    std::string wire;
    h2::write_headers(wire, 5, block, true, 16384);
    const auto r = read_whole(wire);
    ASSERT_EQ(r.size(), 3U);
    EXPECT_EQ(r[0].type, static_cast<std::uint8_t>(frame_type::headers));
    EXPECT_EQ(r[0].flags, h2::flag::end_stream);
    EXPECT_EQ(r[1].type, static_cast<std::uint8_t>(frame_type::continuation));
    EXPECT_EQ(r[1].flags, 0);
    EXPECT_EQ(r[2].flags, h2::flag::end_headers);
    EXPECT_EQ(r[0].payload.size(), 16384U);
    EXPECT_EQ(r[0].payload + r[1].payload + r[2].payload, block);

    wire.clear();
    h2::write_headers(wire, 1, "", false);
    const auto empty = read_whole(wire);
    ASSERT_EQ(empty.size(), 1U);
    EXPECT_EQ(empty[0].flags, h2::flag::end_headers);
}

TEST(FrameTest, SettingsValuesOutOfRange) {
    h2::settings s;
    using id = h2::settings_id;
    auto apply = [&](id i, std::uint32_t v) { return s.apply(static_cast<std::uint16_t>(i), v); };
    EXPECT_EQ(apply(id::enable_push, 2), error_code::protocol_error);
    EXPECT_EQ(apply(id::enable_push, 0), error_code::no_error);
    EXPECT_EQ(apply(id::initial_window_size, h2::max_window + 1), error_code::flow_control_error);
    EXPECT_EQ(apply(id::initial_window_size, h2::max_window), error_code::no_error);
    EXPECT_EQ(apply(id::max_frame_size, 16383), error_code::protocol_error);
    EXPECT_EQ(apply(id::max_frame_size, 1 << 24), error_code::protocol_error);
    EXPECT_EQ(apply(id::max_frame_size, (1 << 24) - 1), error_code::no_error);
    EXPECT_EQ(apply(id::enable_connect_protocol, 2), error_code::protocol_error);
    EXPECT_EQ(s.apply(0x99, 12345), error_code::no_error); // unknown: ignored
    EXPECT_EQ(s.enable_push, 0U);
    EXPECT_EQ(h2::to_string(error_code::compression_error), "COMPRESSION_ERROR");
    EXPECT_EQ(h2::to_string(error_code{0x77}), "UNKNOWN");
}

TEST(FrameTest, DataArrivesInPiecesAndIsNeverKeptWhole) {
    std::string payload(16384 - 11, 'd');
    const std::string wire = frame(frame_type::data, h2::flag::padded | h2::flag::end_stream, 1,
                                   std::string("\x0a", 1) + payload + std::string(10, '\0'));
    feeder f;
    for (std::size_t at = 0; at < wire.size(); at += 1000)
        f.feed(std::string_view(wire).substr(at, 1000));
    ASSERT_EQ(f.records.size(), 1U);
    EXPECT_EQ(f.records[0].payload, payload);
    EXPECT_LE(f.largest_kept, 10U); // a header's worth, never the payload
}

TEST(FrameTest, EverySplitOfAStreamGivesTheSameFrames) {
    using enum frame_type;
    std::string wire;
    const h2::setting values[] = {{h2::settings_id::enable_push, 0}};
    h2::write_settings(wire, values);
    h2::write_headers(wire, 1, std::string(50, 'h'), false, 16);
    wire +=
        frame(data, h2::flag::padded, 1, std::string("\x03", 1) + "body" + std::string(3, '\0'));
    wire += frame(data, 0, 1, "");
    wire += frame(frame_type{0x10}, 0, 0, "ext");
    wire += frame(data, h2::flag::padded | h2::flag::end_stream, 1, std::string("\x02pp", 3));
    wire += frame(headers, h2::flag::padded | h2::flag::end_headers, 3, std::string("\x01x\0", 3));
    wire += frame(4, priority, 0, 3);
    h2::write_ping_ack(wire, h2::as_bytes("abcdefgh"));
    h2::write_window_update(wire, 3, 100);
    h2::write_goaway(wire, 3, error_code::no_error);

    const auto whole = read_whole(wire);
    ASSERT_EQ(whole.size(), 14U);

    for (std::size_t split = 0; split <= wire.size(); ++split) {
        feeder f;
        f.feed(std::string_view(wire).substr(0, split));
        f.feed(std::string_view(wire).substr(split));
        ASSERT_EQ(f.records, whole) << "split at " << split;
    }
    feeder one;
    for (char c : wire)
        one.feed(std::string_view(&c, 1));
    EXPECT_EQ(one.records, whole);
    EXPECT_TRUE(one.reader.between_frames());
    EXPECT_TRUE(one.kept.empty());

    std::mt19937 random(34);
    for (int round = 0; round < 200; ++round) {
        feeder f;
        for (std::size_t at = 0; at < wire.size();) {
            const std::size_t n = std::uniform_int_distribution<std::size_t>(0, 40)(random);
            f.feed(std::string_view(wire).substr(at, n));
            at += n;
        }
        ASSERT_EQ(f.records, whole) << "round " << round;
    }
}

TEST(FrameTest, ALargerMaxFrameSizeOnceAcknowledged) {
    const std::string big = frame(20000, frame_type::headers, h2::flag::end_headers, 1);
    EXPECT_EQ(first_error(big), conn(error_code::frame_size_error));
    feeder f;
    f.reader.set_max_frame_size(20000);
    f.feed(big);
    ASSERT_EQ(f.records.size(), 1U);
    EXPECT_EQ(f.records[0].payload.size(), 20000U);
    // The error comes from the header alone, before the payload arrives.
    feeder g;
    g.feed(big.substr(0, 9));
    ASSERT_EQ(g.records.size(), 1U);
    EXPECT_EQ(g.records[0].error, conn(error_code::frame_size_error));
}

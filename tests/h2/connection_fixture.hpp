#pragma once

// A client for h2::connection in the tests: frames written with the library's writers (or raw
// bytes, as an attacker's), the server's output read back frame by frame, its field blocks
// decoded, and an owner that records every event and answers as a test tells it.

#include <tarry/h2/connection.hpp>
#include <tarry/h2/hpack_decoder.hpp>
#include <tarry/h2/hpack_encoder.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace h2_test {

namespace h2 = tarry::h2;
using h2::error_code;
using h2::frame_type;
using field_list = std::vector<std::pair<std::string, std::string>>;

/// One frame the server wrote; a HEADERS frame with its CONTINUATIONs is one, decoded.
struct server_frame {
    frame_type type;
    std::uint8_t flags;
    std::uint32_t stream;
    std::string payload;
    field_list fields;

    [[nodiscard]] bool has(std::uint8_t f) const { return (flags & f) != 0; }
    [[nodiscard]] std::uint32_t code() const { // RST_STREAM's, GOAWAY's
        const auto* p = reinterpret_cast<const std::uint8_t*>(payload.data());
        return h2::read_u32(p + (type == frame_type::goaway ? 4 : 0));
    }
    [[nodiscard]] std::uint32_t last_stream() const {
        return h2::read_u32(reinterpret_cast<const std::uint8_t*>(payload.data())) &
               h2::max_stream_id;
    }
};

inline std::string raw_frame(frame_type type, std::uint8_t flags, std::uint32_t stream,
                             const std::string& payload = {}) {
    std::string out;
    h2::write_frame_header(out, static_cast<std::uint32_t>(payload.size()), type, flags, stream);
    return out + payload;
}

inline std::string block_of(const field_list& fields) {
    std::string block;
    for (const auto& [n, v] : fields)
        h2::encode_field(block, n, v);
    return block;
}

inline std::string headers_frame(std::uint32_t stream, const field_list& fields, bool end_stream) {
    std::string out;
    h2::write_headers(out, stream, block_of(fields), end_stream);
    return out;
}

inline std::string data_frame(std::uint32_t stream, std::string_view payload, bool end_stream) {
    std::string out;
    h2::write_data(out, stream, payload, end_stream);
    return out;
}

inline std::string window_update(std::uint32_t stream, std::uint32_t increment) {
    std::string out;
    h2::write_window_update(out, stream, increment);
    return out;
}

inline std::string settings_frame(std::initializer_list<h2::setting> values) {
    std::string out;
    h2::write_settings(out, std::span<const h2::setting>(values.begin(), values.size()));
    return out;
}

inline std::string client_start() {
    return std::string(h2::client_preface) + settings_frame({});
}

inline field_list browser_get(std::string path = "/") {
    return {{":method", "GET"},
            {":scheme", "https"},
            {":authority", "example.com"},
            {":path", std::move(path)},
            {"user-agent", "Mozilla/5.0"},
            {"accept", "text/html"},
            {"accept-encoding", "gzip, deflate, br"}};
}

inline field_list post(std::uint64_t length) {
    return {{":method", "POST"},
            {":scheme", "https"},
            {":authority", "example.com"},
            {":path", "/upload"},
            {"content-length", std::to_string(length)}};
}

/// The owner: records events; answers each request if `answer` is set.
class recorder final : public h2::connection_owner {
public:
    struct head {
        std::string method, scheme, authority, path, protocol;
        field_list fields;
        std::int64_t content_length;
        bool end_stream;
    };

    h2::connection* conn = nullptr;
    std::string* out = nullptr;
    bool answer = false;         ///< 200 "hello" at once
    std::size_t take = SIZE_MAX; ///< body bytes taken per call
    std::map<std::uint32_t, head> requests;
    std::map<std::uint32_t, std::string> bodies;
    std::map<std::uint32_t, field_list> ended; ///< body ends, with their trailers
    std::vector<std::pair<std::uint32_t, error_code>> resets;
    std::vector<std::uint32_t> peer_resets;
    std::vector<std::uint32_t> writable;
    std::vector<error_code> connection_errors;
    std::uint32_t goaways = 0;
    std::uint32_t acks = 0;
    /// The deadlines on now, by stream (0: the connection's) and kind; and how many times
    /// each was started (a second start while on is activity, or a block's new frame).
    std::map<std::pair<std::uint32_t, h2::watch>, bool> watching;
    std::map<std::pair<std::uint32_t, h2::watch>, int> starts;

    [[nodiscard]] bool watched(std::uint32_t stream, h2::watch w) const {
        const auto it = watching.find({stream, w});
        return it != watching.end() && it->second;
    }
    [[nodiscard]] bool any_watched() const {
        return std::any_of(watching.begin(), watching.end(),
                           [](const auto& w) { return w.second; });
    }

    void on_request(std::uint32_t stream, const h2::request& r) override {
        head h{std::string(r.method),    std::string(r.scheme),
               std::string(r.authority), std::string(r.path),
               std::string(r.protocol),  {},
               r.content_length,         r.end_stream};
        for (const auto& f : r.fields)
            h.fields.emplace_back(f.name, f.value);
        requests[stream] = std::move(h);
        if (answer) {
            conn->respond(stream, 200, {}, false, *out);
            conn->data(stream, "hello", true, *out);
        }
    }
    std::size_t on_body(std::uint32_t stream, std::string_view bytes) override {
        const std::size_t n = std::min(take, bytes.size());
        bodies[stream].append(bytes.substr(0, n));
        return n;
    }
    void on_body_end(std::uint32_t stream, std::span<const h2::field> trailers) override {
        field_list t;
        for (const auto& f : trailers)
            t.emplace_back(f.name, f.value);
        ended[stream] = std::move(t);
    }
    void on_reset(std::uint32_t stream, error_code code, bool by_peer) override {
        resets.emplace_back(stream, code);
        if (by_peer) peer_resets.push_back(stream);
    }
    void on_writable(std::uint32_t stream) override { writable.push_back(stream); }
    void on_goaway(std::uint32_t, error_code) override { ++goaways; }
    void on_settings_acked() override { ++acks; }
    void on_connection_error(error_code code) override { connection_errors.push_back(code); }
    void on_watch(std::uint32_t stream, h2::watch what, bool on) override {
        bool& w = watching[{stream, what}];
        EXPECT_TRUE(on || w) << "a deadline ended that had not started";
        w = on;
        if (on) ++starts[{stream, what}];
    }
};

class connection_test : public ::testing::Test {
protected:
    h2::connection_config config;
    h2::workspace ws;
    recorder owner;
    std::unique_ptr<h2::connection> conn;
    std::string out;     ///< the server's output not yet read
    std::string pending; ///< bytes the connection did not take yet

    /// The server, its preface read and the client's sent (`handshake`).
    void open(bool handshake = true) {
        conn = std::make_unique<h2::connection>(config, owner, ws);
        owner.conn = conn.get();
        owner.out = &out;
        conn->start(out);
        if (handshake) {
            send(client_start());
            frames(); // the server's SETTINGS (and WINDOW_UPDATE) and its ACK
        }
    }

    void send(std::string_view bytes) {
        pending.append(bytes);
        const std::size_t n = conn->consume(pending.data(), pending.size(), out);
        ASSERT_LE(n, pending.size());
        pending.erase(0, n);
    }

    /// Every frame the server wrote since the last call.
    std::vector<server_frame> frames() {
        std::vector<server_frame> result;
        h2::frame_reader reader(h2::largest_max_frame_size);
        h2::bytes in = h2::as_bytes(out);
        std::string block;
        while (!in.empty()) {
            const auto r = reader.read(in);
            in = in.subspan(r.consumed);
            if (r.what == h2::frame_reader::event::need_more) break;
            EXPECT_NE(r.what, h2::frame_reader::event::error) << "the server wrote a bad frame";
            if (r.what == h2::frame_reader::event::error) break;
            const std::string payload(reinterpret_cast<const char*>(r.payload.data()),
                                      r.payload.size());
            if (r.what == h2::frame_reader::event::data) {
                if (r.first)
                    result.push_back({frame_type::data, r.header.flags, r.header.stream, {}, {}});
                result.back().payload += payload;
                continue;
            }
            if (r.header.is(frame_type::continuation)) {
                block += payload;
            } else {
                result.push_back({r.header.kind(), r.header.flags, r.header.stream, payload, {}});
                if (r.header.is(frame_type::headers)) block = payload;
            }
            if ((r.header.is(frame_type::headers) || r.header.is(frame_type::continuation)) &&
                r.header.has(h2::flag::end_headers)) {
                auto& f = result.back();
                const auto status =
                    decoder.decode(h2::as_bytes(block), scratch, {1 << 24, 1 << 16},
                                   [&f](std::string_view n, std::string_view v) {
                                       f.fields.emplace_back(std::string(n), std::string(v));
                                   });
                EXPECT_EQ(status, h2::decode_status::ok);
            }
        }
        out.erase(0, out.size() - in.size());
        return result;
    }

    /// The frames of one type among those written since the last call.
    static std::vector<server_frame> only(const std::vector<server_frame>& all, frame_type t) {
        std::vector<server_frame> r;
        for (const auto& f : all)
            if (f.type == t) r.push_back(f);
        return r;
    }

    /// The connection ended with GOAWAY(code).
    void expect_goaway(error_code code) {
        const auto g = only(frames(), frame_type::goaway);
        ASSERT_EQ(g.size(), 1U);
        EXPECT_EQ(g[0].code(), static_cast<std::uint32_t>(code));
        EXPECT_TRUE(conn->closing());
    }

    /// The owner's deadline ran out: its record is gone (no off follows), expired() acts.
    void expire(std::uint32_t stream, h2::watch what) {
        EXPECT_TRUE(owner.watched(stream, what));
        owner.watching[{stream, what}] = false;
        conn->expired(stream, what, out);
    }

    /// The connection goes on: a PING is answered.
    void expect_alive() {
        send(raw_frame(frame_type::ping, 0, 0, "12345678"));
        const auto f = frames();
        ASSERT_FALSE(f.empty());
        EXPECT_EQ(f.back().type, frame_type::ping);
        EXPECT_FALSE(conn->closing());
    }

    h2::hpack_decoder decoder;
    std::string scratch;
};

} // namespace h2_test

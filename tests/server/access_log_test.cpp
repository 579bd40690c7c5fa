// The access log's formatter on its own: what a client sent is escaped so that it cannot forge a
// line (the text formats as nginx's escape=default, \xHH), every JSON line is valid UTF-8 JSON
// whatever the bytes (judged by Python's strict json and UTF-8 decoders), and the fields beside
// nginx's variables are where the formats say.
#include <tarry/server/access_log.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <string>

namespace tarry::test {
namespace {

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

http::response_record record_of(const http::request_head* head, unsigned status,
                                std::uint64_t bytes) {
    http::response_record r;
    r.request = head;
    r.status = status;
    r.body_bytes = bytes;
    return r;
}

class AccessLogTest : public ::testing::Test {
protected:
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("tarry_access_log_test_" + std::to_string(::getpid()) + ".log");

    ~AccessLogTest() override { std::filesystem::remove(path); }

    std::string line_for(std::string_view target) {
        {
            server::access_log log(path);
            http::request_head head;
            head.method = boost::beast::http::verb::get;
            head.target = target;
            log.write({}, record_of(&head, 200, 13));
            log.flush();
        }
        return read_file(path);
    }

    /// The lines `write` writes in format `f`.
    template <class Write> std::string lines(server::access_log::format f, Write write) {
        {
            server::access_log log(path, f);
            write(log);
        }
        return read_file(path);
    }
};

TEST_F(AccessLogTest, PlainTargetIsWrittenAsIs) {
    const std::string line = line_for("/a/b?c=d&e=%41");
    EXPECT_NE(line.find(" \"GET /a/b?c=d&e=%41 HTTP/1.1\" 200 13\n"), std::string::npos) << line;
}

TEST_F(AccessLogTest, QuotesBackslashesControlAndHighBytesAreEscaped) {
    const std::string line =
        line_for("/x\" 200 0\n127.0.0.1 - - \"GET /\\\x01\x1b[31m\x7f\xc0\xaf");
    EXPECT_NE(line.find(" \"GET /x\\x22 200 0\\x0A127.0.0.1 - - \\x22GET /\\x5C\\x01\\x1B[31m"
                        "\\x7F\\xC0\\xAF HTTP/1.1\" 200 13\n"),
              std::string::npos)
        << line;
    EXPECT_EQ(line.find('\n'), line.size() - 1); // one line
}

std::string line_in(const std::filesystem::path& path, server::access_log::format f,
                    const http::request_head& head) {
    {
        server::access_log log(path, f);
        log.write({}, record_of(&head, 200, 13));
        log.write({}, record_of(nullptr, 400, 0)); // bytes that never made a request
    }
    return read_file(path);
}

TEST_F(AccessLogTest, CombinedAddsTheRefererAndTheUserAgentAsNginxDoes) {
    http::request_head head;
    head.method = boost::beast::http::verb::get;
    head.target = "/a";
    head.user_agent = "curl/7.88.1 \"quoted\"";
    const std::string text = line_in(path, server::access_log::format::combined, head);
    EXPECT_NE(text.find(" \"GET /a HTTP/1.1\" 200 13 \"-\" \"curl/7.88.1 \\x22quoted\\x22\"\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(" \"-\" 400 0 \"-\" \"-\"\n"), std::string::npos) << text;
}

TEST_F(AccessLogTest, JsonIsOneValidObjectPerLineWhateverTheClientSent) {
    http::request_head head;
    head.method = boost::beast::http::verb::post;
    head.target = "/x\"\\\n\x01\xc0";
    head.referer = "http://r/";
    const std::string text = line_in(path, server::access_log::format::json, head);
    const auto first = text.substr(0, text.find('\n') + 1);
    EXPECT_NE(
        first.find(
            R"("remote_addr":"-","method":"POST","target":"/x\"\\\u000a\u0001\ufffd","protocol":"HTTP/1.1","status":200,"body_bytes":13,"referer":"http://r/","user_agent":"")"),
        std::string::npos)
        << first;
    EXPECT_EQ(first.rfind("{\"time\":\"", 0), 0U) << first;
    EXPECT_NE(text.find(R"("status":400,"body_bytes":0,"request_time":null)"), std::string::npos)
        << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

TEST_F(AccessLogTest, JsonKeepsValidUtf8AndReplacesEachInvalidByte) {
    http::request_head head;
    head.method = boost::beast::http::verb::get;
    // é, €, an emoji: as they are.
    head.target = "/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80";
    // é, then a cut é, an encoded surrogate, an overlong "/", and C1's CSI (valid, but a control).
    head.user_agent = "x \xc3\xa9 \xc3 \xed\xa0\x80 \xc0\xaf \xc2\x9b";
    const std::string text = lines(server::access_log::format::json,
                                   [&](auto& log) { log.write({}, record_of(&head, 200, 1)); });
    EXPECT_NE(text.find("\"target\":\"/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80\""),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(R"("user_agent":"x )"
                        "\xc3\xa9"
                        R"( \ufffd \ufffd\ufffd\ufffd \ufffd\ufffd \u009b")"),
              std::string::npos)
        << text;
}

TEST_F(AccessLogTest, ExtendedAppendsTheTimesWhereNginxsUpstreamTimeFormatHasThem) {
    http::request_head head;
    head.method = boost::beast::http::verb::get;
    head.target = "/api";
    head.user_agent = "curl";
    http::upstream_timing up;
    up.connect_us = 1'200;
    up.header_us = 10'999;
    up.response_us = 12'000;
    up.status = 200;
    const std::string text = lines(server::access_log::format::extended, [&](auto& log) {
        server::access_context c;
        c.peer = "192.0.2.1";
        c.request_us = 12'345;
        c.https = true;
        c.server_port = 8443;
        c.tls_protocol = "TLSv1.3";
        http::response_record r = record_of(&head, 200, 104);
        r.upstream = &up;
        log.write(c, r);
        server::access_context plain;
        plain.request_us = 0;
        plain.server_port = 8080;
        log.write(plain, record_of(&head, 404, 10));
    });
    EXPECT_NE(text.find("192.0.2.1 - - ["), std::string::npos) << text;
    EXPECT_NE(text.find("] \"GET /api HTTP/1.1\" 200 104 \"-\" \"curl\" rt=0.012 uct=\"0.001\" "
                        "uht=\"0.010\" urt=\"0.012\" us=\"200\" scheme=https port=8443 "
                        "tls=TLSv1.3\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("] \"GET /api HTTP/1.1\" 404 10 \"-\" \"curl\" rt=0.000 uct=\"-\" "
                        "uht=\"-\" urt=\"-\" us=\"-\" scheme=http port=8080 tls=-\n"),
              std::string::npos)
        << text;
}

TEST_F(AccessLogTest, JsonHasTheFieldsAsNginxsVariableNames) {
    http::request_head head;
    head.method = boost::beast::http::verb::get;
    head.target = "/api";
    http::upstream_timing up;
    up.connect_us = 0;
    up.header_us = 2'000;
    up.response_us = 3'000;
    up.status = 502;
    const std::string text = lines(server::access_log::format::json, [&](auto& log) {
        server::access_context c;
        c.request_us = 1'234'567;
        c.server_port = 80;
        http::response_record r = record_of(&head, 502, 12);
        r.upstream = &up;
        log.write(c, r);
    });
    EXPECT_NE(text.find(R"("request_time":1.234,"upstream_connect_time":0.000,)"
                        R"("upstream_header_time":0.002,"upstream_response_time":0.003,)"
                        R"("upstream_status":502,"scheme":"http","server_port":80,)"
                        R"("ssl_protocol":null})"
                        "\n"),
              std::string::npos)
        << text;
}

TEST_F(AccessLogTest, ARequestThatNeverParsedIsLoggedAsItCame) {
    const std::string text = lines(server::access_log::format::combined, [&](auto& log) {
        http::response_record r = record_of(nullptr, 400, 12);
        r.received = "GET /a\"b\x01 HTTP/1.1";
        log.write({}, r);
    });
    EXPECT_NE(text.find(" \"GET /a\\x22b\\x01 HTTP/1.1\" 400 12 \"-\" \"-\"\n"), std::string::npos)
        << text;
}

TEST_F(AccessLogTest, TheTimeIsNginxsTimeLocalInUtcAndIso8601InJson) {
    http::request_head head;
    head.method = boost::beast::http::verb::get;
    head.target = "/";
    const std::string text = lines(server::access_log::format::common, [&](auto& log) {
        log.write({}, record_of(&head, 200, 1));
        log.write({}, record_of(&head, 200, 2)); // the same second's cached text, or the next
    });
    const std::regex clf(R"(^- - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] )");
    EXPECT_TRUE(std::regex_search(text, clf)) << text;
    EXPECT_TRUE(std::regex_search(text.substr(text.find('\n') + 1), clf)) << text;
    std::filesystem::remove(path);
    const std::string json = lines(server::access_log::format::json,
                                   [&](auto& log) { log.write({}, record_of(&head, 200, 1)); });
    EXPECT_TRUE(
        std::regex_search(json, std::regex(R"(^\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",)")))
        << json;
}

/// Random bytes, biased towards what breaks logs: quotes, backslashes, controls, high bytes,
/// valid and cut UTF-8 sequences.
std::string random_field(std::mt19937& rng) {
    static constexpr std::string_view pieces[] = {"\"",
                                                  "\\",
                                                  "\n",
                                                  "\r",
                                                  "\x01",
                                                  "\x1b[31m",
                                                  "\x7f",
                                                  "\xc3\xa9",
                                                  "\xc3",
                                                  "\xe2\x82\xac",
                                                  "\xe2\x82",
                                                  "\xf0\x9f\x98\x80",
                                                  "\xf0\x9f",
                                                  "\xed\xa0\x80",
                                                  "\xc0\xaf",
                                                  "\xc2\x85",
                                                  "\xef\xbf\xbd",
                                                  "\xf4\x90\x80\x80",
                                                  "\xff",
                                                  "\xfe",
                                                  "\\u0000",
                                                  "a",
                                                  " ",
                                                  "/",
                                                  "%00"};
    std::uniform_int_distribution<int> len(0, 24);
    std::uniform_int_distribution<int> kind(0, 3);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<std::size_t> piece(0, std::size(pieces) - 1);
    std::string s;
    for (int i = len(rng); i > 0; --i) {
        if (kind(rng) == 0)
            s.append(pieces[piece(rng)]);
        else
            s.push_back(static_cast<char>(byte(rng)));
    }
    return s;
}

std::string hex(std::string_view s) {
    std::string out;
    for (const char c : s) {
        constexpr const char* d = "0123456789abcdef";
        out += d[static_cast<unsigned char>(c) >> 4];
        out += d[static_cast<unsigned char>(c) & 0xf];
    }
    return out;
}

/// Python, as an independent judge: each line must decode as strict UTF-8 and parse as JSON
/// (RFC 8259), and a field the client sent as valid UTF-8 without control characters must come
/// back exactly.
constexpr std::string_view judge = R"(
import json, sys, unicodedata
lines = open(sys.argv[1], 'rb').read().split(b'\n')[:-1]
sent = [l.split(' ') for l in open(sys.argv[2]).read().split('\n')[:-1]]
assert len(lines) == len(sent), (len(lines), len(sent))
for raw, fields in zip(lines, sent):
    o = json.loads(raw.decode('utf-8', errors='strict'))
    for key, h in zip(['target', 'referer', 'user_agent', 'request'], fields):
        if h == '-':
            continue
        b = bytes.fromhex(h)
        try:
            text = b.decode('utf-8')
        except UnicodeDecodeError:
            assert '\ufffd' in o[key], (key, b, o[key])
            continue
        assert o[key] == text, (key, b, o[key])
print(len(lines))
)";

TEST_F(AccessLogTest, EveryJsonLineIsValidUtf8JsonForRandomBytesInEveryField) {
    const auto sent_path = path.string() + ".sent";
    const auto judge_path = path.string() + ".py";
    std::ofstream(judge_path) << judge;
    std::mt19937 rng(38); // fixed: a failure is reproduced by running again
    std::string sent;
    constexpr int rounds = 4000;
    {
        server::access_log log(path, server::access_log::format::json);
        for (int i = 0; i < rounds; ++i) {
            http::request_head head;
            head.method = static_cast<boost::beast::http::verb>(i % 34); // each method Beast knows
            head.target = random_field(rng);
            head.referer = random_field(rng);
            head.user_agent = random_field(rng);
            http::response_record r = record_of(&head, 200, 1);
            const std::string received = random_field(rng); // a line that never parsed
            if (i % 3 == 0) {
                r.request = nullptr;
                r.received = received;
            }
            server::access_context c;
            c.peer = "127.0.0.1";
            log.write(c, r);
            if (r.request == nullptr)
                sent += "- - - " + (received.empty() ? std::string("-") : hex(received)) + "\n";
            else
                sent += hex(head.target) + " " + hex(head.referer) + " " + hex(head.user_agent) +
                        " -\n";
        }
    }
    std::ofstream(sent_path) << sent;
    const std::string command = "/usr/bin/python3 " + judge_path + " " + path.string() + " " +
                                sent_path + " > " + path.string() + ".out 2>&1";
    const int rc = std::system(command.c_str());
    const std::string out = read_file(path.string() + ".out");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, std::to_string(rounds) + "\n");
    std::filesystem::remove(sent_path);
    std::filesystem::remove(judge_path);
    std::filesystem::remove(path.string() + ".out");
}

} // namespace
} // namespace tarry::test

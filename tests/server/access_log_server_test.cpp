// The access log behind the real server on real sockets: the bytes of every kind of static
// answer, the request line of every request the server refuses itself, a client's non-ASCII
// User-Agent through curl, and the fields beside nginx's variables.
#include "server_fixture.hpp"

#include "log_file.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;

class AccessLogServerTest : public ServerTest {
protected:
    fs::path dir = fs::temp_directory_path() / ("tarry_access_srv_" + std::to_string(::getpid()));
    fs::path log = dir / "access.log";
    std::string file_body;

    AccessLogServerTest() {
        fs::create_directories(dir / "www");
        file_body.resize(100'000);
        for (std::size_t i = 0; i < file_body.size(); ++i)
            file_body[i] = static_cast<char>('a' + i % 26);
        std::ofstream(dir / "www" / "f.bin", std::ios::binary) << file_body;
        cfg.docroot = dir / "www";
        cfg.access_log = log;
        cfg.access_log_format = "extended";
    }
    ~AccessLogServerTest() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    /// The log's line holding `needle`, once it is there.
    std::string line_with(const std::string& needle) { return log_line_with(log, needle); }

    /// Sends raw bytes on a fresh connection, reads to the close: what came back.
    std::string raw(const std::string& bytes) {
        test_client c(port);
        EXPECT_TRUE(c.send(bytes));
        EXPECT_TRUE(c.wait_closed(5s).has_value());
        return c.pending();
    }
};

TEST_F(AccessLogServerTest, StaticAnswersAreLoggedWithTheBodyBytesTheClientGot) {
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /f.bin HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto full = c.read_response();
    ASSERT_TRUE(full.has_value());
    ASSERT_EQ(full->body.size(), file_body.size()); // sent by sendfile
    ASSERT_TRUE(c.send("GET /f.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=10-4105\r\n\r\n"));
    const auto part = c.read_response();
    ASSERT_TRUE(part.has_value());
    EXPECT_EQ(part->status, 206);
    ASSERT_EQ(part->body.size(), 4096U);
    const auto at = full->head.find("ETag: ");
    ASSERT_NE(at, std::string::npos);
    const std::string etag = full->head.substr(at + 6, full->head.find("\r\n", at) - at - 6);
    ASSERT_TRUE(
        c.send("GET /f.bin?again HTTP/1.1\r\nHost: t\r\nIf-None-Match: " + etag + "\r\n\r\n"));
    const auto not_modified = c.read_response();
    ASSERT_TRUE(not_modified.has_value());
    EXPECT_EQ(not_modified->status, 304);
    ASSERT_TRUE(c.send("GET /none HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto missing = c.read_response();
    ASSERT_TRUE(missing.has_value());
    // (A HEAD's answer has a Content-Length and no body: read to the close.)
    const std::string head_only =
        raw("HEAD /f.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(head_only.substr(head_only.find("\r\n\r\n") + 4), "");

    EXPECT_NE(line_with("\"GET /f.bin HTTP/1.1\" 200 ").find(" 200 100000 "), std::string::npos);
    EXPECT_NE(line_with("\"GET /f.bin HTTP/1.1\" 206 ").find(" 206 4096 "), std::string::npos);
    EXPECT_NE(line_with("\"GET /f.bin?again HTTP/1.1\" 304").find(" 304 0 "), std::string::npos);
    EXPECT_NE(line_with("\"HEAD /f.bin HTTP/1.1\" 200").find(" 200 0 "), std::string::npos);
    EXPECT_NE(line_with("\"GET /none HTTP/1.1\" 404")
                  .find(" 404 " + std::to_string(missing->body.size()) + " "),
              std::string::npos);
}

TEST_F(AccessLogServerTest, AFileCutShortByTheClientIsLoggedWithWhatWasSent) {
    // A file far larger than the socket buffers; the client reads a little, then goes away.
    std::string big(std::size_t{32} << 20, 'z');
    std::ofstream(dir / "www" / "big.bin", std::ios::binary) << big;
    start();
    {
        test_client c(port, 4096);
        ASSERT_TRUE(c.send("GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(c.wait_for("zzzz"));
    }
    const std::string line = line_with("\"GET /big.bin HTTP/1.1\" 200 ");
    // Logged as the connection closed, while its socket still said who the client was.
    EXPECT_EQ(line.rfind("127.0.0.1 - - [", 0), 0U) << line;
    EXPECT_NE(line.find(" port=" + std::to_string(port) + " "), std::string::npos) << line;
    const std::smatch m = [&] {
        std::smatch r;
        std::regex_search(line, r, std::regex(R"(" 200 (\d+) )"));
        return r;
    }();
    ASSERT_EQ(m.size(), 2U) << line;
    const auto sent = std::stoull(m[1].str());
    EXPECT_GT(sent, 0U) << line;
    EXPECT_LT(sent, big.size()) << "not the file's length: what went out before the close";
}

TEST_F(AccessLogServerTest, EachRequestTheServerRefusesItselfIsLoggedWithItsRequestLine) {
    cfg.max_header_bytes = 4096;
    cfg.header_timeout = 300ms;
    start();
    // Not HTTP at all: 400, and the line as it came (escaped), not "<unknown>".
    EXPECT_EQ(raw("GARBAGE\x01\" /x\r\n\r\n").rfind("HTTP/1.1 400", 0), 0U);
    EXPECT_NE(line_with("\"GARBAGE\\x01\\x22 /x\" 400 ").find("\"-\" \"-\""), std::string::npos);
    // A request line longer than the header may be: 414, the line's first KiB.
    const std::string long_target = "/" + std::string(8000, 'L');
    EXPECT_EQ(raw("GET " + long_target + " HTTP/1.1\r\nHost: t\r\n\r\n").rfind("HTTP/1.1 414", 0),
              0U);
    const std::string first_kib = "GET " + long_target.substr(0, 1024 - 4);
    EXPECT_NE(line_with("\"" + first_kib + "\" 414 ").size(), 0U);
    // A header too large: 431, with the request line.
    EXPECT_EQ(raw("GET /fat HTTP/1.1\r\nHost: t\r\nX-Fat: " + std::string(6000, 'f') + "\r\n\r\n")
                  .rfind("HTTP/1.1 431", 0),
              0U);
    line_with("\"GET /fat HTTP/1.1\" 431 ");
    // A method no one knows: 501, the method as it came.
    EXPECT_EQ(
        raw("FROB /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").rfind("HTTP/1.1 501", 0),
        0U);
    line_with("\"FROB /x HTTP/1.1\" 501 ");
    // A method files do not allow: 405.
    EXPECT_EQ(raw("DELETE /f.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                  .rfind("HTTP/1.1 405", 0),
              0U);
    line_with("\"DELETE /f.bin HTTP/1.1\" 405 ");
    // A head that never ends: 408 at the header timeout, with what came of its line.
    EXPECT_EQ(raw("GET /slowly HTTP/1.1\r\nHost: t\r\n").rfind("HTTP/1.1 408", 0), 0U);
    line_with("\"GET /slowly HTTP/1.1\" 408 ");
    // Bytes with a control character in the target: 400, escaped so no line is forged.
    EXPECT_EQ(raw("GET /a\nforged HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0), 0U);
    line_with("\"GET /a\" 400 "); // the line ended at the LF
}

TEST_F(AccessLogServerTest, ExtendedHasTheRequestTimeSchemeAndPort) {
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /f.bin HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(c.read_response().has_value());
    const std::string line = line_with("\"GET /f.bin HTTP/1.1\" 200 ");
    EXPECT_TRUE(std::regex_search(
        line, std::regex(R"( rt=\d+\.\d{3} uct="-" uht="-" urt="-" us="-" scheme=http port=)" +
                         std::to_string(port) + " tls=-$")))
        << line;
}

TEST_F(AccessLogServerTest, CurlsNonAsciiUserAgentIsValidUtf8InJson) {
    cfg.access_log_format = "json";
    start();
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/f.bin";
    ASSERT_EQ(std::system(("curl -sS -o /dev/null -A 'x \xc3\xa9' " + url).c_str()), 0);
    const std::string line = line_with("\"target\":\"/f.bin\"");
    EXPECT_NE(line.find("\"user_agent\":\"x \xc3\xa9\""), std::string::npos) << line;
    // Python's strict decoders are the judge.
    std::ofstream(dir / "line.json", std::ios::binary) << line << "\n";
    const std::string check =
        "/usr/bin/python3 -c \"import json,sys; o = json.loads(open(sys.argv[1], 'rb').read()"
        ".decode('utf-8', errors='strict')); assert o['user_agent'] == 'x \\u00e9', o; "
        "assert o['body_bytes'] == 100000 and o['scheme'] == 'http', o\" " +
        (dir / "line.json").string();
    EXPECT_EQ(std::system(check.c_str()), 0) << line;
    EXPECT_EQ(std::system(
                  ("/usr/bin/python3 -m json.tool " + (dir / "line.json").string() + " > /dev/null")
                      .c_str()),
              0);
}

} // namespace
} // namespace tarry::test

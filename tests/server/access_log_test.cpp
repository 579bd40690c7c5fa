// The access log writes what a client sent: bytes that could end a quoted field or a line, or
// that a terminal would interpret, are escaped as nginx does (\x22, \xHH), so a request cannot
// forge a log line.
#include <tarry/server/access_log.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tarry::test {
namespace {

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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
            log.write({}, &head, 200, 13);
            log.flush();
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
        log.write({}, &head, 200, 13);
        log.write({}, nullptr, 400, 0); // bytes that never made a request
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
            R"("remote_addr":"-","method":"POST","target":"/x\u0022\u005c\u000a\u0001\u00c0","protocol":"HTTP/1.1","status":200,"body_bytes":13,"referer":"http://r/","user_agent":""})"),
        std::string::npos)
        << first;
    EXPECT_EQ(first.rfind("{\"time\":\"", 0), 0U) << first;
    EXPECT_NE(text.find(R"("status":400,"body_bytes":0})"), std::string::npos) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

} // namespace
} // namespace tarry::test

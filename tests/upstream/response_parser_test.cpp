// The upstream response parser on its own: what reaches the client of an upstream's header.
#include <tarry/http/request_parser.hpp>
#include <tarry/upstream/response_parser.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tarry::upstream {
namespace {

struct collect final : response_body_sink {
    std::string body;
    void on_response_body(std::string_view bytes) override { body.append(bytes); }
};

std::vector<std::pair<std::string, std::string>> fields_of(std::string_view header) {
    std::vector<std::pair<std::string, std::string>> out;
    http::for_each_field(header, [&](std::string_view n, std::string_view v) {
        out.emplace_back(std::string(n), std::string(v));
    });
    return out;
}

TEST(ResponseParserTest, AnObsFoldIsReplacedWithSpacesNeverForwardedAsALine) {
    collect sink;
    response_parser p(sink);
    const std::string in = "HTTP/1.1 200 OK\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n"
                           "X-B: b\r\n\tc\r\nContent-Length: 2\r\n\r\nok";
    boost::system::error_code ec;
    std::size_t used = 0;
    while (!ec && used < in.size() && !p.is_done())
        used += p.feed(in.data() + used, in.size() - used, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(used, in.size());
    EXPECT_TRUE(p.is_done());
    EXPECT_EQ(sink.body, "ok");
    const auto f = fields_of(p.header());
    ASSERT_EQ(f.size(), 3U);
    EXPECT_EQ(f[0].first, "X-A");
    EXPECT_EQ(f[0].second, "a   Transfer-Encoding: chunked");
    EXPECT_EQ(f[1].first, "X-B");
    EXPECT_EQ(f[1].second, "b   c"); // the fold and its tab: spaces
    EXPECT_EQ(f[2].first, "Content-Length");
    // No line of the block starts with whitespace any more.
    EXPECT_EQ(p.header().find("\n "), std::string_view::npos);
    EXPECT_EQ(p.header().find("\n\t"), std::string_view::npos);
}

TEST(ResponseParserTest, UnfoldLeavesAnUnfoldedBlockAsItIs) {
    std::string h = "HTTP/1.1 204 No Content\r\nA: 1\r\nB: 2\r\n\r\n";
    const std::string before = h;
    response_parser::unfold(h);
    EXPECT_EQ(h, before);
}

TEST(ResponseParserTest, ControlBytesInAFieldValueAreRefused) {
    for (const std::string& bad : {std::string("X-A: a\rb"), std::string("X-A: a\0b", 8)}) {
        collect sink;
        response_parser p(sink);
        const std::string in = "HTTP/1.1 200 OK\r\n" + bad + "\r\nContent-Length: 0\r\n\r\n";
        boost::system::error_code ec;
        p.feed(in.data(), in.size(), ec);
        EXPECT_TRUE(ec) << "accepted a value with a control byte";
    }
}

} // namespace
} // namespace tarry::upstream

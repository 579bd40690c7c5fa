// An HTTP/2 request as a handler sees it (http::request_head, with a header block in HTTP/1.1's
// form), and a handler's response head as HEADERS fields.
#include <tarry/server/h2_stream.hpp>

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace tarry::server {
namespace {

namespace bh = boost::beast::http;

std::string_view value_of(const std::vector<h2::field>& fields, std::string_view name) {
    for (const h2::field& f : fields)
        if (f.name == name) return f.value;
    return "(none)";
}

TEST(H2Request, BecomesARequestHeadWithCookiesJoined) {
    const std::array<h2::field, 5> fields{{{"user-agent", "curl/7.88.1"},
                                           {"cookie", "a=1"},
                                           {"accept", "*/*"},
                                           {"cookie", "b=2"},
                                           {"referer", "http://r/"}}};
    h2::request r;
    r.method = "GET";
    r.scheme = "https";
    r.authority = "example.com:8443";
    r.path = "/a?b=c";
    r.fields = fields;
    r.end_stream = true;
    http::request_head head;
    std::string block;
    to_request_head(r, head, block);
    EXPECT_EQ(head.method, bh::verb::get);
    EXPECT_EQ(head.version, 20); // the access log says HTTP/2.0
    EXPECT_EQ(head.target, "/a?b=c");
    EXPECT_EQ(head.host, "example.com:8443");
    EXPECT_EQ(head.user_agent, "curl/7.88.1");
    EXPECT_EQ(head.referer, "http://r/");
    EXPECT_EQ(http::find_field(head.header, "Host"), "example.com:8443");
    // RFC 9113 8.2.3: several cookie fields are one again, joined with "; ".
    EXPECT_EQ(http::find_field(head.header, "Cookie"), "a=1; b=2");
    EXPECT_EQ(http::find_field(head.header, "Accept"), "*/*");
    EXPECT_EQ(http::find_field(head.header, "Transfer-Encoding"), "");
    EXPECT_EQ(head.header.substr(0, head.header.find('\r')), "GET /a?b=c HTTP/1.1");
}

TEST(H2Request, APlainConnectsTargetIsItsAuthority) {
    // RFC 9113 8.5: no :scheme, no :path; HTTP/1.1's authority-form, as the access log shows it.
    h2::request r;
    r.method = "CONNECT";
    r.authority = "example.com:443";
    http::request_head head;
    std::string block;
    to_request_head(r, head, block);
    EXPECT_EQ(head.method, bh::verb::connect);
    EXPECT_EQ(head.target, "example.com:443");
    EXPECT_EQ(head.header.substr(0, head.header.find('\r')), "CONNECT example.com:443 HTTP/1.1");
}

TEST(H2Request, ABodyOfUnknownLengthIsChunkedInHttp11Terms) {
    const std::array<h2::field, 1> with_length{{{"content-length", "5"}}};
    h2::request r;
    r.method = "POST";
    r.authority = "h";
    r.path = "/up";
    r.end_stream = false;
    http::request_head head;
    std::string block;
    to_request_head(r, head, block);
    EXPECT_EQ(http::find_field(head.header, "Transfer-Encoding"), "chunked");
    r.fields = with_length;
    r.content_length = 5;
    to_request_head(r, head, block);
    EXPECT_EQ(http::find_field(head.header, "Transfer-Encoding"), "");
    EXPECT_EQ(http::find_field(head.header, "Content-Length"), "5");
}

TEST(H2Response, FieldsLoweredConnectionSpecificOnesLeftOut) {
    http::response_head head;
    head.status = 200;
    head.content_type = "text/html";
    head.content_length = 1234;
    head.extra_fields = "ETag: \"x\"\r\nConnection: X-Hop\r\nKeep-Alive: timeout=5\r\n"
                        "Transfer-Encoding: chunked\r\nUpgrade: h2c\r\nX-Hop:  secret \r\n";
    std::vector<h2::field> fields;
    std::string text;
    to_response_fields(head, "Fri, 27 Nov 2026 14:00:00 GMT", fields, text);
    EXPECT_EQ(value_of(fields, "server"), "tarry");
    EXPECT_EQ(value_of(fields, "date"), "Fri, 27 Nov 2026 14:00:00 GMT");
    EXPECT_EQ(value_of(fields, "content-type"), "text/html");
    EXPECT_EQ(value_of(fields, "content-length"), "1234");
    EXPECT_EQ(value_of(fields, "etag"), "\"x\"");
    EXPECT_EQ(value_of(fields, "x-hop"), "secret");
    EXPECT_EQ(value_of(fields, "connection"), "(none)");
    EXPECT_EQ(value_of(fields, "keep-alive"), "(none)");
    EXPECT_EQ(value_of(fields, "transfer-encoding"), "(none)");
    EXPECT_EQ(value_of(fields, "upgrade"), "(none)");
}

TEST(H2Response, ALengthUnknownHasNoContentLengthAndAProxiedHeadKeepsItsServer) {
    http::response_head head;
    head.length_unknown = true;
    head.server_date = false;
    head.extra_fields = "Server: node\r\nDate: then\r\nContent-Length: 9\r\n";
    std::vector<h2::field> fields;
    std::string text;
    to_response_fields(head, "now", fields, text);
    EXPECT_EQ(value_of(fields, "server"), "node");
    EXPECT_EQ(value_of(fields, "date"), "then");
    // (A proxy gives the length in the head, not among its fields; kept as it came here.)
    EXPECT_EQ(value_of(fields, "content-length"), "9");
}

} // namespace
} // namespace tarry::server

#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <tarry/http/hello_handler.hpp>
#include <tarry/http/session.hpp>

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace tarry::http::test {
namespace {

using namespace std::literals;

constexpr std::string_view date = "Sun, 06 Nov 1994 08:49:37 GMT";
constexpr std::string_view keep = "Keep-Alive: timeout=7\r\n"; // SessionTest's settings
constexpr std::string_view close = "Connection: close\r\n";

/// Answers as the built-in handler does, but only once the whole body is read: a handler that
/// takes the body, which the tests of bodies, 100-continue and chunked framing need (the
/// built-in handler answers at the header and only discards a body).
class after_body final : public handler, public deferred {
public:
    void on_request(exchange& ex) override {
        ex_ = &ex;
        ex.defer(*this);
        ex.read_body();
    }
    void on_body_end() override { hello_handler{}.on_request(*ex_); }
    void on_abort() noexcept override { ex_ = nullptr; }

private:
    exchange* ex_ = nullptr;
};

/// Routes every request to an after_body handler.
const router& after_body_routes() {
    static const router r = [] {
        router routes;
        routes.add("/", std::make_shared<after_body>());
        return routes;
    }();
    return r;
}

/// A response head as the server writes it: `fields` are whole lines after Server and Date.
std::string head(std::string_view status_line, std::string_view fields) {
    std::string s = "HTTP/1.1 ";
    s += status_line;
    s += "\r\nServer: tarry\r\nDate: ";
    s += date;
    s += "\r\n";
    s += fields;
    s += "\r\n";
    return s;
}

/// The "Hello, World!" answer to GET (with_body) or HEAD; `connection` is the Connection and
/// Keep-Alive lines.
std::string hello(std::string_view connection, bool with_body = true) {
    std::string s = head("200 OK", "Content-Type: text/plain\r\nContent-Length: 13\r\n"s +
                                       std::string(connection));
    if (with_body) s += "Hello, World!";
    return s;
}

std::string not_allowed(std::string_view connection) {
    return head("405 Method Not Allowed", "Content-Type: text/plain\r\nContent-Length: 19\r\n"s +
                                              std::string(connection) +
                                              "Allow: GET, HEAD, OPTIONS\r\n") +
           "Method Not Allowed\n";
}

/// What session::fail and a parse error write: the reason as a text body, then close.
std::string error_response(unsigned status, std::string_view why) {
    return head(std::to_string(status) + " " + std::string(why),
                "Content-Type: text/plain\r\nContent-Length: " + std::to_string(why.size() + 1) +
                    "\r\nConnection: close\r\n") +
           std::string(why) + "\n";
}

std::size_t count(std::string_view haystack, std::string_view needle) {
    std::size_t n = 0;
    for (auto at = haystack.find(needle); at != std::string_view::npos;
         at = haystack.find(needle, at + 1))
        ++n;
    return n;
}

/// How many responses (final or 1xx) `out` holds.
std::size_t responses(std::string_view out) {
    return count(out, "\r\nServer: tarry\r\n") + count(out, "HTTP/1.1 100 Continue\r\n");
}

/// Feeds `pieces` as a connection does: bytes a call leaves unconsumed stay at the front of
/// the buffer and go in again with the next piece. Returns the output; `left` gets what stays.
std::string feed_pieces(session& s, const std::vector<std::string_view>& pieces,
                        std::string* left = nullptr) {
    std::string buffer;
    std::string out;
    for (const auto piece : pieces) {
        buffer += piece;
        const std::size_t used = s.consume(buffer.data(), buffer.size(), out, date);
        EXPECT_LE(used, buffer.size());
        buffer.erase(0, used);
    }
    if (left != nullptr) *left = buffer;
    return out;
}

std::vector<std::string_view> bytes_of(std::string_view input) {
    std::vector<std::string_view> pieces;
    for (std::size_t i = 0; i < input.size(); ++i)
        pieces.push_back(input.substr(i, 1));
    return pieces;
}

constexpr std::string_view get_request = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";

class SessionTest : public ::testing::Test {
protected:
    SessionTest() {
        settings.keep_alive_timeout_s = 7;
        hello_routes.add("/", std::make_shared<hello_handler>()); // the server routes "/" so
        settings.routes = &hello_routes;
    }

    /// One consume() of the whole input into a fresh output string.
    std::string consume(session& s, std::string_view input, std::size_t* used = nullptr) {
        std::string out;
        const std::size_t n = s.consume(input.data(), input.size(), out, date);
        if (used != nullptr) *used = n;
        return out;
    }

    router hello_routes;
    session_settings settings;
};

TEST_F(SessionTest, SimpleGet) {
    session s(settings);
    std::size_t used = 0;
    const std::string out = consume(s, get_request, &used);
    EXPECT_EQ(out, "HTTP/1.1 200 OK\r\n"
                   "Server: tarry\r\n"
                   "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                   "Content-Type: text/plain\r\n"
                   "Content-Length: 13\r\n"
                   "Keep-Alive: timeout=7\r\n"
                   "\r\n"
                   "Hello, World!");
    EXPECT_EQ(used, get_request.size());
    EXPECT_FALSE(s.closing());
    EXPECT_FALSE(s.has_file());
    EXPECT_EQ(s.current_phase(), session::phase::idle);
    EXPECT_EQ(s.requests(), 1U);
}

TEST_F(SessionTest, KeepAliveTimeoutZeroOmitsTheField) {
    settings.keep_alive_timeout_s = 0;
    session s(settings);
    EXPECT_EQ(consume(s, get_request), hello(""));
    EXPECT_FALSE(s.closing());
}

TEST_F(SessionTest, HeadHasTheSameHeadAndNoBody) {
    session s(settings);
    std::size_t used = 0;
    const std::string_view req = "HEAD / HTTP/1.1\r\nHost: example.com\r\n\r\n";
    EXPECT_EQ(consume(s, req, &used), hello(keep, false));
    EXPECT_EQ(used, req.size());
    EXPECT_FALSE(s.closing());
}

TEST_F(SessionTest, PipelinedRequestsAreAnsweredInOrder) {
    session s(settings);
    const std::string input = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                              "HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n"
                              "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /c HTTP/1.1\r\nHost: x\r\n\r\n";
    std::size_t used = 0;
    const std::string out = consume(s, input, &used);
    const std::string options = head("200 OK", "Content-Length: 0\r\n"s + std::string(keep) +
                                                   "Allow: GET, HEAD, OPTIONS\r\n");
    EXPECT_EQ(out, hello(keep) + hello(keep, false) + options + hello(keep));
    EXPECT_EQ(used, input.size());
    EXPECT_EQ(s.requests(), 4U);
}

// After the client's end (consume's `all`): the request that ends the input is answered with
// Connection: close, whoever answers it; one the input cannot complete is never started.
TEST_F(SessionTest, AfterTheClientsEndTheLastRequestClosesAndOneCutShortNeverStarts) {
    const std::string two = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
    {
        session s(settings);
        std::string out;
        EXPECT_EQ(s.consume(two.data(), two.size(), out, date, true), two.size());
        EXPECT_EQ(out, hello(keep) + hello(close));
        EXPECT_TRUE(s.closing());
    }
    for (const std::string_view cut :
         {"POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"sv,
          "POST /c HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"sv,
          "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"sv,
          "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"sv,
          "POST /c HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
          "Transfer-Encoding: chunked\r\n\r\n"sv}) {
        SCOPED_TRACE(cut);
        session s(settings);
        settings.routes = &after_body_routes();
        const std::string input = std::string(two.substr(0, two.size() / 2)) + std::string(cut);
        std::string out;
        const std::size_t used = s.consume(input.data(), input.size(), out, date, true);
        EXPECT_EQ(used, two.size() / 2) << "nothing of the request cut short is consumed";
        EXPECT_EQ(responses(out), 1U) << out; // no 100 Continue, no answer
        EXPECT_EQ(s.current_phase(), session::phase::idle);
        EXPECT_EQ(s.consume(input.data() + used, input.size() - used, out, date, true), 0U);
        EXPECT_EQ(responses(out), 1U) << "the same the next time";
        settings.routes = &hello_routes;
    }
    // Whole bodies, chunked or not, then empty lines: the last request all the same.
    for (const std::string_view last :
         {"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
          "3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n\r\n"sv,
          "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\r\n"sv,
          "GET /c HTTP/1.1\r\nHost: x\r\n\r\n\r\n"sv}) {
        SCOPED_TRACE(last);
        settings.routes = &after_body_routes();
        session s(settings);
        const std::string input = std::string(two.substr(0, two.size() / 2)) + std::string(last);
        std::string out;
        s.consume(input.data(), input.size(), out, date, true);
        EXPECT_EQ(responses(out), 2U) << out;
        EXPECT_TRUE(out.starts_with(hello(keep))) << out;
        EXPECT_EQ(count(out, close), 1U) << out; // the second answer's (405 to a POST)
        settings.routes = &hello_routes;
    }
    { // the same bytes with more to come: the body is waited for
        const std::string input = "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc";
        session s(settings);
        std::string out;
        EXPECT_EQ(s.consume(input.data(), input.size(), out, date), input.size());
        EXPECT_EQ(s.current_phase(), session::phase::body);
    }
}

// A keep-alive mix of everything that has a body, split at every offset and fed byte by byte:
// the output must not depend on how the bytes arrive.
TEST_F(SessionTest, OutputDoesNotDependOnHowTheInputIsSplit) {
    const std::string input = "GET /first HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"
                              "POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n"
                              "hello world"
                              "\r\n" // an empty line between requests is ignored
                              "PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: v\r\n\r\n"
                              "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string expected =
        hello(keep) + not_allowed(keep) + not_allowed(keep) + hello(keep, false);
    {
        session s(settings);
        std::size_t used = 0;
        ASSERT_EQ(consume(s, input, &used), expected);
        ASSERT_EQ(used, input.size());
    }
    for (std::size_t split = 0; split <= input.size(); ++split) {
        session s(settings);
        std::string left;
        const std::string_view in = input;
        EXPECT_EQ(feed_pieces(s, {in.substr(0, split), in.substr(split)}, &left), expected)
            << "split at " << split;
        EXPECT_EQ(left, "") << "split at " << split;
        EXPECT_EQ(s.current_phase(), session::phase::idle) << "split at " << split;
        EXPECT_EQ(s.requests(), 4U) << "split at " << split;
    }
    session s(settings);
    std::string left;
    EXPECT_EQ(feed_pieces(s, bytes_of(input), &left), expected);
    EXPECT_EQ(left, "");
}

TEST_F(SessionTest, SimpleGetSplitAtEveryOffset) {
    for (std::size_t split = 0; split <= get_request.size(); ++split) {
        session s(settings);
        std::string left;
        EXPECT_EQ(feed_pieces(s, {get_request.substr(0, split), get_request.substr(split)}, &left),
                  hello(keep))
            << "split at " << split;
        EXPECT_EQ(left, "");
    }
}

TEST_F(SessionTest, NoHeaderByteIsConsumedBeforeTheHeaderIsComplete) {
    // Whether the partial header arrives in one read or grows over several.
    session growing(settings);
    for (std::size_t size = 1; size < get_request.size(); ++size) {
        std::size_t used = 1;
        EXPECT_EQ(consume(growing, get_request.substr(0, size), &used), "") << size;
        EXPECT_EQ(used, 0U) << size;
        EXPECT_EQ(growing.current_phase(), session::phase::headers) << size;

        session fresh(settings);
        used = 1;
        EXPECT_EQ(consume(fresh, get_request.substr(0, size), &used), "") << size;
        EXPECT_EQ(used, 0U) << size;
        EXPECT_EQ(consume(fresh, get_request, &used), hello(keep)) << size;
        EXPECT_EQ(used, get_request.size()) << size;
    }
    EXPECT_EQ(consume(growing, get_request), hello(keep));
}

TEST_F(SessionTest, Http10ClosesByDefault) {
    session s(settings);
    EXPECT_EQ(consume(s, "GET / HTTP/1.0\r\n\r\n"), hello(close));
    EXPECT_TRUE(s.closing());
}

TEST_F(SessionTest, Http10KeepAliveOnRequest) {
    session s(settings);
    const std::string_view req = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    EXPECT_EQ(consume(s, req), hello("Connection: keep-alive\r\nKeep-Alive: timeout=7\r\n"));
    EXPECT_FALSE(s.closing());
    EXPECT_EQ(consume(s, "HEAD / HTTP/1.0\r\n\r\n"), hello(close, false));
    EXPECT_TRUE(s.closing());
}

TEST_F(SessionTest, Http11ConnectionClose) {
    session s(settings);
    const std::string input =
        "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"s + std::string(get_request);
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used), hello(close));
    EXPECT_TRUE(s.closing());
    EXPECT_EQ(used, input.size() - get_request.size());
}

TEST_F(SessionTest, ConnectionCloseAmongOtherOptions) {
    session s(settings);
    EXPECT_EQ(consume(s, "GET / HTTP/1.1\r\nHost: x\r\nConnection: TE, Close\r\n\r\n"),
              hello(close));
    EXPECT_TRUE(s.closing());
}

TEST_F(SessionTest, MaxRequestsClosesAfterTheLast) {
    settings.max_requests = 3;
    session s(settings);
    const std::string input = std::string(get_request) + std::string(get_request) +
                              std::string(get_request) + std::string(get_request);
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used), hello(keep) + hello(keep) + hello(close));
    EXPECT_EQ(used, 3 * get_request.size());
    EXPECT_TRUE(s.closing());
    EXPECT_EQ(s.requests(), 3U);
    // The connection closes; whatever else it has is not answered.
    EXPECT_EQ(consume(s, std::string_view(input).substr(used), &used), "");
    EXPECT_EQ(used, 0U);
}

TEST_F(SessionTest, MaxRequestsZeroIsUnlimited) {
    settings.max_requests = 0;
    session s(settings);
    constexpr std::size_t total = 2500; // more than the default limit of 1000
    std::string buffer;
    for (std::size_t i = 0; i < total; ++i)
        buffer += get_request;
    std::string all;
    while (!buffer.empty()) {
        std::string out;
        const std::size_t used = s.consume(buffer.data(), buffer.size(), out, date);
        ASSERT_NE(used, 0U);
        buffer.erase(0, used);
        all += out;
    }
    EXPECT_EQ(count(all, hello(keep)), total);
    EXPECT_EQ(all.size(), total * hello(keep).size());
    EXPECT_FALSE(s.closing());
    EXPECT_EQ(s.requests(), total);
}

TEST_F(SessionTest, ExpectContinueBeforeTheBody) {
    settings.routes = &after_body_routes();
    session s(settings);
    const std::string_view header =
        "POST /upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
    std::size_t used = 0;
    EXPECT_EQ(consume(s, header, &used), "HTTP/1.1 100 Continue\r\n\r\n");
    EXPECT_EQ(used, header.size());
    EXPECT_EQ(s.current_phase(), session::phase::body);
    // Part of the body: no second 100.
    EXPECT_EQ(consume(s, "he", &used), "");
    EXPECT_EQ(used, 2U);
    EXPECT_EQ(consume(s, "llo", &used), not_allowed(keep));
    EXPECT_EQ(used, 3U);
    EXPECT_EQ(s.current_phase(), session::phase::idle);
    // The next request starts afresh.
    EXPECT_EQ(consume(s, "GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         "Content-Length: 1\r\n\r\n"),
              "HTTP/1.1 100 Continue\r\n\r\n");
    EXPECT_EQ(consume(s, "x"), hello(keep));
}

TEST_F(SessionTest, ExpectContinueWithTheBodyAlreadyHereSendsNo100) {
    settings.routes = &after_body_routes();
    session s(settings);
    EXPECT_EQ(consume(s, "PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         "Content-Length: 5\r\n\r\nhello"),
              not_allowed(keep));
    EXPECT_EQ(consume(s, "GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n\r\n"), hello(keep));
}

TEST_F(SessionTest, ExpectContinueIsIgnoredFromHttp10) {
    // RFC 9110, 10.1.1 and 15.2: never a 1xx to an HTTP/1.0 client.
    settings.routes = &after_body_routes();
    session s(settings);
    EXPECT_EQ(consume(s, "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"),
              "");
    EXPECT_EQ(s.current_phase(), session::phase::body);
    EXPECT_EQ(consume(s, "abc"), not_allowed(close));
}

TEST_F(SessionTest, ExpectContinueWithChunkedBody) {
    settings.routes = &after_body_routes();
    session s(settings);
    EXPECT_EQ(consume(s, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n"),
              "HTTP/1.1 100 Continue\r\n\r\n");
    EXPECT_EQ(consume(s, "3\r\nabc\r\n0\r\n\r\n"), not_allowed(keep));
}

TEST_F(SessionTest, ContentLengthBodyIsDiscardedBeforeTheNextRequest) {
    session s(settings);
    // The body looks like a request: it must not be taken for one.
    const std::string_view body = "GET /smuggled HTTP/1.1\r\nHost: y\r\n\r\n";
    const std::string input =
        "POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + std::string(body) + std::string(get_request);
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used), not_allowed(keep) + hello(keep));
    EXPECT_EQ(used, input.size());
    EXPECT_EQ(s.requests(), 2U);
}

TEST_F(SessionTest, IdenticalContentLengthsAreOneLength) {
    session s(settings);
    EXPECT_EQ(consume(s, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n"
                         "Content-Length: 3\r\n\r\nabc"s +
                             std::string(get_request)),
              not_allowed(keep) + hello(keep));
}

TEST_F(SessionTest, ChunkedBodyWithExtensionsAndTrailersThenGet) {
    session s(settings);
    const std::string input = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5;name=value\r\nhello\r\n"
                              "6 ; a ; b=\"q;\\\"x\"\r\n world\r\n"
                              "A\r\n0123456789\r\n"
                              "000\r\nX-Checksum: abc\r\nX-Other: def\r\n\r\n"s +
                              std::string(get_request);
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used), not_allowed(keep) + hello(keep));
    EXPECT_EQ(used, input.size());
}

TEST_F(SessionTest, TrailerFieldsAreNotHeaderFields) {
    // RFC 9110, 6.5.1: a trailer is no header field; a Host or Expect there changes nothing.
    session s(settings);
    const std::string input = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "1\r\na\r\n0\r\nHost: other\r\nExpect: something\r\n\r\n"s +
                              std::string(get_request);
    EXPECT_EQ(consume(s, input), not_allowed(keep) + hello(keep));
    EXPECT_FALSE(s.closing());
}

TEST_F(SessionTest, OptionsStar) {
    session s(settings);
    EXPECT_EQ(consume(s, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"),
              "HTTP/1.1 200 OK\r\n"
              "Server: tarry\r\n"
              "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
              "Content-Length: 0\r\n"
              "Keep-Alive: timeout=7\r\n"
              "Allow: GET, HEAD, OPTIONS\r\n"
              "\r\n");
    EXPECT_FALSE(s.closing());
}

TEST_F(SessionTest, OtherMethodsAreNotAllowed) {
    for (const std::string_view method : {"POST"sv, "PUT"sv, "DELETE"sv, "PATCH"sv}) {
        session s(settings);
        std::size_t used = 0;
        const std::string req = std::string(method) + " /x HTTP/1.1\r\nHost: x\r\n\r\n";
        EXPECT_EQ(consume(s, req, &used), "HTTP/1.1 405 Method Not Allowed\r\n"
                                          "Server: tarry\r\n"
                                          "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                                          "Content-Type: text/plain\r\n"
                                          "Content-Length: 19\r\n"
                                          "Keep-Alive: timeout=7\r\n"
                                          "Allow: GET, HEAD, OPTIONS\r\n"
                                          "\r\n"
                                          "Method Not Allowed\n")
            << method;
        EXPECT_EQ(used, req.size());
        EXPECT_FALSE(s.closing());
    }
}

TEST_F(SessionTest, UnrecognisedMethodIsNotImplemented) {
    // Methods are case-sensitive: "get" is a valid token but no method this server knows
    // (RFC 9110, 9.1: 501; 405 is for a known method the resource does not allow).
    for (const std::string_view method : {"get"sv, "FOO"sv, "Get"sv}) {
        session s(settings);
        EXPECT_EQ(consume(s, std::string(method) + " / HTTP/1.1\r\nHost: x\r\n\r\n"),
                  head("501 Not Implemented",
                       "Content-Type: text/plain\r\nContent-Length: 16\r\n"s + std::string(keep)) +
                      "Not Implemented\n")
            << method;
        EXPECT_FALSE(s.closing());
    }
}

TEST_F(SessionTest, AbsoluteFormTargets) {
    for (const std::string_view target :
         {"http://example.com/x?y"sv, "http://example.com"sv, "HTTPS://example.com:8443?q=1"sv,
          "http://[::1]:8080/a/b"sv}) {
        session s(settings);
        EXPECT_EQ(
            consume(s, "GET " + std::string(target) + " HTTP/1.1\r\nHost: example.com\r\n\r\n"),
            hello(keep))
            << target;
    }
}

TEST_F(SessionTest, ValidHostForms) {
    for (const std::string_view host :
         {""sv, "example.com"sv, "example.com:8080"sv, "127.0.0.1"sv, "[::1]"sv, "[::1]:80"sv,
          "xn--bcher-kva.example"sv, "a_b.local"sv, "  padded.example  "sv}) {
        session s(settings);
        EXPECT_EQ(consume(s, "GET / HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n"),
                  hello(keep))
            << '"' << host << '"';
    }
}

TEST_F(SessionTest, LeadingEmptyLinesAreIgnored) {
    session s(settings);
    const std::string input = "\r\n\r\n\r\n"s + std::string(get_request);
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used), hello(keep));
    EXPECT_EQ(used, input.size());

    // Empty lines alone are consumed and leave the session idle.
    EXPECT_EQ(consume(s, "\r\n\r\n", &used), "");
    EXPECT_EQ(used, 4U);
    EXPECT_EQ(s.current_phase(), session::phase::idle);
}

TEST_F(SessionTest, DrainClosesAnIdleSession) {
    session s(settings);
    EXPECT_EQ(consume(s, get_request), hello(keep));
    EXPECT_FALSE(s.closing());
    s.drain();
    EXPECT_TRUE(s.closing());
    std::size_t used = 1;
    EXPECT_EQ(consume(s, get_request, &used), "");
    EXPECT_EQ(used, 0U);
}

TEST_F(SessionTest, DrainMidRequestClosesAfterTheResponse) {
    session s(settings);
    std::size_t used = 1;
    EXPECT_EQ(consume(s, get_request.substr(0, 10), &used), "");
    EXPECT_EQ(used, 0U);
    s.drain();
    EXPECT_FALSE(s.closing());
    EXPECT_EQ(consume(s, std::string(get_request) + std::string(get_request), &used), hello(close));
    EXPECT_EQ(used, get_request.size());
    EXPECT_TRUE(s.closing());
}

TEST_F(SessionTest, DrainInTheBodyClosesAfterTheResponse) {
    settings.routes = &after_body_routes();
    session s(settings);
    EXPECT_EQ(consume(s, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab"), "");
    EXPECT_EQ(s.current_phase(), session::phase::body);
    s.drain();
    EXPECT_FALSE(s.closing());
    EXPECT_EQ(consume(s, "cd"), not_allowed(close));
    EXPECT_TRUE(s.closing());
}

TEST_F(SessionTest, PhaseTransitions) {
    settings.routes = &after_body_routes();
    session s(settings);
    EXPECT_EQ(s.current_phase(), session::phase::idle);

    const std::string_view header = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n";
    std::size_t used = 1;
    EXPECT_EQ(consume(s, header.substr(0, 20), &used), "");
    EXPECT_EQ(used, 0U);
    EXPECT_EQ(s.current_phase(), session::phase::headers);

    EXPECT_EQ(consume(s, std::string(header) + "ab", &used), "");
    EXPECT_EQ(used, header.size() + 2);
    EXPECT_EQ(s.current_phase(), session::phase::body);

    EXPECT_EQ(consume(s, "cd", &used), "");
    EXPECT_EQ(used, 2U);
    EXPECT_EQ(s.current_phase(), session::phase::body);

    EXPECT_EQ(consume(s, "e", &used), not_allowed(keep));
    EXPECT_EQ(used, 1U);
    EXPECT_EQ(s.current_phase(), session::phase::idle);
}

TEST_F(SessionTest, FailWritesTheStatusAndCloses) {
    session s(settings);
    EXPECT_EQ(consume(s, get_request.substr(0, 5)), "");
    EXPECT_EQ(s.current_phase(), session::phase::headers);
    std::string out;
    s.fail(408, out, date);
    EXPECT_EQ(out, "HTTP/1.1 408 Request Timeout\r\n"
                   "Server: tarry\r\n"
                   "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                   "Content-Type: text/plain\r\n"
                   "Content-Length: 16\r\n"
                   "Connection: close\r\n"
                   "\r\n"
                   "Request Timeout\n");
    EXPECT_TRUE(s.closing());
    EXPECT_EQ(s.current_phase(), session::phase::idle);
}

TEST_F(SessionTest, MaxQueuedBytesBoundsOneCall) {
    settings.max_queued_bytes = 1;
    session s(settings);
    const std::string input =
        std::string(get_request) + "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(get_request);
    std::string_view rest = input;
    std::size_t used = 0;

    EXPECT_EQ(consume(s, rest, &used), hello(keep));
    EXPECT_EQ(used, get_request.size());
    rest.remove_prefix(used);

    // Output not yet written: nothing more is parsed.
    std::string out = "pending";
    EXPECT_EQ(s.consume(rest.data(), rest.size(), out, date), 0U);
    EXPECT_EQ(out, "pending");

    EXPECT_EQ(consume(s, rest, &used), hello(keep, false));
    rest.remove_prefix(used);
    EXPECT_EQ(consume(s, rest, &used), hello(keep));
    EXPECT_EQ(used, rest.size());
    EXPECT_EQ(s.requests(), 3U);
}

TEST_F(SessionTest, MaxQueuedBytesLetsSmallResponsesShareACall) {
    settings.max_queued_bytes = 2 * hello(keep).size();
    session s(settings);
    std::string input;
    for (int i = 0; i < 5; ++i)
        input += get_request;
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used), hello(keep) + hello(keep));
    EXPECT_EQ(used, 2 * get_request.size());
}

TEST_F(SessionTest, LaterHttp1MinorVersionIsServedAs11) {
    // RFC 9110, 2.5: a higher minor version of a known major version is handled as the highest
    // known one.
    session s(settings);
    EXPECT_EQ(consume(s, "GET / HTTP/1.2\r\nHost: x\r\n\r\n"), hello(keep));
    EXPECT_EQ(consume(s, "GET / HTTP/1.9\r\nHost: x\r\n\r\n"), hello(keep));
    EXPECT_FALSE(s.closing());
    // As 1.1: Host is required, and Connection: close is honoured.
    EXPECT_EQ(consume(s, "GET / HTTP/1.2\r\nHost: x\r\nConnection: close\r\n\r\n"), hello(close));
    session t(settings);
    EXPECT_EQ(consume(t, "GET / HTTP/1.2\r\n\r\n"), error_response(400, "Bad Request"));
}

TEST_F(SessionTest, LaterMinorVersionWithBodyAndPipelining) {
    session s(settings);
    const std::string input =
        "POST / HTTP/1.3\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"s + std::string(get_request);
    std::size_t used = 0;
    EXPECT_EQ(consume(s, input, &used), not_allowed(keep) + hello(keep));
    EXPECT_EQ(used, input.size());
}

TEST_F(SessionTest, NewSettingsApplyFromTheNextRequest) {
    session s(settings);
    session_settings reloaded = settings;
    reloaded.keep_alive_timeout_s = 30;
    reloaded.max_requests = 3; // the count goes on: the third request is the last
    EXPECT_EQ(consume(s, get_request), hello(keep));
    s.set_settings(reloaded);
    EXPECT_EQ(consume(s, get_request), hello("Keep-Alive: timeout=30\r\n"));
    EXPECT_EQ(consume(s, get_request), hello(close));
    EXPECT_TRUE(s.closing());
}

TEST_F(SessionTest, RequestsCount) {
    session s(settings);
    EXPECT_EQ(s.requests(), 0U);
    consume(s, std::string(get_request) + std::string(get_request));
    EXPECT_EQ(s.requests(), 2U);
}

// ---- Bad input: each answered with its status, Connection: close, and nothing after it. ----

struct bad_request_case {
    const char* name;
    std::string_view request;
    unsigned status;
};

std::string_view reason_for(unsigned status) {
    switch (status) {
    case 400:
        return "Bad Request";
    case 413:
        return "Payload Too Large";
    case 414:
        return "URI Too Long";
    case 417:
        return "Expectation Failed";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "?";
    }
}

void PrintTo(const bad_request_case& c, std::ostream* os) {
    *os << c.name;
}

class BadRequestTest : public ::testing::TestWithParam<bad_request_case> {};

TEST_P(BadRequestTest, IsRefusedAndCloses) {
    const bad_request_case& c = GetParam();
    session_settings settings;
    settings.routes = &after_body_routes();
    session s(settings);
    // A good request pipelined after the bad one must not be answered.
    const std::string input = std::string(c.request) + std::string(get_request);
    std::string out;
    s.consume(input.data(), input.size(), out, date);
    EXPECT_EQ(out, error_response(c.status, reason_for(c.status)));
    EXPECT_EQ(out.substr(0, 12), "HTTP/1.1 " + std::to_string(c.status));
    EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos);
    EXPECT_EQ(responses(out), 1U);
    EXPECT_TRUE(s.closing());
    EXPECT_EQ(s.current_phase(), session::phase::idle);
    EXPECT_EQ(s.requests(), 0U);

    // The same, byte by byte.
    session t(settings);
    EXPECT_EQ(feed_pieces(t, bytes_of(input)), error_response(c.status, reason_for(c.status)));
    EXPECT_TRUE(t.closing());
}

const bad_request_case bad_requests[] = {
    // Host (RFC 9112, 3.2)
    {"MissingHost", "GET / HTTP/1.1\r\n\r\n", 400},
    {"MissingHostAbsoluteForm", "GET http://example.com/ HTTP/1.1\r\n\r\n", 400},
    {"DuplicateHost", "GET / HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n", 400},
    {"DuplicateHostDifferent", "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\nhost: b\r\n\r\n", 400},
    {"DuplicateHostHttp10", "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400},
    {"HostWithSpace", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
    {"HostWithInnerSpace", "GET / HTTP/1.1\r\nHost: exa mple\r\n\r\n", 400},
    {"HostUnclosedIpLiteral", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400},
    {"HostBadPort", "GET / HTTP/1.1\r\nHost: host:port\r\n\r\n", 400},
    {"HostEmptyPort", "GET / HTTP/1.1\r\nHost: host:\r\n\r\n", 400},
    {"HostLongPort", "GET / HTTP/1.1\r\nHost: host:123456\r\n\r\n", 400},
    {"HostUserinfo", "GET / HTTP/1.1\r\nHost: user@host\r\n\r\n", 400},
    {"HostWithPath", "GET / HTTP/1.1\r\nHost: host/path\r\n\r\n", 400},
    {"HostNonAscii", "GET / HTTP/1.1\r\nHost: h\xc3\xa9.example\r\n\r\n", 400},
    {"HostIpLiteralJunk", "GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", 400},
    {"AbsoluteFormBadAuthority", "GET http://a b/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"AbsoluteFormEmptyAuthority", "GET http:///x HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"AbsoluteFormUserinfo", "GET http://u@example.com/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"AbsoluteFormOtherScheme", "GET ftp://example.com/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    // Field syntax (RFC 9112, 5; RFC 9110, 5.1 and 5.5)
    {"HeaderNameWithSpace", "GET / HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n", 400},
    {"HeaderNameWithAt", "GET / HTTP/1.1\r\nHost: x\r\nFoo@: x\r\n\r\n", 400},
    {"HeaderNameEmpty", "GET / HTTP/1.1\r\nHost: x\r\n: x\r\n\r\n", 400},
    {"HeaderNameNonAscii", "GET / HTTP/1.1\r\nHost: x\r\nF\xc3\xa9: x\r\n\r\n", 400},
    {"HeaderWithoutColon", "GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400},
    {"ObsFoldSpace", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400},
    {"ObsFoldTab", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n", 400},
    {"ObsFoldOfHost", "GET / HTTP/1.1\r\nHost:\r\n x\r\n\r\n", 400},
    {"WhitespaceBeforeFirstField", "GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400},
    {"SpaceBeforeColon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
    {"TabBeforeColon", "GET / HTTP/1.1\r\nHost: x\r\nX-A\t: y\r\n\r\n", 400},
    {"NulInValue", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n"sv, 400},
    {"NulInHost", "GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n"sv, 400},
    {"ControlInValue", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01z\r\n\r\n", 400},
    {"EscapeInValue", "GET / HTTP/1.1\r\nHost: x\r\nX-A: \x1b[31m\r\n\r\n", 400},
    {"DelInValue", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x7fz\r\n\r\n", 400},
    {"BareCrInValue", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400},
    {"BareLfInValue", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\nb\r\n\r\n", 400},
    {"NulInTarget", "GET /a\0b HTTP/1.1\r\nHost: x\r\n\r\n"sv, 400},
    {"ControlInTarget", "GET /a\x01z HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"DelInTarget", "GET /a\x7fz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"TabInTarget", "GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"NulInMethod", "G\0T / HTTP/1.1\r\nHost: x\r\n\r\n"sv, 400},
    // Framing (RFC 9112, 6)
    {"TransferEncodingThenContentLength",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
     "0\r\n\r\n",
     400},
    {"ContentLengthThenTransferEncoding",
     "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
     "0\r\n\r\n",
     400},
    {"TransferEncodingInHttp10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400},
    {"FinalCodingGzip", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
    {"FinalCodingNotChunked",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
    {"ChunkedTwice",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400},
    {"ChunkedTwiceInTwoFields",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400},
    {"CodingAfterChunkedInASecondField",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: gzip\r\n\r\n0\r\n\r\n",
     400},
    {"EmptyTransferEncoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", 400},
    {"QuotedChunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", 400},
    {"UnknownCoding",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo, chunked\r\n\r\n0\r\n\r\n", 501},
    {"GzipThenChunked",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
    {"ContentLengthLetters", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400},
    {"ContentLengthNegative", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
    {"ContentLengthTwoNumbers", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n", 400},
    {"ContentLengthPlus", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\n", 400},
    {"ContentLengthHex", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x1\r\n\r\n", 400},
    {"ContentLengthEmpty", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400},
    {"ContentLengthOverflow",
     "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
    {"ContentLengthsConflict",
     "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
    {"ContentLengthListConflicts", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 2\r\n\r\nab",
     400},
    {"ContentLengthListEmptyItem", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1,\r\n\r\na",
     400},
    {"BadChunkSize", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
    {"NegativeChunkSize", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
     400},
    {"ChunkSizeOverflow",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     "10000000000000000\r\n",
     400},
    {"ChunkWithoutCrlf",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", 400},
    {"ChunkSizeBareLf",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", 400},
    {"BadChunkExtension",
     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;@\r\nabc\r\n0\r\n\r\n",
     400},
    // Request line (RFC 9112, 3)
    {"NoVersion", "GET /\r\nHost: x\r\n\r\n", 400},
    {"TwoSpacesBeforeTarget", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"TwoSpacesBeforeVersion", "GET /  HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"ExtraAfterVersion", "GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400},
    {"TwoVersions", "GET / HTTP/1.1 HTTP/2.0\r\nHost: x\r\n\r\n", 400},
    {"TrailingSpace", "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},
    {"LeadingSpace", " GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"TabSeparator", "GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"LowercaseVersion", "GET / http/1.1\r\nHost: x\r\n\r\n", 400},
    {"TwoDigitMinorVersion", "GET / HTTP/1.10\r\nHost: x\r\n\r\n", 400},
    {"VersionWithoutMinor", "GET / HTTP/1\r\nHost: x\r\n\r\n", 400},
    {"MethodWithSlash", "GE/T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"BareLfLines", "GET / HTTP/1.1\nHost: x\n\n", 400},
    {"BareLfAfterRequestLine", "GET / HTTP/1.1\nHost: x\r\n\r\n", 400},
    {"BareLfEndsHeader", "GET / HTTP/1.1\r\nHost: x\r\n\n", 400},
    {"BareCrAfterRequestLine", "GET / HTTP/1.1\rHost: x\r\n\r\n", 400},
    {"Http2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
    {"Http31", "GET / HTTP/3.1\r\nHost: x\r\n\r\n", 505},
    {"Http09", "GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505},
    {"Http2WithoutHost", "GET / HTTP/2.0\r\n\r\n", 505},
    // Target (RFC 9112, 3.2)
    {"RelativeTarget", "GET foo HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"StarWithGet", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"StarWithPost", "POST * HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 400},
    {"AuthorityFormWithGet", "GET example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    {"QueryOnlyTarget", "GET ?a=b HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    // Expect (RFC 9110, 10.1.1)
    {"UnknownExpectation", "GET / HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n", 417},
    {"ContinueAndMore", "GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue, foo\r\n\r\n", 417},
};

INSTANTIATE_TEST_SUITE_P(Rfc9112, BadRequestTest, ::testing::ValuesIn(bad_requests),
                         [](const ::testing::TestParamInfo<bad_request_case>& c) {
                             return std::string(c.param.name);
                         });

// ---- Limits ----

class LimitTest : public SessionTest {
protected:
    LimitTest() {
        settings.max_header_bytes = 256;
        settings.max_body_bytes = 10;
    }

    std::string long_target(std::size_t length) { return "/" + std::string(length - 1, 'a'); }
};

TEST_F(LimitTest, RequestLineLongerThanTheLimitIs414) {
    session s(settings);
    // The line ends, and the whole header is here, but only past the limit.
    const std::string input =
        "GET " + long_target(300) + " HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(get_request);
    EXPECT_EQ(consume(s, input), error_response(414, "URI Too Long"));
    EXPECT_TRUE(s.closing());
}

TEST_F(LimitTest, PartialRequestLineOverTheLimitIs414) {
    const std::string line = "GET " + long_target(400);
    session s(settings);
    std::size_t used = 1;
    // Up to the limit: wait for more.
    EXPECT_EQ(consume(s, std::string_view(line).substr(0, 255), &used), "");
    EXPECT_EQ(used, 0U);
    EXPECT_FALSE(s.closing());
    EXPECT_EQ(s.current_phase(), session::phase::headers);
    // Once the buffer holds the limit without a line end, the line can only be too long.
    EXPECT_EQ(consume(s, std::string_view(line).substr(0, 256), &used),
              error_response(414, "URI Too Long"));
    EXPECT_TRUE(s.closing());

    session t(settings);
    EXPECT_EQ(feed_pieces(t, bytes_of(line)), error_response(414, "URI Too Long"));
}

TEST_F(LimitTest, HeadersLongerThanTheLimitAre431) {
    session s(settings);
    const std::string input = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(300, 'b') +
                              "\r\n\r\n" + std::string(get_request);
    EXPECT_EQ(consume(s, input), error_response(431, "Request Header Fields Too Large"));
    EXPECT_TRUE(s.closing());
}

TEST_F(LimitTest, PartialHeadersOverTheLimitAre431) {
    // Even when the request line came in an earlier read: the limit is for the whole header.
    const std::string input =
        "GET / HTTP/1.1\r\nHost: x\r\n" + std::string(20, 'X') + ": " + std::string(400, 'v');
    session s(settings);
    EXPECT_EQ(feed_pieces(s, bytes_of(input)),
              error_response(431, "Request Header Fields Too Large"));
    EXPECT_TRUE(s.closing());
}

TEST_F(LimitTest, RequestLineInAnEarlierReadStillGives431) {
    // The first read holds the request line and a whole field, the next one a field too long
    // to end within the limit: a header too large, not a request line too long.
    session s(settings);
    EXPECT_EQ(feed_pieces(s, {"GET / HTTP/1.1\r\nHost: x\r\nX", "-Big: " + std::string(400, 'v')}),
              error_response(431, "Request Header Fields Too Large"));
    EXPECT_TRUE(s.closing());
}

TEST_F(LimitTest, ManyFieldsTrickledInCountTogether) {
    std::string input = "GET / HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 30; ++i)
        input += "X-Field-" + std::to_string(i) + ": value\r\n";
    input += "\r\n";
    ASSERT_GT(input.size(), 256U);
    std::vector<std::string_view> lines;
    std::string_view rest = input;
    for (auto at = rest.find('\n'); at != std::string_view::npos; at = rest.find('\n')) {
        lines.push_back(rest.substr(0, at + 1));
        rest.remove_prefix(at + 1);
    }
    session s(settings);
    EXPECT_EQ(feed_pieces(s, lines), error_response(431, "Request Header Fields Too Large"));
}

TEST_F(LimitTest, HeaderOfExactlyTheLimitIsAccepted) {
    const std::string start = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    const std::string exact = start + std::string(256 - start.size() - 4, 'p') + "\r\n\r\n";
    ASSERT_EQ(exact.size(), 256U);
    session s(settings);
    EXPECT_EQ(consume(s, exact), hello(keep));

    const std::string over = start + std::string(256 - start.size() - 3, 'p') + "\r\n\r\n";
    session t(settings);
    EXPECT_EQ(consume(t, over), error_response(431, "Request Header Fields Too Large"));
}

TEST_F(LimitTest, ContentLengthOverTheLimitIs413AtTheHeader) {
    session s(settings);
    std::size_t used = 1;
    // No body byte sent yet, and an expectation of 100-continue: refused at once, no 100.
    EXPECT_EQ(consume(s,
                      "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      "Content-Length: 11\r\n\r\n",
                      &used),
              error_response(413, "Payload Too Large"));
    EXPECT_TRUE(s.closing());
}

TEST_F(LimitTest, ContentLengthAtTheLimitIsRead) {
    session s(settings);
    EXPECT_EQ(consume(s, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"s +
                             std::string(get_request)),
              not_allowed(keep) + hello(keep));
}

TEST_F(LimitTest, ChunkedBodyOverTheLimitIs413) {
    settings.routes = &after_body_routes();
    const std::string first = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "6\r\nabcdef\r\n";
    const std::string second = "5\r\nabcde\r\n0\r\n\r\n"s + std::string(get_request);
    {
        session s(settings);
        std::size_t used = 0;
        EXPECT_EQ(consume(s, first, &used), "");
        // The chunk's CRLF is taken with the next chunk header.
        EXPECT_EQ(used, first.size() - 2);
        EXPECT_EQ(s.current_phase(), session::phase::body);
    }
    session s(settings);
    EXPECT_EQ(feed_pieces(s, {first, second}), error_response(413, "Payload Too Large"));
    EXPECT_TRUE(s.closing());
    session t(settings);
    EXPECT_EQ(consume(t, first + second), error_response(413, "Payload Too Large"));
}

TEST_F(LimitTest, ChunkedBodyAtTheLimitIsRead) {
    session s(settings);
    EXPECT_EQ(consume(s, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "6\r\nabcdef\r\n4\r\nghij\r\n0\r\n\r\n"s +
                             std::string(get_request)),
              not_allowed(keep) + hello(keep));
}

} // namespace
} // namespace tarry::http::test

namespace tarry::http::test {
namespace {

// Found by the fuzzer: a trailer section the parser needs whole, longer than a header may be,
// used to fill the connection's buffer with nothing consumable.
TEST(SessionLimits, OversizedTrailerSectionIs431) {
    session_settings settings;
    settings.routes = &after_body_routes();
    settings.max_header_bytes = 256;
    session s(settings);
    std::string in = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\nhello\r\n0\r\nTrailer: " +
                     std::string(400, 'x');
    std::string out;
    const std::size_t used = s.consume(in.data(), in.size(), out, "Sun, 06 Nov 1994 08:49:37 GMT");
    EXPECT_LE(used, in.size());
    EXPECT_EQ(out.substr(0, 12), "HTTP/1.1 431");
    EXPECT_TRUE(s.closing());
}

} // namespace
} // namespace tarry::http::test

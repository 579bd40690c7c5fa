// A route's options around its handler, through a real session (no sockets): fields added,
// replaced and hidden on every answer, errors included; error pages and the SPA fallback in
// place of the handler's own 404; the prefix stripped; plain requests redirected; and a
// deferred answer, whose route_exchange outlives the request's call (the sanitizers check it
// is freed).
#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <tarry/http/exchange.hpp>
#include <tarry/http/route_handler.hpp>
#include <tarry/http/session.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

namespace tarry::http {
namespace {

using namespace std::literals;

constexpr std::string_view date = "Sun, 06 Nov 1994 08:49:37 GMT";

/// Answers "/missing..." with its own 404 (as the files handler does: respond, write, finish),
/// "/text404" with respond_text, "/proxied" as a proxy passes an upstream's 404 on, and
/// anything else 200 with the target it saw as the body; each with fields an upstream might
/// send.
class echo final : public handler {
public:
    void on_request(exchange& ex) override {
        const std::string_view target = ex.request().target;
        ++calls;
        if (target.starts_with("/missing")) {
            response_head head = text_head(404, 10);
            ex.respond(head);
            ex.write("Not Found\n");
            ex.finish();
            return;
        }
        if (target == "/text404") return ex.respond_text(404, "Not Found\n");
        response_head head = text_head(target == "/proxied" ? 404 : 200, target.size());
        head.extra_fields = "X-Powered-By: app\r\nCache-Control: private\r\nETag: \"1\"\r\n";
        if (target == "/proxied") {
            head.server_date = false;
            head.extra_fields = "Server: app\r\nX-Powered-By: app\r\n";
        }
        ex.respond(head);
        ex.write(target);
        ex.finish();
    }
    int calls = 0;
};

/// Answers once the request's body is whole (a deferred answer, as the proxy's).
class later final : public handler, public deferred {
public:
    void on_request(exchange& ex) override {
        ex_ = &ex;
        ex.defer(*this);
        ex.read_body();
    }
    void on_body_end() override {
        exchange& ex = *ex_;
        ex_ = nullptr;
        ex.respond_text(502, "Bad Gateway\n");
    }
    void on_abort() noexcept override { ex_ = nullptr; }

private:
    exchange* ex_ = nullptr;
};

std::string answer(handler& h, route_options o, std::string_view request) {
    router r;
    r.add("/", std::make_shared<route_handler>(
                   std::shared_ptr<handler>(std::shared_ptr<handler>{}, &h), std::move(o)));
    session_settings settings;
    settings.routes = &r;
    session s(settings);
    std::string out;
    const std::string input(request);
    s.consume(input.data(), input.size(), out, date);
    return out;
}

std::string get(std::string_view target) {
    return "GET "s + std::string(target) + " HTTP/1.1\r\nHost: example.com:8080\r\n\r\n";
}

route_options headers() {
    route_options o;
    o.add_fields = "Strict-Transport-Security: max-age=60\r\nCache-Control: no-store\r\n";
    o.remove_fields = {"Strict-Transport-Security", "cache-control", "X-Powered-By"};
    return o;
}

TEST(RouteHandlerTest, FieldsAddedReplacedAndHiddenOnEveryAnswer) {
    echo h;
    for (const std::string_view target : {"/ok"sv, "/missing"sv, "/text404"sv, "/proxied"sv}) {
        SCOPED_TRACE(target);
        const std::string out = answer(h, headers(), get(target));
        EXPECT_NE(out.find("\r\nStrict-Transport-Security: max-age=60\r\n"), std::string::npos)
            << out;
        EXPECT_NE(out.find("\r\nCache-Control: no-store\r\n"), std::string::npos) << out;
        EXPECT_EQ(out.find("private"), std::string::npos) << out;
        EXPECT_EQ(out.find("X-Powered-By"), std::string::npos) << out;
    }
    const std::string ok = answer(h, headers(), get("/ok"));
    EXPECT_NE(ok.find("ETag: \"1\"\r\n"), std::string::npos) << ok;
    EXPECT_TRUE(ok.starts_with("HTTP/1.1 200 OK\r\n")) << ok;
    EXPECT_TRUE(ok.ends_with("/ok")) << ok;
    EXPECT_NE(answer(h, headers(), get("/proxied")).find("Server: app\r\n"), std::string::npos);
}

TEST(RouteHandlerTest, ErrorPageReplacesTheServersOwnAnswersOnly) {
    echo h;
    route_options o;
    o.error_pages.push_back({404, "text/html", "<h1>gone</h1>"});
    o.add_fields = "X-Site: a\r\n";
    for (const std::string_view target : {"/missing"sv, "/text404"sv}) {
        SCOPED_TRACE(target);
        const std::string out = answer(h, o, get(target));
        EXPECT_TRUE(out.starts_with("HTTP/1.1 404 Not Found\r\n")) << out;
        EXPECT_NE(out.find("Content-Type: text/html\r\n"), std::string::npos) << out;
        EXPECT_NE(out.find("Content-Length: 13\r\n"), std::string::npos) << out;
        EXPECT_NE(out.find("X-Site: a\r\n"), std::string::npos) << out;
        EXPECT_TRUE(out.ends_with("\r\n\r\n<h1>gone</h1>")) << out;
        EXPECT_EQ(out.find("Not Found\n"), std::string::npos) << out;
    }
    const std::string proxied = answer(h, o, get("/proxied"));
    EXPECT_EQ(proxied.find("<h1>gone</h1>"), std::string::npos) << "an upstream's own 404 stays";
    EXPECT_TRUE(proxied.ends_with("/proxied")) << proxied;
}

TEST(RouteHandlerTest, FallbackAnswersAMissingFileWithTheFallbackTarget) {
    echo h;
    route_options o;
    o.fallback = "/index.html";
    const std::string out = answer(h, o, get("/missing/deep/link?x=1"));
    EXPECT_TRUE(out.starts_with("HTTP/1.1 200 OK\r\n")) << out;
    EXPECT_TRUE(out.ends_with("/index.html")) << out;
    EXPECT_EQ(h.calls, 2);
    // A fallback that is missing too: its own 404, once.
    o.fallback = "/missing-index.html";
    const std::string twice = answer(h, o, get("/missing"));
    EXPECT_TRUE(twice.starts_with("HTTP/1.1 404 Not Found\r\n")) << twice;
    EXPECT_EQ(twice.find("HTTP/1.1", 1), std::string::npos) << "one answer: " << twice;
    // Not for a POST.
    const std::string post = answer(h, o, "POST /missing HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(post.starts_with("HTTP/1.1 404 Not Found\r\n")) << post;
}

TEST(RouteHandlerTest, StripPrefixRewritesTheTargetTheHandlerSees) {
    echo h;
    route_options o;
    o.strip_prefix = "/api/";
    EXPECT_TRUE(answer(h, o, get("/api/users?id=1")).ends_with("\r\n\r\n/users?id=1"));
    EXPECT_TRUE(answer(h, o, get("/api/")).ends_with("\r\n\r\n/"));
    o.strip_prefix = "/api";
    EXPECT_TRUE(answer(h, o, get("/api?x")).ends_with("\r\n\r\n/?x"));
    EXPECT_TRUE(answer(h, o, get("/other")).ends_with("\r\n\r\n/other"));
}

TEST(RouteHandlerTest, PlainRequestsAreRedirectedToHttps) {
    echo h;
    route_options o;
    o.plain_redirect = "https://{host}:8443{uri}";
    const std::string out = answer(h, o, get("/a?b=1"));
    EXPECT_TRUE(out.starts_with("HTTP/1.1 301 Moved Permanently\r\n")) << out;
    EXPECT_NE(out.find("Location: https://example.com:8443/a?b=1\r\n"), std::string::npos) << out;
    EXPECT_EQ(h.calls, 0);
}

TEST(RouteHandlerTest, DeferredAnswerGetsTheEditsAndItsExchangeIsFreed) {
    later h;
    route_options o = headers();
    o.error_pages.push_back({502, "text/html", "<p>down</p>"});
    const std::string out =
        answer(h, o, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
    EXPECT_TRUE(out.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << out;
    EXPECT_NE(out.find("Cache-Control: no-store\r\n"), std::string::npos) << out;
    EXPECT_TRUE(out.ends_with("<p>down</p>")) << out;
}

TEST(RouteHandlerTest, DeferredAnswerAbortedByTheClientFreesItsExchange) {
    later h;
    router r;
    r.add("/", std::make_shared<route_handler>(
                   std::shared_ptr<handler>(std::shared_ptr<handler>{}, &h), headers()));
    session_settings settings;
    settings.routes = &r;
    std::string out;
    {
        session s(settings);
        const std::string input = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\na";
        s.consume(input.data(), input.size(), out, date);
        EXPECT_TRUE(out.empty());
    } // the connection goes: the answer is aborted, through the route's exchange
    EXPECT_TRUE(out.empty());
}

} // namespace
} // namespace tarry::http

// Sites: server names matched on the Host (port, case and a trailing dot ignored, "*." for one
// label more), the router's choice of site then route, and the redirect's Location.
#include <tarry/http/exchange.hpp>
#include <tarry/http/host_names.hpp>
#include <tarry/http/redirect_handler.hpp>
#include <tarry/http/router.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace tarry::http {
namespace {

TEST(HostNameTest, DropsPortAndTrailingDot) {
    EXPECT_EQ(host_name("example.com"), "example.com");
    EXPECT_EQ(host_name("example.com:8080"), "example.com");
    EXPECT_EQ(host_name("example.com."), "example.com");
    EXPECT_EQ(host_name("Example.COM.:443"), "Example.COM");
    EXPECT_EQ(host_name("[::1]:8080"), "[::1]");
    EXPECT_EQ(host_name("[::1]"), "[::1]");
    EXPECT_EQ(host_name("127.0.0.1:80"), "127.0.0.1");
    EXPECT_EQ(host_name(""), "");
}

TEST(NameTableTest, ExactNamesIgnoreCasePortAndTrailingDot) {
    name_table t;
    t.add("example.com", 1);
    t.add("Other.Example", 2);
    EXPECT_EQ(t.find("example.com"), 1U);
    EXPECT_EQ(t.find("EXAMPLE.com"), 1U);
    EXPECT_EQ(t.find("example.com:8443"), 1U);
    EXPECT_EQ(t.find("example.com."), 1U);
    EXPECT_EQ(t.find("Example.Com.:80"), 1U);
    EXPECT_EQ(t.find("other.example"), 2U);
    EXPECT_FALSE(t.find("www.example.com"));
    EXPECT_FALSE(t.find("example.co"));
    EXPECT_FALSE(t.find("xexample.com"));
    EXPECT_FALSE(t.find(""));
    EXPECT_FALSE(t.find(":8080"));
}

TEST(NameTableTest, WildcardMatchesOneLabelMore) {
    name_table t;
    t.add("*.example.com", 1);
    EXPECT_EQ(t.find("www.example.com"), 1U);
    EXPECT_EQ(t.find("API.Example.Com:8080"), 1U);
    EXPECT_EQ(t.find("a.example.com."), 1U);
    EXPECT_FALSE(t.find("example.com")); // the wildcard needs a label
    EXPECT_FALSE(t.find("a.b.example.com"));
    EXPECT_FALSE(t.find(".example.com"));
    EXPECT_FALSE(t.find("wwwexample.com"));
}

TEST(NameTableTest, ExactNameWinsOverWildcardAndFirstNameStays) {
    name_table t;
    t.add("*.example.com", 1);
    t.add("api.example.com", 2);
    t.add("API.example.com", 3); // the same name again: the first keeps it
    EXPECT_EQ(t.find("api.example.com"), 2U);
    EXPECT_EQ(t.find("www.example.com"), 1U);
}

TEST(NameTableTest, TooLongOrOddHostsNameNothing) {
    name_table t;
    t.add("*.example.com", 1);
    EXPECT_FALSE(t.find(std::string(300, 'a') + ".example.com"));
    EXPECT_FALSE(t.find("[::1]"));
    EXPECT_FALSE(t.find("."));
}

TEST(NameTableTest, Valid) {
    EXPECT_TRUE(name_table::valid("example.com"));
    EXPECT_TRUE(name_table::valid("*.example.com"));
    EXPECT_FALSE(name_table::valid("*"));
    EXPECT_FALSE(name_table::valid("a.*.com"));
    EXPECT_FALSE(name_table::valid("exa mple.com"));
    EXPECT_FALSE(name_table::valid(""));
}

/// A handler that only stands for a route (the router never calls it).
class named final : public handler {
public:
    void on_request(exchange&) override {}
};

request_head head(std::string host, std::string target) {
    request_head h;
    h.host = std::move(host);
    h.target = std::move(target);
    return h;
}

struct routed {
    router r;
    std::shared_ptr<handler> top_root = std::make_shared<named>();
    std::shared_ptr<handler> a_root = std::make_shared<named>();
    std::shared_ptr<handler> a_api = std::make_shared<named>();
    std::shared_ptr<handler> b_root = std::make_shared<named>();
    std::size_t a = 0, b = 0;

    routed() {
        r.add("/", top_root);
        a = r.add_site({"a.test", "*.a.test"});
        r.add(a, "/", a_root);
        r.add(a, "/api/", a_api);
        b = r.add_site({"b.test"});
        r.add(b, "/", b_root);
    }
    const handler* find(std::string host, std::string target) const {
        const router::route* route = r.find(head(std::move(host), std::move(target)));
        return route != nullptr ? route->target.get() : nullptr;
    }
};

TEST(SiteRouterTest, HostChoosesTheSiteThenPrefixTheRoute) {
    const routed t;
    EXPECT_EQ(t.find("a.test", "/"), t.a_root.get());
    EXPECT_EQ(t.find("a.test", "/api/x?q=1"), t.a_api.get());
    EXPECT_EQ(t.find("WWW.A.TEST.:8080", "/api/"), t.a_api.get());
    EXPECT_EQ(t.find("b.test:80", "/api/x"), t.b_root.get());
    EXPECT_EQ(t.find("c.test", "/api/x"), t.top_root.get()); // the default site
    EXPECT_EQ(t.find("", "/"), t.top_root.get());            // HTTP/1.0 without Host
    EXPECT_EQ(t.r.site_of("b.test"), t.b);
    EXPECT_FALSE(t.r.site_of("c.test"));
    EXPECT_EQ(t.r.routes().size(), 4U); // every route of every site, for a stop
}

TEST(SiteRouterTest, DefaultSiteCanBeANamedOne) {
    routed t;
    t.r.set_default_site(t.b);
    EXPECT_EQ(t.find("c.test", "/"), t.b_root.get());
    EXPECT_EQ(t.find("a.test", "/"), t.a_root.get());
}

TEST(SiteRouterTest, ADefaultSiteWithoutNamesTakesEverything) {
    router r;
    auto top = std::make_shared<named>();
    auto only = std::make_shared<named>();
    r.add("/", top);
    const std::size_t s = r.add_site({});
    r.add(s, "/", only);
    r.set_default_site(s);
    EXPECT_EQ(r.find(head("a.test", "/x"))->target.get(), only.get());
    EXPECT_EQ(r.find("/x")->target.get(), only.get());
}

TEST(SiteRouterTest, UnknownHostAnswerTakesUnnamedHosts) {
    routed t;
    auto refuse = std::make_shared<named>();
    route_stats stats;
    t.r.set_unknown_host(refuse, &stats);
    const router::route* r = t.r.find(head("c.test", "/api/"));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->target.get(), refuse.get());
    EXPECT_EQ(r->stats, &stats);
    EXPECT_EQ(t.find("a.test", "/"), t.a_root.get());
}

TEST(SiteRouterTest, WithoutSitesTheHostIsNotLookedAt) {
    router r;
    auto root = std::make_shared<named>();
    auto api = std::make_shared<named>();
    r.add("/", root);
    r.add("/api/", api);
    EXPECT_EQ(r.find(head("anything", "/api/1"))->target.get(), api.get());
    EXPECT_EQ(r.find(head("", "/x"))->target.get(), root.get());
    EXPECT_EQ(r.find("/api/1")->target.get(), api.get());
}

TEST(SiteRouterTest, ASiteWithoutRootFindsNothingOutsideItsPrefixes) {
    router r;
    const std::size_t s = r.add_site({"a.test"});
    r.add(s, "/api/", std::make_shared<named>());
    EXPECT_NE(r.find(head("a.test", "/api/x")), nullptr);
    EXPECT_EQ(r.find(head("a.test", "/x")), nullptr);
}

TEST(RedirectTest, ExpandsPlaceholders) {
    EXPECT_EQ(redirect_handler::expand("https://{host}{uri}", false, "example.com", "/a?b=1"),
              "https://example.com/a?b=1");
    EXPECT_EQ(redirect_handler::expand("{scheme}://www.{host}{uri}", true, "example.com", "/"),
              "https://www.example.com/");
    EXPECT_EQ(redirect_handler::expand("{scheme}://x{uri}", false, "h", "/p"), "http://x/p");
    EXPECT_EQ(redirect_handler::expand("https://example.com/", false, "h", "/p"),
              "https://example.com/");
    EXPECT_EQ(redirect_handler::expand("https://x/{other}", false, "h", "/p"), "https://x/{other}");
    EXPECT_EQ(redirect_handler::expand("", false, "h", "/p"), "");
}

} // namespace
} // namespace tarry::http

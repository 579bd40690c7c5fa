#include <tarry/h2/request_checks.hpp>

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>
#include <utility>

namespace h2 = tarry::h2;

namespace {

TEST(RequestChecks, NamesAsRfc9113Says) {
    EXPECT_TRUE(h2::valid_field_name("accept-encoding"));
    EXPECT_TRUE(h2::valid_field_name(":path"));
    EXPECT_FALSE(h2::valid_field_name(""));
    EXPECT_FALSE(h2::valid_field_name("Accept"));
    EXPECT_FALSE(h2::valid_field_name("a b"));
    EXPECT_FALSE(h2::valid_field_name("a:b"));
    EXPECT_FALSE(h2::valid_field_name("caf\xc3\xa9"));
    EXPECT_FALSE(h2::valid_field_name(std::string_view("a\0", 2)));
}

TEST(RequestChecks, ValuesAsRfc9113Says) {
    EXPECT_TRUE(h2::valid_field_value(""));
    EXPECT_TRUE(h2::valid_field_value("a b\tc"));
    EXPECT_TRUE(h2::valid_field_value("obs-text \xff"));
    EXPECT_FALSE(h2::valid_field_value("a\r"));
    EXPECT_FALSE(h2::valid_field_value(std::string_view("a\0b", 3)));
    EXPECT_FALSE(h2::valid_field_value("\tb"));
    EXPECT_FALSE(h2::valid_field_value("b "));
}

TEST(RequestChecks, ARequestAndItsPseudoFields) {
    h2::request_checks c;
    EXPECT_TRUE(c.field(":method", "GET"));
    EXPECT_TRUE(c.field(":scheme", "https"));
    EXPECT_TRUE(c.field(":path", "/a"));
    EXPECT_TRUE(c.field(":authority", "x"));
    EXPECT_TRUE(c.field("content-length", "12"));
    EXPECT_TRUE(c.field("content-length", "12")); // the same value again
    EXPECT_TRUE(c.finish());
    EXPECT_EQ(c.method, "GET");
    EXPECT_EQ(c.path, "/a");
    EXPECT_EQ(c.content_length, 12);
}

TEST(RequestChecks, DifferingContentLengthsAreMalformed) {
    h2::request_checks c;
    c.field(":method", "POST");
    c.field("content-length", "1");
    EXPECT_FALSE(c.field("content-length", "2"));
    EXPECT_TRUE(c.malformed());
    EXPECT_FALSE(c.finish());
}

TEST(RequestChecks, TrailersHaveNoPseudoFields) {
    h2::request_checks t(true);
    EXPECT_TRUE(t.field("x-sum", "1"));
    EXPECT_TRUE(t.finish());
    h2::request_checks u(true);
    EXPECT_FALSE(u.field(":path", "/"));
}

TEST(RequestChecks, ProtocolIsKnownOnlyWhenEnabled) {
    h2::request_checks off;
    EXPECT_FALSE(off.field(":protocol", "websocket"));
    h2::request_checks on(false, true);
    EXPECT_TRUE(on.field(":method", "CONNECT"));
    EXPECT_TRUE(on.field(":protocol", "websocket"));
    EXPECT_TRUE(on.field(":scheme", "https"));
    EXPECT_TRUE(on.field(":path", "/chat"));
    EXPECT_TRUE(on.field(":authority", "a"));
    EXPECT_TRUE(on.finish());
    h2::request_checks get(false, true);
    get.field(":method", "GET");
    get.field(":protocol", "websocket");
    get.field(":scheme", "https");
    get.field(":path", "/");
    EXPECT_FALSE(get.finish());
}

// RFC 8441, 4 and 5: the extended CONNECT's pseudo-fields.

h2::request_checks extended(std::initializer_list<std::pair<std::string_view, std::string_view>> f,
                            bool enabled = true) {
    h2::request_checks c(false, enabled);
    for (const auto& [name, value] : f)
        c.field(name, value);
    return c;
}

TEST(RequestChecks, ExtendedConnectNeedsAllFourPseudoFields) {
    auto ok = extended({{":method", "CONNECT"},
                        {":protocol", "websocket"},
                        {":scheme", "http"},
                        {":path", "/ws?room=1"},
                        {":authority", "a.example"},
                        {"sec-websocket-version", "13"},
                        {"sec-websocket-protocol", "chat"}});
    EXPECT_TRUE(ok.finish());
    EXPECT_EQ(ok.protocol, "websocket");
    EXPECT_EQ(ok.path, "/ws?room=1");
    EXPECT_FALSE(extended({{":method", "CONNECT"},
                           {":protocol", "websocket"},
                           {":path", "/"},
                           {":authority", "a"}})
                     .finish()); // no :scheme
    EXPECT_FALSE(extended({{":method", "CONNECT"},
                           {":protocol", "websocket"},
                           {":scheme", "https"},
                           {":authority", "a"}})
                     .finish()); // no :path
    EXPECT_FALSE(extended({{":method", "CONNECT"},
                           {":protocol", "websocket"},
                           {":scheme", "https"},
                           {":path", "/"}})
                     .finish()); // no :authority
    EXPECT_FALSE(extended({{":method", "CONNECT"},
                           {":protocol", "websocket"},
                           {":scheme", "https"},
                           {":path", ""},
                           {":authority", "a"}})
                     .finish()); // an empty :path
    EXPECT_FALSE(extended({{":method", "CONNECT"},
                           {":protocol", ""},
                           {":scheme", "https"},
                           {":path", "/"},
                           {":authority", "a"}})
                     .finish()); // an empty :protocol
}

TEST(RequestChecks, ProtocolOnlyWithConnect) {
    for (std::string_view method : {"GET", "POST", "OPTIONS"}) {
        auto c = extended({{":method", method},
                           {":protocol", "websocket"},
                           {":scheme", "https"},
                           {":path", "/"},
                           {":authority", "a"}});
        EXPECT_FALSE(c.finish()) << method;
    }
}

TEST(RequestChecks, ProtocolTwiceOrAfterARegularFieldIsMalformed) {
    auto twice =
        extended({{":method", "CONNECT"}, {":protocol", "websocket"}, {":protocol", "websocket"}});
    EXPECT_TRUE(twice.malformed());
    auto late = extended({{":method", "CONNECT"},
                          {":scheme", "https"},
                          {":path", "/"},
                          {":authority", "a"},
                          {"sec-websocket-version", "13"},
                          {":protocol", "websocket"}});
    EXPECT_TRUE(late.malformed());
    h2::request_checks trailers(true, true);
    EXPECT_FALSE(trailers.field(":protocol", "websocket"));
}

TEST(RequestChecks, ProtocolWithoutTheSettingIsUnknown) {
    auto c = extended({{":method", "CONNECT"},
                       {":protocol", "websocket"},
                       {":scheme", "https"},
                       {":path", "/"},
                       {":authority", "a"}},
                      false);
    EXPECT_TRUE(c.malformed());
}

TEST(RequestChecks, PlainConnectIsUnchangedWhenEnabled) {
    auto plain = extended({{":method", "CONNECT"}, {":authority", "a.example:443"}});
    EXPECT_TRUE(plain.finish());
    EXPECT_TRUE(plain.protocol.empty());
    EXPECT_FALSE(
        extended({{":method", "CONNECT"}, {":authority", "a:443"}, {":path", "/"}}).finish());
    EXPECT_FALSE(
        extended({{":method", "CONNECT"}, {":authority", "a:443"}, {":scheme", "https"}}).finish());
}

TEST(RequestChecks, ExtendedConnectAuthorityAndHostAgree) {
    EXPECT_FALSE(extended({{":method", "CONNECT"},
                           {":protocol", "websocket"},
                           {":scheme", "https"},
                           {":path", "/"},
                           {":authority", "a"},
                           {"host", "b"}})
                     .finish());
}

} // namespace

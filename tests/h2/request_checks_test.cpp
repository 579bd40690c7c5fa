#include <tarry/h2/request_checks.hpp>

#include <gtest/gtest.h>

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

} // namespace

#include <tarry/http/conditional.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tarry::http::test {
namespace {

constexpr std::int64_t sunday = 784111777; // Sun, 06 Nov 1994 08:49:37 GMT
const std::string etag = "\"2eb-c-4d2\"";

TEST(HttpDateTest, FormatsImfFixdate) {
    std::string s;
    append_http_date(s, sunday);
    EXPECT_EQ(s, "Sun, 06 Nov 1994 08:49:37 GMT");
    s.clear();
    append_http_date(s, 0);
    EXPECT_EQ(s, "Thu, 01 Jan 1970 00:00:00 GMT");
}

TEST(HttpDateTest, ParsesTheThreeForms) {
    EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), sunday);
    EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), sunday);
    EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), sunday);
    EXPECT_EQ(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    EXPECT_EQ(parse_http_date("Tue, 29 Feb 2028 23:59:59 GMT"), 1835481599);
}

TEST(HttpDateTest, RoundTrips) {
    for (const std::int64_t t : {std::int64_t{0}, sunday, std::int64_t{951782400},
                                 std::int64_t{1700000000}, std::int64_t{4102444799}}) {
        std::string s;
        append_http_date(s, t);
        EXPECT_EQ(parse_http_date(s), t) << s;
    }
}

TEST(HttpDateTest, RejectsWhatIsNoDate) {
    for (const auto* bad :
         {"", "yesterday", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
          "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
          "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT x", "1994-11-06",
          "Sun, 32 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT"}) {
        EXPECT_FALSE(parse_http_date(bad)) << bad;
    }
}

TEST(EtagTest, MtimeSizeInodeInHex) {
    EXPECT_EQ(make_etag(0x2eb, 12, 1234), etag);
    EXPECT_NE(make_etag(0x2eb, 12, 1235), etag);
}

TEST(EtagTest, StrongAndWeakComparison) {
    EXPECT_TRUE(etag_list_matches(etag, etag, false));
    EXPECT_TRUE(etag_list_matches("*", etag, false));
    EXPECT_TRUE(etag_list_matches(" * ", etag, true));
    EXPECT_TRUE(etag_list_matches("\"x\", " + etag, etag, false));
    EXPECT_TRUE(etag_list_matches("\"x\",," + etag + " ,\"y\"", etag, true));
    EXPECT_FALSE(etag_list_matches("\"x\", \"y\"", etag, true));
    // A weak tag matches only weakly.
    EXPECT_TRUE(etag_list_matches("W/" + etag, etag, true));
    EXPECT_FALSE(etag_list_matches("W/" + etag, etag, false));
    // Unquoted or half-quoted items are no entity tags.
    EXPECT_FALSE(etag_list_matches("2eb-c-4d2", etag, true));
    EXPECT_FALSE(etag_list_matches("\"2eb-c-4d2", etag, true));
    EXPECT_FALSE(etag_list_matches("", etag, true));
}

request_conditions with(std::string_view header) {
    return request_conditions::from_header(header);
}

std::string header(std::string_view fields) {
    return "GET / HTTP/1.1\r\nHost: x\r\n" + std::string(fields) + "\r\n";
}

TEST(ConditionsTest, ReadsFieldsAndJoinsListLines) {
    const std::string h = header("if-none-match: \"a\"\r\nIf-Modified-Since: Sun, 06 Nov 1994 "
                                 "08:49:37 GMT\r\nIF-NONE-MATCH: \"b\"\r\nRange: bytes=0-1\r\n"
                                 "If-Range: \"c\"\r\nAccept-Encoding: gzip\r\n");
    const request_conditions c = with(h);
    ASSERT_TRUE(c.if_none_match);
    EXPECT_EQ(*c.if_none_match, "\"a\", \"b\"");
    EXPECT_FALSE(c.if_match);
    EXPECT_EQ(c.if_modified_since, "Sun, 06 Nov 1994 08:49:37 GMT");
    EXPECT_EQ(c.range, "bytes=0-1");
    EXPECT_EQ(c.if_range, "\"c\"");
    EXPECT_EQ(c.accept_encoding, "gzip");
}

precondition_result eval(std::string_view fields, bool get_or_head = true) {
    const std::string h = header(fields);
    return evaluate_preconditions(with(h), get_or_head, etag, sunday);
}

constexpr auto proceed = precondition_result::proceed;
constexpr auto not_modified = precondition_result::not_modified;
constexpr auto failed = precondition_result::failed;

TEST(PreconditionsTest, NoConditionsProceed) {
    EXPECT_EQ(eval(""), proceed);
}

TEST(PreconditionsTest, IfMatch) {
    EXPECT_EQ(eval("If-Match: " + etag + "\r\n"), proceed);
    EXPECT_EQ(eval("If-Match: *\r\n"), proceed);
    EXPECT_EQ(eval("If-Match: \"other\"\r\n"), failed);
    EXPECT_EQ(eval("If-Match: W/" + etag + "\r\n"), failed); // strong comparison
    EXPECT_EQ(eval("If-Match: \"a\"\r\nIf-Match: " + etag + "\r\n"), proceed);
}

TEST(PreconditionsTest, IfUnmodifiedSince) {
    EXPECT_EQ(eval("If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"), proceed);
    EXPECT_EQ(eval("If-Unmodified-Since: Sun, 06 Nov 1994 08:49:36 GMT\r\n"), failed);
    EXPECT_EQ(eval("If-Unmodified-Since: garbage\r\n"), proceed);
    // If-Match present: If-Unmodified-Since is not evaluated.
    EXPECT_EQ(eval("If-Match: *\r\nIf-Unmodified-Since: Sun, 06 Nov 1994 08:49:36 GMT\r\n"),
              proceed);
}

TEST(PreconditionsTest, IfNoneMatch) {
    EXPECT_EQ(eval("If-None-Match: " + etag + "\r\n"), not_modified);
    EXPECT_EQ(eval("If-None-Match: W/" + etag + "\r\n"), not_modified); // weak comparison
    EXPECT_EQ(eval("If-None-Match: \"x\", " + etag + "\r\n"), not_modified);
    EXPECT_EQ(eval("If-None-Match: *\r\n"), not_modified);
    EXPECT_EQ(eval("If-None-Match: \"x\"\r\n"), proceed);
    EXPECT_EQ(eval("If-None-Match: " + etag + "\r\n", false), failed); // not GET or HEAD
}

TEST(PreconditionsTest, IfModifiedSince) {
    EXPECT_EQ(eval("If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"), not_modified);
    EXPECT_EQ(eval("If-Modified-Since: Mon, 07 Nov 1994 08:49:37 GMT\r\n"), not_modified);
    EXPECT_EQ(eval("If-Modified-Since: Sun, 06 Nov 1994 08:49:36 GMT\r\n"), proceed);
    EXPECT_EQ(eval("If-Modified-Since: not a date\r\n"), proceed);
    EXPECT_EQ(eval("If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", false), proceed);
}

TEST(PreconditionsTest, Precedence) {
    // If-Match fails before If-None-Match is looked at.
    EXPECT_EQ(eval("If-Match: \"x\"\r\nIf-None-Match: " + etag + "\r\n"), failed);
    // If-None-Match decides; If-Modified-Since is then ignored, whichever way it would go.
    EXPECT_EQ(eval("If-None-Match: \"x\"\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"),
              proceed);
    EXPECT_EQ(
        eval("If-None-Match: " + etag + "\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:36 GMT\r\n"),
        not_modified);
    // If-Unmodified-Since fails before If-None-Match's 304.
    EXPECT_EQ(eval("If-Unmodified-Since: Sun, 06 Nov 1994 08:49:36 GMT\r\nIf-None-Match: " + etag +
                   "\r\n"),
              failed);
}

TEST(IfRangeTest, StrongEtagOrExactDate) {
    EXPECT_TRUE(if_range_allows("", etag, sunday));
    EXPECT_TRUE(if_range_allows(etag, etag, sunday));
    EXPECT_FALSE(if_range_allows("\"stale\"", etag, sunday));
    EXPECT_FALSE(if_range_allows("W/" + etag, etag, sunday));
    EXPECT_TRUE(if_range_allows("Sun, 06 Nov 1994 08:49:37 GMT", etag, sunday));
    EXPECT_FALSE(if_range_allows("Sun, 06 Nov 1994 08:49:38 GMT", etag, sunday));
    EXPECT_FALSE(if_range_allows("Sun, 06 Nov 1994 08:49:36 GMT", etag, sunday));
    EXPECT_FALSE(if_range_allows("garbage", etag, sunday));
}

} // namespace
} // namespace tarry::http::test

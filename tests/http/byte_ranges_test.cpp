#include <tarry/http/accept_encoding.hpp>
#include <tarry/http/byte_ranges.hpp>
#include <tarry/http/mime_types.hpp>

#include <gtest/gtest.h>

namespace tarry::http::test {
namespace {

using kind = byte_range_request::kind;

void expect_single(std::string_view value, std::uint64_t length, std::uint64_t first,
                   std::uint64_t count) {
    const byte_range_request r = parse_byte_ranges(value, length);
    EXPECT_EQ(r.what, kind::single) << value;
    EXPECT_EQ(r.first, first) << value;
    EXPECT_EQ(r.count, count) << value;
}

kind what(std::string_view value, std::uint64_t length) {
    return parse_byte_ranges(value, length).what;
}

TEST(ByteRangesTest, TheThreeForms) {
    expect_single("bytes=0-499", 1000, 0, 500);
    expect_single("bytes=500-999", 1000, 500, 500);
    expect_single("bytes=500-", 1000, 500, 500);
    expect_single("bytes=-200", 1000, 800, 200);
    expect_single("bytes=0-0", 1000, 0, 1);
    expect_single("bytes=999-999", 1000, 999, 1);
}

TEST(ByteRangesTest, ClampedToTheLength) {
    expect_single("bytes=500-5000", 1000, 500, 500);
    expect_single("bytes=-5000", 1000, 0, 1000);
    expect_single("bytes=0-18446744073709551615", 10, 0, 10);
}

TEST(ByteRangesTest, WhitespaceAndUnitCase) {
    expect_single(" bytes=1-2 ", 10, 1, 2);
    expect_single("Bytes=1-2", 10, 1, 2);
    expect_single("bytes= 1-2 ,", 10, 1, 2);
}

TEST(ByteRangesTest, Unsatisfiable) {
    EXPECT_EQ(what("bytes=1000-", 1000), kind::unsatisfiable);
    EXPECT_EQ(what("bytes=1000-2000", 1000), kind::unsatisfiable);
    EXPECT_EQ(what("bytes=-0", 1000), kind::unsatisfiable);
    EXPECT_EQ(what("bytes=0-", 0), kind::unsatisfiable);
    EXPECT_EQ(what("bytes=-5", 0), kind::unsatisfiable);
    EXPECT_EQ(what("bytes=2000-3000, 5000-", 1000), kind::unsatisfiable);
}

TEST(ByteRangesTest, MalformedIsNone) {
    for (const auto* bad :
         {"", "bytes", "bytes=", "bytes=,", "items=0-1", "bytes 0-1", "bytes=a-b", "bytes=5-1",
          "bytes=1", "bytes=--1", "bytes=+1-2", "bytes=1-+2", "bytes=0-1 2",
          "bytes=99999999999999999999-", "bytes=0x10-20", "bytes=1-2;x"}) {
        EXPECT_EQ(what(bad, 1000), kind::none) << bad;
    }
}

TEST(ByteRangesTest, SeveralRanges) {
    const byte_range_request r = parse_byte_ranges("bytes=0-1, 5-9", 100);
    EXPECT_EQ(r.what, kind::multiple);
    EXPECT_EQ(what("bytes=0-1,2000-3000", 100), kind::multiple);
    // Past the limit, the field is ignored rather than worked through.
    std::string many = "bytes=0-0";
    for (std::size_t i = 1; i < max_byte_ranges; ++i)
        many += "," + std::to_string(i) + "-" + std::to_string(i);
    EXPECT_EQ(what(many, 1000), kind::multiple);
    many += ",99-99";
    EXPECT_EQ(what(many, 1000), kind::none);
}

TEST(AcceptEncodingTest, CodingsAndQvalues) {
    auto a = parse_accept_encoding("gzip, deflate, br");
    EXPECT_EQ(a.br, 1000U);
    EXPECT_EQ(a.gzip, 1000U);
    a = parse_accept_encoding("gzip;q=0.8, br;q=0.5");
    EXPECT_EQ(a.br, 500U);
    EXPECT_EQ(a.gzip, 800U);
    a = parse_accept_encoding("br;q=0, GZIP ; Q=0.125");
    EXPECT_EQ(a.br, 0U);
    EXPECT_EQ(a.gzip, 125U);
    a = parse_accept_encoding("*;q=0.3, gzip;q=0");
    EXPECT_EQ(a.br, 300U);
    EXPECT_EQ(a.gzip, 0U);
    a = parse_accept_encoding("identity");
    EXPECT_EQ(a.br, 0U);
    EXPECT_EQ(a.gzip, 0U);
    a = parse_accept_encoding("");
    EXPECT_EQ(a.br, 0U);
    EXPECT_EQ(a.gzip, 0U);
    a = parse_accept_encoding("x-gzip");
    EXPECT_EQ(a.gzip, 1000U);
    // A malformed qvalue drops its item.
    a = parse_accept_encoding("gzip;q=2, br;q=x");
    EXPECT_EQ(a.br, 0U);
    EXPECT_EQ(a.gzip, 0U);
}

TEST(AcceptEncodingTest, ChoosesBrOnATieAndHonoursQvalues) {
    const accepted_codings both{1000, 1000};
    EXPECT_EQ(choose_coding(both, true, true), coding::br);
    EXPECT_EQ(choose_coding(both, false, true), coding::gzip);
    EXPECT_EQ(choose_coding(both, true, false), coding::br);
    EXPECT_EQ(choose_coding(both, false, false), coding::identity);
    EXPECT_EQ(choose_coding({500, 800}, true, true), coding::gzip);
    EXPECT_EQ(choose_coding({0, 0}, true, true), coding::identity);
    EXPECT_EQ(choose_coding({0, 1000}, true, false), coding::identity);
}

TEST(MimeTypesTest, CommonWebAssets) {
    EXPECT_EQ(mime_type("a.avif"), "image/avif");
    EXPECT_EQ(mime_type("a.woff"), "font/woff");
    EXPECT_EQ(mime_type("a.mp4"), "video/mp4");
    EXPECT_EQ(mime_type("a.webm"), "video/webm");
    EXPECT_EQ(mime_type("site.webmanifest"), "application/manifest+json");
    EXPECT_EQ(mime_type("a.csv"), "text/csv; charset=utf-8");
    EXPECT_EQ(mime_type("A.MP4"), "video/mp4");
    EXPECT_EQ(mime_type("a.toolongextension"), "application/octet-stream");
}

} // namespace
} // namespace tarry::http::test

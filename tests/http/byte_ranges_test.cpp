#include <tarry/http/byte_ranges.hpp>

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

} // namespace
} // namespace tarry::http::test

#include <tarry/http/accept_encoding.hpp>

#include <gtest/gtest.h>

namespace tarry::http::test {
namespace {

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

} // namespace
} // namespace tarry::http::test

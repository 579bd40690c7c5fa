#include <tarry/http/hop_by_hop.hpp>

#include <gtest/gtest.h>

namespace tarry::http {
namespace {

TEST(HopByHopTest, TheFieldsOfRfc9110AndTheFramingAreHopByHopInAnyCase) {
    for (const char* name : {"Connection", "keep-alive", "TE", "Trailer", "Transfer-Encoding",
                             "UPGRADE", "Proxy-Connection", "Content-Length", "Expect"})
        EXPECT_TRUE(hop_by_hop(name)) << name;
    for (const char* name : {"Host", "Content-Type", "X-Upgrade", "Connections", ""})
        EXPECT_FALSE(hop_by_hop(name)) << name;
}

TEST(HopByHopTest, AFieldListedInConnectionIsHopByHop) {
    EXPECT_TRUE(listed_in("close, X-Hop", "x-hop"));
    EXPECT_TRUE(listed_in(" X-Hop\t,close", "X-Hop"));
    EXPECT_FALSE(listed_in("close, X-Hop2", "X-Hop"));
    EXPECT_FALSE(listed_in("", "X-Hop"));
}

TEST(HopByHopTest, KeepAliveTimeoutReadsTheHint) {
    EXPECT_EQ(keep_alive_timeout("timeout=5"), 5);
    EXPECT_EQ(keep_alive_timeout("max=100, timeout=65"), 65);
    EXPECT_EQ(keep_alive_timeout("max=100"), -1);
    EXPECT_EQ(keep_alive_timeout("timeout=x"), -1);
}

} // namespace
} // namespace tarry::http

#include <tarry/http/date_cache.hpp>

#include <gtest/gtest.h>

#include <ctime>

namespace tarry::http::test {
namespace {

TEST(DateCacheTest, StartsWithTheCurrentSecond) {
    const std::time_t before = std::time(nullptr);
    const date_cache d;
    const std::time_t after = std::time(nullptr);
    EXPECT_GE(d.second(), before);
    EXPECT_LE(d.second(), after);
    EXPECT_EQ(d.refreshes(), 1U);
    EXPECT_EQ(d.value().size(), date_cache::length);
    EXPECT_EQ(d.value().substr(d.value().size() - 4), " GMT");
}

TEST(DateCacheTest, Epoch) {
    date_cache d;
    EXPECT_TRUE(d.update(0));
    EXPECT_EQ(d.value(), "Thu, 01 Jan 1970 00:00:00 GMT");
    EXPECT_EQ(d.second(), 0);
}

TEST(DateCacheTest, KnownTimestamps) {
    date_cache d;
    EXPECT_TRUE(d.update(784111777));
    EXPECT_EQ(d.value(), "Sun, 06 Nov 1994 08:49:37 GMT"); // RFC 9110, 5.6.7
    EXPECT_TRUE(d.update(951782400));
    EXPECT_EQ(d.value(), "Tue, 29 Feb 2000 00:00:00 GMT");
    EXPECT_TRUE(d.update(1703980799));
    EXPECT_EQ(d.value(), "Sat, 30 Dec 2023 23:59:59 GMT");
    EXPECT_TRUE(d.update(4102444800));
    EXPECT_EQ(d.value(), "Fri, 01 Jan 2100 00:00:00 GMT");
    EXPECT_EQ(d.value().size(), date_cache::length);
}

TEST(DateCacheTest, SameSecondIsNoRefresh) {
    date_cache d;
    ASSERT_TRUE(d.update(784111777));
    const auto refreshes = d.refreshes();
    EXPECT_FALSE(d.update(784111777));
    EXPECT_EQ(d.refreshes(), refreshes);
    EXPECT_EQ(d.value(), "Sun, 06 Nov 1994 08:49:37 GMT");

    EXPECT_TRUE(d.update(784111778));
    EXPECT_EQ(d.refreshes(), refreshes + 1);
    EXPECT_EQ(d.value(), "Sun, 06 Nov 1994 08:49:38 GMT");

    // Going back is a change too (a clock step): reformatted.
    EXPECT_TRUE(d.update(784111777));
    EXPECT_EQ(d.refreshes(), refreshes + 2);
    EXPECT_EQ(d.value(), "Sun, 06 Nov 1994 08:49:37 GMT");
}

} // namespace
} // namespace tarry::http::test

#include <tarry/http/date_clock.hpp>

#include <chrono>

namespace tarry::http::test {
namespace {

using namespace std::chrono_literals;

TEST(DateClockTest, HeldItTicksReleasedItLeavesNoPendingTimer) {
    boost::asio::io_context io;
    date_clock clock(io);
    clock.hold();
    EXPECT_TRUE(clock.armed());
    const auto refreshed = clock.cache().refreshes();
    io.run_for(1500ms); // at least one second boundary passes while held
    EXPECT_GT(clock.cache().refreshes(), refreshed);
    EXPECT_EQ(clock.value().size(), date_cache::length);
    clock.release();
    EXPECT_FALSE(clock.armed());
    io.restart();
    io.run_for(10s); // returns at once: nothing is pending
    EXPECT_TRUE(io.stopped());
    clock.hold(); // and it comes back
    EXPECT_TRUE(clock.armed());
    clock.stop();
}

} // namespace
} // namespace tarry::http::test

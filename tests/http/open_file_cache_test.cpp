#include <tarry/http/open_file_cache.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

namespace tarry::http::test {
namespace {

using namespace std::chrono_literals;
using clock = open_file_cache::clock;

open_file entry(clock::time_point opened, std::uint64_t size = 1) {
    open_file e;
    e.plain.file.status = 200;
    e.plain.file.size = size;
    e.plain.file.fd = unique_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    e.opened = opened;
    return e;
}

TEST(OpenFileCacheTest, HitUntilItExpires) {
    open_file_cache cache(10, 1s);
    const clock::time_point t0{};
    EXPECT_EQ(cache.find("/a", t0), nullptr);
    cache.insert("/a", entry(t0, 7));
    open_file* hit = cache.find("/a", t0 + 999ms);
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(hit->plain.file.size, 7U);
    EXPECT_TRUE(hit->plain.file.fd);
    EXPECT_EQ(cache.find("/a", t0 + 1s), nullptr); // expired: dropped, its descriptor closed
    EXPECT_EQ(cache.size(), 0U);
}

TEST(OpenFileCacheTest, InsertReplaces) {
    open_file_cache cache(10, 1s);
    const clock::time_point t0{};
    cache.insert("/a", entry(t0, 1));
    cache.insert("/a", entry(t0, 2));
    EXPECT_EQ(cache.size(), 1U);
    EXPECT_EQ(cache.find("/a", t0)->plain.file.size, 2U);
}

TEST(OpenFileCacheTest, BoundedDroppingExpiredFirst) {
    open_file_cache cache(3, 1s);
    const clock::time_point t0{};
    cache.insert("/old", entry(t0));
    cache.insert("/b", entry(t0 + 900ms));
    cache.insert("/c", entry(t0 + 900ms));
    cache.insert("/d", entry(t0 + 1100ms)); // /old has expired: it goes
    EXPECT_EQ(cache.size(), 3U);
    EXPECT_EQ(cache.find("/old", t0 + 1100ms), nullptr);
    EXPECT_NE(cache.find("/b", t0 + 1100ms), nullptr);
    cache.insert("/e", entry(t0 + 1200ms)); // none expired: one goes anyway
    EXPECT_EQ(cache.size(), 3U);
    EXPECT_NE(cache.find("/e", t0 + 1200ms), nullptr);
    cache.clear();
    EXPECT_EQ(cache.size(), 0U);
}

TEST(OpenFileCacheTest, DisabledByZero) {
    EXPECT_FALSE(open_file_cache(0, 1s).enabled());
    EXPECT_FALSE(open_file_cache(10, 0s).enabled());
    EXPECT_TRUE(open_file_cache(10, 1ms).enabled());
}

} // namespace
} // namespace tarry::http::test

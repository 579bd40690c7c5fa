// The registry on a manual clock: its timers exist but the io_context never runs, and expiry is
// driven through expire_due(), the same per-list routine the timers call.
#include "manual_clock.hpp"

#include <tarry/timeouts/timeout_registry.hpp>
#include <tarry/timeouts/timer_list.hpp> // detail::fault_injection

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <new>

namespace tarry::timeouts::test {
namespace {

class TimeoutRegistryTest : public ::testing::Test {
protected:
    boost::asio::io_context io;
    manual_clock clk;
    std::vector<int> log;
    std::deque<probe> probes;
    std::unique_ptr<timeout_registry> reg = std::make_unique<timeout_registry>(io);

    probe& enroll(int id, clock::duration d) {
        probe& p = probes.emplace_back(log, id);
        reg->enroll(p.entry, d, clk.now);
        return p;
    }
};

TEST_F(TimeoutRegistryTest, SeveralDurationsAtOnce) {
    enroll(1, 300ms);
    enroll(2, 100ms);
    enroll(3, 200ms);
    enroll(4, 100ms);
    EXPECT_EQ(reg->list_count(), 3U);
    clk.advance(100ms);
    EXPECT_EQ(reg->expire_due(clk.now), 2U);
    EXPECT_EQ(log, (std::vector<int>{2, 4}));
    clk.advance(100ms);
    reg->expire_due(clk.now);
    clk.advance(100ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(log, (std::vector<int>{2, 4, 3, 1}));
}

TEST_F(TimeoutRegistryTest, EnrollMovesAnEntryBetweenDurations) {
    probe& p = enroll(1, 100ms);
    enroll(2, 100ms);
    clk.advance(50ms);
    reg->enroll(p.entry, 500ms, clk.now); // e.g. headers done, now reading a body
    EXPECT_EQ(p.entry.list(), reg->find(500ms));
    EXPECT_EQ(p.entry.idle_timeout(), 500ms);
    EXPECT_EQ(reg->find(100ms)->size(), 1U);
    clk.advance(50ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(log, (std::vector<int>{2}));
    clk.advance(449ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(log, (std::vector<int>{2}));
    clk.advance(1ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(log, (std::vector<int>{2, 1}));
}

TEST_F(TimeoutRegistryTest, EnrollInTheSameDurationIsATouch) {
    probe& p = enroll(1, 100ms);
    enroll(2, 100ms);
    clk.advance(60ms);
    reg->enroll(p.entry, 100ms, clk.now);
    EXPECT_EQ(reg->find(100ms)->back(), &p.entry);
    EXPECT_EQ(reg->find(100ms)->size(), 2U);
}

TEST_F(TimeoutRegistryTest, TouchAndUnenrollThroughTheRegistry) {
    probe& a = enroll(1, 100ms);
    probe& b = enroll(2, 100ms);
    clk.advance(80ms);
    timeout_registry::touch(a.entry, clk.now);
    timeout_registry::unenroll(b.entry);
    timeout_registry::unenroll(b.entry);       // twice is harmless
    timeout_registry::touch(b.entry, clk.now); // unenrolled: no effect
    EXPECT_FALSE(b.entry.enrolled());
    clk.advance(20ms);
    EXPECT_EQ(reg->expire_due(clk.now), 0U);
    clk.advance(80ms);
    EXPECT_EQ(reg->expire_due(clk.now), 1U);
    EXPECT_EQ(log, (std::vector<int>{1}));
}

TEST_F(TimeoutRegistryTest, DestroyingAnEnrolledEntryUnlinksIt) {
    {
        probe p(log, 1);
        reg->enroll(p.entry, 100ms, clk.now);
        EXPECT_EQ(reg->find(100ms)->size(), 1U);
    }
    EXPECT_EQ(reg->find(100ms)->size(), 0U);
    clk.advance(1s);
    EXPECT_EQ(reg->expire_due(clk.now), 0U);
}

TEST_F(TimeoutRegistryTest, DestroyingTheRegistryFirstDetachesEntries) {
    probe& p = enroll(1, 100ms);
    probe& q = enroll(2, 200ms);
    reg.reset();
    EXPECT_FALSE(p.entry.enrolled());
    EXPECT_FALSE(q.entry.enrolled());
    io.run(); // cancelled waits complete against detached lists, harmlessly
    EXPECT_TRUE(log.empty());
}

struct bouncer {
    timeout_registry* reg;
    manual_clock* clk;
    int fired = 0;
    idle_entry entry{&on_expire, this};
    static void on_expire(void* self) noexcept {
        auto* b = static_cast<bouncer*>(self);
        // First expiry moves it to a longer phase; the second lets it go.
        if (++b->fired == 1) b->reg->enroll(b->entry, 300ms, b->clk->now);
    }
};

TEST_F(TimeoutRegistryTest, CallbackMayReenrollIntoAnotherDuration) {
    bouncer b{reg.get(), &clk};
    reg->enroll(b.entry, 100ms, clk.now);
    clk.advance(100ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(b.fired, 1);
    EXPECT_EQ(b.entry.list(), reg->find(300ms));
    clk.advance(299ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(b.fired, 1);
    clk.advance(1ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(b.fired, 2);
    EXPECT_FALSE(b.entry.enrolled());
}

struct zero_reenroller {
    timeout_registry* reg;
    manual_clock* clk;
    int fired = 0;
    idle_entry entry{&on_expire, this};
    static void on_expire(void* self) noexcept {
        auto* z = static_cast<zero_reenroller*>(self);
        ++z->fired;
        z->reg->enroll(z->entry, 0ms, z->clk->now);
    }
};

TEST_F(TimeoutRegistryTest, ZeroTimeoutReenrollDoesNotLoopForever) {
    zero_reenroller z{reg.get(), &clk};
    reg->enroll(z.entry, 0ms, clk.now);
    EXPECT_EQ(reg->expire_due(clk.now), 1U);
    EXPECT_EQ(z.fired, 1);
    EXPECT_TRUE(z.entry.enrolled());
}

TEST_F(TimeoutRegistryTest, UnusedDurationsArePrunedWhenANewOneAppears) {
    probe& p = enroll(1, 100ms);
    timeout_registry::unenroll(p.entry);
    EXPECT_NE(reg->find(100ms), nullptr);
    enroll(2, 200ms);
    EXPECT_EQ(reg->find(100ms), nullptr);
    EXPECT_EQ(reg->list_count(), 1U);
}

TEST_F(TimeoutRegistryTest, StatsCountExpiries) {
    enroll(1, 100ms);
    enroll(2, 100ms);
    clk.advance(150ms);
    reg->expire_due(clk.now);
    EXPECT_EQ(reg->stats().expired, 2U);
    EXPECT_EQ(reg->stats().late_sum_us, 2 * 50'000U);
}

TEST_F(TimeoutRegistryTest, RetimeKeepsTheTimeAlreadyWaited) {
    enroll(1, 500ms);
    clk.advance(10ms);
    enroll(2, 100ms);
    clk.advance(10ms);
    enroll(3, 500ms);
    clk.advance(10ms);
    enroll(4, 100ms);
    reg->retime(500ms, 100ms); // as a reload that shortens a timeout
    EXPECT_EQ(reg->find(500ms)->size(), 0U);
    idle_list& l = *reg->find(100ms);
    EXPECT_EQ(l.size(), 4U);
    std::vector<clock::time_point> starts;
    for (idle_entry* e = l.front(); e != nullptr; e = idle_list::next(*e))
        starts.push_back(e->idle_start());
    EXPECT_TRUE(std::is_sorted(starts.begin(), starts.end()));
    clk.advance(70ms); // entry 1 has now waited 100ms
    EXPECT_EQ(reg->expire_due(clk.now), 1U);
    clk.advance(20ms);
    EXPECT_EQ(reg->expire_due(clk.now), 2U);
    clk.advance(10ms);
    EXPECT_EQ(reg->expire_due(clk.now), 1U);
    EXPECT_EQ(log, (std::vector<int>{1, 2, 3, 4}));
}

TEST_F(TimeoutRegistryTest, RetimeIntoANewDuration) {
    enroll(1, 500ms);
    enroll(2, 500ms);
    reg->retime(500ms, 50ms);
    EXPECT_EQ(reg->find(50ms)->size(), 2U);
    reg->retime(50ms, 50ms);  // same duration: nothing to do
    reg->retime(700ms, 50ms); // no such list: nothing to do
    clk.advance(50ms);
    EXPECT_EQ(reg->expire_due(clk.now), 2U);
}

TEST_F(TimeoutRegistryTest, EnrollThatCannotArmLeavesTheEntryWhereItWas) {
    probe& p = enroll(1, 1h);
    detail::fault_injection::failing_waits = 1;
    EXPECT_THROW(reg->enroll(p.entry, 100ms, clk.now), std::bad_alloc);
    EXPECT_EQ(detail::fault_injection::failing_waits, 0U);
    EXPECT_EQ(p.entry.list(), reg->find(1h));
    EXPECT_EQ(p.entry.idle_timeout(), 1h);
    reg->enroll(p.entry, 100ms, clk.now); // memory again: it moves
    EXPECT_EQ(p.entry.list(), reg->find(100ms));
}

} // namespace
} // namespace tarry::timeouts::test

// The registry on a real io_context and the real steady clock. Durations are short and every
// check has generous slack: these tests assert order and "never early", never speed.
#include <tarry/timeouts/timeout_registry.hpp>
#include <tarry/timeouts/timer_list.hpp> // detail::fault_injection

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gtest/gtest.h>

#include <deque>
#include <thread>

namespace tarry::timeouts::test {
namespace {

using namespace std::chrono_literals;

struct timed_probe {
    clock::time_point expired_at{};
    clock::time_point deadline_at_expiry{};
    int fired = 0;
    idle_entry entry{&on_expire, this};
    static void on_expire(void* self) noexcept {
        auto* p = static_cast<timed_probe*>(self);
        p->expired_at = clock::now();
        p->deadline_at_expiry = p->entry.deadline();
        ++p->fired;
    }
};

TEST(TimeoutRegistryIoTest, RunReturnsWhenEverythingHasExpired) {
    boost::asio::io_context io;
    timeout_registry reg(io);
    std::deque<timed_probe> probes(3);
    const auto start = clock::now();
    for (auto& p : probes)
        reg.enroll(p.entry, 30ms);
    io.run(); // returns only because the timer is no longer pending
    for (auto& p : probes) {
        EXPECT_EQ(p.fired, 1);
        EXPECT_GE(p.expired_at, start + 30ms);
        EXPECT_GE(p.expired_at, p.deadline_at_expiry);
    }
    EXPECT_FALSE(reg.find(30ms)->front());
}

TEST(TimeoutRegistryIoTest, EmptiedListLeavesNoPendingTimer) {
    boost::asio::io_context io;
    timeout_registry reg(io);
    timed_probe p;
    reg.enroll(p.entry, 1h);
    timeout_registry::unenroll(p.entry);
    // With the hour-long wait still pending, run_for would use up its whole budget and the
    // context would not be stopped.
    io.run_for(10s);
    EXPECT_TRUE(io.stopped());
    EXPECT_EQ(p.fired, 0);
}

TEST(TimeoutRegistryIoTest, TimerRearmsForATouchedHead) {
    boost::asio::io_context io;
    timeout_registry reg(io);
    timed_probe a;
    timed_probe b;
    reg.enroll(a.entry, 100ms);
    reg.enroll(b.entry, 100ms);
    clock::time_point touched_at{};
    boost::asio::steady_timer t(io, 50ms);
    t.async_wait([&](boost::system::error_code) {
        touched_at = clock::now();
        timeout_registry::touch(a.entry);
    });
    io.run();
    EXPECT_EQ(a.fired, 1);
    EXPECT_EQ(b.fired, 1);
    EXPECT_LT(b.expired_at, a.expired_at);
    EXPECT_GE(a.expired_at, touched_at + 100ms); // not at its first deadline
    EXPECT_GE(reg.stats().wakeups, 2U);
}

TEST(TimeoutRegistryIoTest, NeverEarlyWhenTheLoopWasBusy) {
    boost::asio::io_context io;
    timeout_registry reg(io);
    timed_probe p;
    reg.enroll(p.entry, 20ms);
    boost::asio::post(io, [&] {
        std::this_thread::sleep_for(50ms); // a long handler, then a touch: deadline moves on
        timeout_registry::touch(p.entry);
    });
    const auto touched_after = clock::now() + 50ms;
    io.run();
    EXPECT_EQ(p.fired, 1);
    EXPECT_GE(p.expired_at, touched_after + 20ms);
    EXPECT_GE(p.expired_at, p.deadline_at_expiry);
}

TEST(TimeoutRegistryIoTest, MassExpiryYieldsToOtherHandlersBetweenBatches) {
    boost::asio::io_context io;
    timeout_registry reg(io, 100);
    std::deque<timed_probe> probes(1000);
    for (auto& p : probes)
        reg.enroll(p.entry, 5ms);
    std::vector<std::uint64_t> seen; // expiries counted each time another handler got a turn
    std::function<void()> other = [&] {
        seen.push_back(reg.stats().expired);
        if (reg.stats().expired < probes.size()) boost::asio::post(io, other);
    };
    boost::asio::post(io, other);
    io.run();
    EXPECT_EQ(reg.stats().expired, 1000U);
    bool saw_partial = false;
    for (auto n : seen)
        saw_partial |= (n > 0 && n < 1000);
    EXPECT_TRUE(saw_partial);
    EXPECT_GE(reg.stats().wakeups, 10U);
}

TEST(TimeoutRegistryIoTest, RegistryDestroyedWithWaitsPending) {
    boost::asio::io_context io;
    timed_probe p;
    {
        timeout_registry reg(io);
        reg.enroll(p.entry, 10ms);
    }
    EXPECT_FALSE(p.entry.enrolled());
    io.run();
    EXPECT_EQ(p.fired, 0);
}

// Fault injection (detail::fault_injection) stands in for Asio's allocations failing.
class TimeoutRegistryOomTest : public ::testing::Test {
protected:
    void TearDown() override {
        detail::fault_injection::failing_posts = 0;
        detail::fault_injection::failing_waits = 0;
    }
};

TEST_F(TimeoutRegistryOomTest, ContinuationThatCannotBePostedExpiresInline) {
    boost::asio::io_context io;
    timeout_registry reg(io, 10);
    std::deque<timed_probe> probes(100);
    for (auto& p : probes)
        reg.enroll(p.entry, 5ms);
    // All due by the first wake, however slowly they were enrolled (sanitizer builds).
    std::this_thread::sleep_for(20ms);
    detail::fault_injection::failing_posts = 1'000; // every continuation fails
    io.run();                                       // returns: nothing is left pending
    for (auto& p : probes) {
        EXPECT_EQ(p.fired, 1);
        EXPECT_GE(p.expired_at, p.deadline_at_expiry);
    }
    EXPECT_EQ(reg.stats().expired, 100U);
    EXPECT_EQ(reg.stats().wakeups, 1U);           // one timer wake did it all
    EXPECT_EQ(reg.stats().schedule_failures, 9U); // the nine continuations it could not post
}

TEST_F(TimeoutRegistryOomTest, OneFailedPostThenBatchesResumeYielding) {
    boost::asio::io_context io;
    timeout_registry reg(io, 10);
    std::deque<timed_probe> probes(100);
    for (auto& p : probes)
        reg.enroll(p.entry, 5ms);
    // All due by the first wake, or a late one re-arms and counts one more wakeup.
    std::this_thread::sleep_for(20ms);
    detail::fault_injection::failing_posts = 1;
    io.run();
    EXPECT_EQ(reg.stats().expired, 100U);
    EXPECT_EQ(reg.stats().schedule_failures, 1U);
    EXPECT_EQ(reg.stats().wakeups, 9U); // the first wake ran two batches
}

TEST_F(TimeoutRegistryOomTest, WaitThatCannotBeRearmedIsRetriedByTheNextEnroll) {
    boost::asio::io_context io;
    timeout_registry reg(io);
    timed_probe a;
    timed_probe b;
    timed_probe c;
    reg.enroll(a.entry, 30ms);
    std::this_thread::sleep_for(20ms); // b is due 20ms after a: not in a's wake
    reg.enroll(b.entry, 30ms);
    detail::fault_injection::failing_waits = 1; // the re-arm for b after a's wake
    io.run();                                   // returns with b unexpired: its list has no wait
    EXPECT_EQ(a.fired, 1);
    EXPECT_EQ(b.fired, 0);
    EXPECT_TRUE(b.entry.enrolled());
    EXPECT_EQ(reg.stats().schedule_failures, 1U);
    reg.enroll(c.entry, 30ms); // arms again, for b, the head
    io.restart();
    io.run();
    EXPECT_EQ(b.fired, 1);
    EXPECT_EQ(c.fired, 1);
    EXPECT_GE(b.expired_at, b.deadline_at_expiry);
}

} // namespace
} // namespace tarry::timeouts::test

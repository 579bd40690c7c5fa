// The worker's edge-triggered poller on socket pairs: edges reach their owner once, tagged
// owners reach the tagged handler, an owner forgotten in the middle of a batch is told nothing
// more from it, pollables' reads made with the batch land in the space lent to them, a stopped
// poller keeps its events for the next start, and the loop wakes for Asio's timers, posts and
// stop too, a timer on time even while the sockets keep every turn busy. Each in both of the
// poller's modes (the io_context's task, and a descriptor nested in Asio's reactor) that the
// build has.
#include <tarry/net/poller.hpp>

#include "socket_pair.hpp"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

namespace tarry::net {
namespace {

using namespace std::chrono_literals;

struct owner final : pollable {
    int told = 0;
    std::uint32_t last = 0;
    std::function<void()> then;
    void on_events(std::uint32_t events) noexcept override {
        ++told;
        last = events;
        if (then) then();
    }
};

/// A pollable that reads ahead (as an upstream connection waiting for its response does).
struct reader final : pollable {
    int fd = -1;
    std::size_t want = 0;
    int told = 0;
    int ahead = 0;
    std::size_t asked = 0;
    long result = 0;
    std::string got;
    std::function<void()> then;
    void on_events(std::uint32_t /*events*/) noexcept override {
        ++told;
        if (then) then();
    }
    io_batch::read_target read_ahead(std::uint32_t events) noexcept override {
        if ((events & EPOLLIN) == 0 || want == 0) return {};
        return {fd, nullptr, want};
    }
    void on_read_ahead(std::uint32_t /*events*/, const io_batch::read_target& t,
                       long r) noexcept override {
        ++told;
        ++ahead;
        asked = t.size;
        result = r;
        if (r > 0) got.assign(t.data, static_cast<std::size_t>(r));
        if (then) then();
    }
};

/// The modes this build has.
const auto modes = ::testing::Values(
#if TARRY_POLLER_TASK
    poller::mode::task,
#endif
    poller::mode::nested);

std::string mode_name(const ::testing::TestParamInfo<poller::mode>& info) {
    return info.param == poller::mode::task ? "Task" : "Nested";
}

class PollerTest : public ::testing::TestWithParam<poller::mode> {
protected:
    boost::asio::io_context io;
    poller p{
        io,
        [](void* o, std::uint32_t events) noexcept { static_cast<owner*>(o)->on_events(events); },
        nullptr, GetParam()};

    PollerTest() { p.start(); }
    void run_ready() {
        for (int i = 0; i < 5; ++i) {
            io.restart();
            io.poll();
            std::this_thread::sleep_for(1ms);
        }
    }
};

TEST_P(PollerTest, AnEdgeReachesItsOwnerOnceUntilTheNextOne) {
    socket_pair s;
    owner o;
    ASSERT_TRUE(p.add(s.fd[0], o, EPOLLIN | EPOLLRDHUP));
    s.say("a");
    run_ready();
    EXPECT_EQ(o.told, 1);
    EXPECT_NE(o.last & EPOLLIN, 0U);
    run_ready(); // the byte is still unread: edge-triggered, so nothing more
    EXPECT_EQ(o.told, 1);
    s.say("b");
    run_ready();
    EXPECT_EQ(o.told, 2);
}

TEST_P(PollerTest, TaggedOwnersGoToTheTaggedHandlerForInputAndOutput) {
    socket_pair s;
    alignas(8) owner o;
    ASSERT_TRUE(p.add_tagged(s.fd[0], &o));
    run_ready();
    EXPECT_EQ(o.told, 1); // writable from the start
    EXPECT_NE(o.last & EPOLLOUT, 0U);
    s.say("a");
    run_ready();
    EXPECT_EQ(o.told, 2);
    EXPECT_NE(o.last & EPOLLIN, 0U);
}

TEST_P(PollerTest, AnOwnerForgottenMidBatchIsToldNothingMoreFromIt) {
    socket_pair s1;
    socket_pair s2;
    owner o1;
    owner o2;
    ASSERT_TRUE(p.add(s1.fd[0], o1, EPOLLIN));
    ASSERT_TRUE(p.add(s2.fd[0], o2, EPOLLIN));
    // Whichever is told first forgets the other, as an owner closing another would.
    o1.then = [&] { poller::forget(o2); };
    o2.then = [&] { poller::forget(o1); };
    s1.say("a");
    s2.say("b"); // both ready before the poller reads the set: one batch
    run_ready();
    EXPECT_EQ(o1.told + o2.told, 1);

    // Outside a batch, forget does nothing: the next edge is told.
    poller::forget(o1);
    o1.then = nullptr;
    o2.then = nullptr;
    s1.say("c");
    s2.say("d");
    run_ready();
    EXPECT_EQ(o1.told + o2.told, 3);
}

TEST_P(PollerTest, PollablesReadWithTheBatchIntoTheSpaceLentAndNeverMoreThanTheirShare) {
    if (!p.batching()) GTEST_SKIP() << "no io_uring here: pollables read for themselves";
    socket_pair s1;
    socket_pair s2;
    socket_pair s3;
    reader big;
    reader small;
    reader none; // asks for nothing: told of its edge as usual
    big.fd = s1.fd[0];
    big.want = 1 << 20;
    small.fd = s2.fd[0];
    small.want = 10;
    ASSERT_TRUE(p.add(s1.fd[0], big, EPOLLIN));
    ASSERT_TRUE(p.add(s2.fd[0], small, EPOLLIN));
    ASSERT_TRUE(p.add(s3.fd[0], none, EPOLLIN));
    const std::string lots(100000, 'x');
    ASSERT_EQ(::write(s1.fd[1], lots.data(), lots.size()), static_cast<ssize_t>(lots.size()));
    ASSERT_EQ(::write(s2.fd[1], "0123456789abc", 13), 13);
    s3.say("z");
    run_ready();
    EXPECT_EQ(big.ahead, 1);
    EXPECT_EQ(big.asked, 32768U); // two readers share 64 KiB
    EXPECT_EQ(big.result, 32768);
    EXPECT_EQ(big.got, lots.substr(0, 32768));
    EXPECT_EQ(small.ahead, 1);
    EXPECT_EQ(small.asked, 10U);
    EXPECT_EQ(small.got, "0123456789");
    EXPECT_EQ(none.ahead, 0);
    EXPECT_EQ(none.told, 1);

    // A reader alone in its batch reads with it too (a call of its own), up to what it asks.
    small.want = 0;
    big.want = 16;
    char rest[100000];
    ASSERT_EQ(::read(s1.fd[0], rest, sizeof rest), 100000 - 32768);
    ASSERT_EQ(::write(s1.fd[1], "0123456789abcdefghij", 20), 20);
    run_ready();
    EXPECT_EQ(big.ahead, 2);
    EXPECT_EQ(big.asked, 16U);
    EXPECT_EQ(big.got, "0123456789abcdef");
}

TEST_P(PollerTest, APollableForgottenMidBatchHasItsReadDroppedAndIsToldNothing) {
    if (!p.batching()) GTEST_SKIP() << "no io_uring here: pollables read for themselves";
    socket_pair s1;
    socket_pair s2;
    reader r1;
    reader r2;
    r1.fd = s1.fd[0];
    r2.fd = s2.fd[0];
    r1.want = r2.want = 100;
    ASSERT_TRUE(p.add(s1.fd[0], r1, EPOLLIN));
    ASSERT_TRUE(p.add(s2.fd[0], r2, EPOLLIN));
    r1.then = [&] { poller::forget(r2); };
    r2.then = [&] { poller::forget(r1); };
    s1.say("a");
    s2.say("b");
    run_ready();
    EXPECT_EQ(r1.told + r2.told, 1);
    EXPECT_EQ(r1.ahead + r2.ahead, 1);
}

TEST_P(PollerTest, AStoppedPollerKeepsItsEventsForTheNextStart) {
    socket_pair s;
    owner o;
    ASSERT_TRUE(p.add(s.fd[0], o, EPOLLIN));
    run_ready();
    p.stop();
    s.say("a");
    run_ready();
    EXPECT_EQ(o.told, 0);
    p.start();
    run_ready();
    EXPECT_EQ(o.told, 1);
    s.say("b");
    run_ready();
    EXPECT_EQ(o.told, 2);
}

class PollerLoop : public ::testing::TestWithParam<poller::mode> {};

TEST_P(PollerLoop, TimersPostsFromOtherThreadsAndStopWakeTheWait) {
    boost::asio::io_context io;
    poller p{io, nullptr, nullptr, GetParam()};
    socket_pair s;
    owner o;
    ASSERT_TRUE(p.add(s.fd[0], o, EPOLLIN));
    p.start();
    std::thread loop([&] { io.run(); }); // blocked in the loop's wait from here on

    // A timer: Asio's set (task mode: nested in the poller's) wakes the wait.
    std::promise<void> fired;
    boost::asio::steady_timer t(io, 20ms);
    t.async_wait([&](boost::system::error_code) { fired.set_value(); });
    EXPECT_EQ(fired.get_future().wait_for(2s), std::future_status::ready);

    // A socket's edge, then work posted from this thread.
    std::promise<int> told;
    o.then = [&] { told.set_value(o.told); };
    s.say("a");
    EXPECT_EQ(told.get_future().wait_for(2s), std::future_status::ready);
    std::promise<void> posted;
    boost::asio::post(io, [&] { posted.set_value(); });
    EXPECT_EQ(posted.get_future().wait_for(2s), std::future_status::ready);

    // run() does not return while the poller is started, and stop() from here ends it.
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(io.stopped());
    io.stop();
    loop.join();
    EXPECT_EQ(o.told, 1);
}

TEST_P(PollerLoop, ATimerFiresOnTimeWhileSocketsKeepEveryTurnBusy) {
    // Sixty-four sockets that are ready again as soon as they are told (each reads its byte
    // and its far end writes another): every turn of the loop has events, and Asio's set
    // (task mode: nested in the poller's) must still get its turn for the timer.
    boost::asio::io_context io;
    poller p{io, nullptr, nullptr, GetParam()};
    constexpr int pairs = 64;
    std::vector<std::unique_ptr<socket_pair>> s;
    std::vector<std::unique_ptr<owner>> o;
    long told = 0;
    for (int i = 0; i < pairs; ++i) {
        s.push_back(std::make_unique<socket_pair>());
        o.push_back(std::make_unique<owner>());
        socket_pair& sp = *s.back();
        o.back()->then = [&sp, &told, &io] {
            char b[16];
            while (::read(sp.fd[0], b, sizeof b) > 0) {
            }
            sp.say("x");
            if (++told > 5'000'000) io.stop(); // the timer never came: stop anyway
        };
        ASSERT_TRUE(p.add(sp.fd[0], *o.back(), EPOLLIN));
        sp.say("x");
    }
    p.start();
    bool fired = false;
    boost::asio::steady_timer t(io, 50ms);
    const auto start = std::chrono::steady_clock::now();
    std::chrono::steady_clock::duration waited{};
    t.async_wait([&](boost::system::error_code) {
        fired = true;
        waited = std::chrono::steady_clock::now() - start;
        io.stop();
    });
    io.run();
    EXPECT_TRUE(fired);
    EXPECT_GE(waited, 50ms);
    EXPECT_LT(waited, 2s) << "late by the busy sockets";
    EXPECT_GT(told, pairs) << "the sockets were busy meanwhile";
}

TEST_P(PollerLoop, APollerGoneGivesAsioItsReactorBackAndThereIsOnePerContext) {
    boost::asio::io_context io;
    {
        poller p{io, nullptr, nullptr, GetParam()};
        if (GetParam() == poller::mode::task) {
            EXPECT_THROW((poller{io, nullptr, nullptr, poller::mode::task}), std::logic_error);
        }
        p.start();
        io.poll();
    }
    bool fired = false;
    boost::asio::steady_timer t(io, 10ms);
    t.async_wait([&](boost::system::error_code) { fired = true; });
    io.restart();
    io.run_for(2s);
    EXPECT_TRUE(fired);
    EXPECT_NO_THROW((poller{io, nullptr, nullptr, GetParam()}));
}

TEST_P(PollerTest, AStopAndAStartBeforeTheAbortedWaitComesBackKeepTheWait) {
    socket_pair s;
    owner o;
    ASSERT_TRUE(p.add(s.fd[0], o, EPOLLIN));
    run_ready(); // nested: the wait is queued in Asio's reactor
    p.stop();
    p.start(); // before the aborted wait has come back
    run_ready();
    s.say("a");
    run_ready();
    EXPECT_EQ(o.told, 1);
}

TEST_P(PollerLoop, APollerGoneWithItsWaitQueuedLeavesNothingBehind) {
    boost::asio::io_context io;
    {
        poller gone{io, nullptr, nullptr, GetParam()};
        gone.start();
        io.poll(); // nested: its wait is queued in Asio's reactor
    } // nested: the queued wait comes back aborted, after it: freed then (ASan would tell)
    io.restart();
    io.poll();
    socket_pair s;
    owner o;
    poller p{io, nullptr, nullptr, GetParam()};
    ASSERT_TRUE(p.add(s.fd[0], o, EPOLLIN));
    p.start();
    s.say("b");
    for (int i = 0; i < 1000 && o.told == 0; ++i) {
        io.restart();
        io.run_for(2ms);
    }
    EXPECT_EQ(o.told, 1);
}

TEST(PollerMode, TheEnvironmentPicksTheNestedMode) {
    ::setenv("TARRY_POLLER_NESTED", "1", 1);
    EXPECT_EQ(poller::default_mode(), poller::mode::nested);
    boost::asio::io_context io;
    poller p{io};
    EXPECT_EQ(p.how(), poller::mode::nested);
    ::setenv("TARRY_POLLER_NESTED", "0", 1);
#if TARRY_POLLER_TASK
    EXPECT_EQ(poller::default_mode(), poller::mode::task);
#else
    EXPECT_EQ(poller::default_mode(), poller::mode::nested);
    EXPECT_THROW((poller{io, nullptr, nullptr, poller::mode::task}), std::invalid_argument);
#endif
    ::unsetenv("TARRY_POLLER_NESTED");
}

INSTANTIATE_TEST_SUITE_P(Modes, PollerTest, modes, mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, PollerLoop, modes, mode_name);

} // namespace
} // namespace tarry::net

// The worker's edge-triggered poller on socket pairs: edges reach their owner once, tagged
// owners reach the tagged handler, and an owner forgotten in the middle of a batch is told
// nothing more from it.
#include <tarry/net/poller.hpp>

#include "socket_pair.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

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

class PollerTest : public ::testing::Test {
protected:
    boost::asio::io_context io;
    poller p{io, [](void* o, std::uint32_t events) noexcept {
                 static_cast<owner*>(o)->on_events(events);
             }};

    PollerTest() { p.start(); }
    void run_ready() {
        for (int i = 0; i < 5; ++i) {
            io.restart();
            io.poll();
            std::this_thread::sleep_for(1ms);
        }
    }
};

TEST_F(PollerTest, AnEdgeReachesItsOwnerOnceUntilTheNextOne) {
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

TEST_F(PollerTest, TaggedOwnersGoToTheTaggedHandlerForInputAndOutput) {
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

TEST_F(PollerTest, AnOwnerForgottenMidBatchIsToldNothingMoreFromIt) {
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

} // namespace
} // namespace tarry::net

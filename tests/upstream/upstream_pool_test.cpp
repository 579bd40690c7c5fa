// One upstream pool on a real io_context against a listener of the test's own: what it keeps,
// what it closes and why, with short purge periods.
#include <tarry/upstream/upstream_pool.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace tarry::upstream {
namespace {

using namespace std::chrono_literals;
using boost::asio::ip::tcp;

class UpstreamPoolTest : public ::testing::Test {
protected:
    boost::asio::io_context io;
    net::poller poller{io};
    timeouts::timeout_registry registry{io};
    tcp::acceptor acceptor{io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)};
    std::vector<std::shared_ptr<tcp::socket>> accepted; ///< the upstream's side
    upstream_settings settings;
    std::shared_ptr<upstream_pool> pool;

    UpstreamPoolTest() { poller.start(); }

    /// Runs what is ready (an io_context that ran out of work stops: restart it first).
    void poll() {
        io.restart();
        io.poll();
    }

    void make() {
        settings.servers = {
            server_address::parse("127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()))};
        pool = std::make_shared<upstream_pool>(io, poller, registry, settings, settings.servers[0]);
    }

    /// `n` connections opened and connected at once: busy together.
    std::vector<std::shared_ptr<upstream_connection>> open(int n) {
        std::vector<std::shared_ptr<upstream_connection>> cs;
        for (int i = 0; i < n; ++i) {
            cs.push_back(pool->open());
            cs.back()->connect(pool->endpoint());
            auto s = std::make_shared<tcp::socket>(io);
            acceptor.accept(*s);
            accepted.push_back(s);
        }
        poll();
        return cs;
    }
    void give_back(std::vector<std::shared_ptr<upstream_connection>>& cs) {
        for (auto& c : cs)
            pool->give_back(std::move(c), 1h, false);
        cs.clear();
        poll();
    }
    std::int64_t closes(upstream_close r) { return pool->metrics().closes_of(r); }
};

TEST_F(UpstreamPoolTest, ABurstKeepsWhatItNeededAndTheNextTakesItAll) {
    make();
    auto burst = open(40); // more than the old fixed cap of 32
    give_back(burst);
    EXPECT_EQ(pool->idle_count(), 40U);
    std::vector<std::shared_ptr<upstream_connection>> again;
    for (int i = 0; i < 40; ++i)
        again.push_back(pool->take());
    EXPECT_EQ(again.back() != nullptr, true);
    EXPECT_EQ(pool->take(), nullptr);
    EXPECT_EQ(pool->metrics().opened.get(), 40);
    give_back(again);
    EXPECT_EQ(pool->idle_count(), 40U);
    EXPECT_EQ(closes(upstream_close::max_idle) + closes(upstream_close::surplus), 0);
}

TEST_F(UpstreamPoolTest, ARequestTakesTheMostRecentlyUsed) {
    make();
    auto cs = open(3);
    upstream_connection* last = cs.back().get();
    give_back(cs);
    EXPECT_EQ(pool->take().get(), last);
}

TEST_F(UpstreamPoolTest, MaxIdleIsACapTheOldestGoes) {
    settings.max_idle = 2;
    make();
    auto cs = open(3);
    const std::weak_ptr<upstream_connection> first = cs.front();
    give_back(cs);
    EXPECT_EQ(pool->idle_count(), 2U);
    EXPECT_EQ(closes(upstream_close::max_idle), 1);
    const auto still = first.lock(); // freed once its aborted read ran, or at least closed
    EXPECT_TRUE(!still || !still->is_open());
}

TEST_F(UpstreamPoolTest, AQuieterPeriodHalvesTheSurplusEachPeriod) {
    settings.purge_period = 50ms;
    make();
    auto burst = open(16);
    give_back(burst); // a peak of 16
    std::this_thread::sleep_for(60ms);
    // The next period needs one at a time: each give-back at a period's end halves the rest.
    const auto one_request = [&] {
        auto c = pool->take();
        ASSERT_TRUE(c);
        std::this_thread::sleep_for(60ms);
        pool->give_back(std::move(c), 1h, false);
        poll();
    };
    one_request(); // ends the burst's period: its peak was 16, nothing is surplus
    EXPECT_EQ(pool->idle_count(), 16U);
    one_request(); // a period whose peak was 1: (16 - 1 + 1) / 2 = 8 of 15 spare close
    EXPECT_EQ(pool->idle_count(), 8U);
    one_request();
    EXPECT_EQ(pool->idle_count(), 4U);
    one_request();
    one_request();
    one_request();
    EXPECT_EQ(pool->idle_count(), 1U); // never below what was needed
    EXPECT_EQ(closes(upstream_close::surplus), 15);
}

TEST_F(UpstreamPoolTest, AnUpstreamCloseWhileIdleTakesItOutAtOnce) {
    make();
    auto cs = open(2);
    give_back(cs);
    ASSERT_EQ(pool->idle_count(), 2U);
    accepted[0]->close(); // the application closes one idle connection

    for (int i = 0; i < 100 && pool->idle_count() != 1; ++i) {
        poll();
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(pool->idle_count(), 1U);
    EXPECT_EQ(closes(upstream_close::upstream_close), 1);
    EXPECT_TRUE(pool->take()->is_open());
}

TEST_F(UpstreamPoolTest, StopShedAndDiscardSayWhy) {
    make();
    auto cs = open(3);
    auto busy = std::move(cs.back());
    cs.pop_back();
    upstream_connection* idle = cs.front().get();
    give_back(cs);
    EXPECT_TRUE(idle->shed());
    EXPECT_EQ(closes(upstream_close::pressure), 1);
    EXPECT_FALSE(busy->shed()); // not idle: never taken for a descriptor
    pool->stop();
    EXPECT_EQ(pool->idle_count(), 0U);
    EXPECT_EQ(closes(upstream_close::shutdown), 1);
    pool->give_back(std::move(busy), 1h, false); // after a stop: closed, as a shutdown
    EXPECT_EQ(closes(upstream_close::shutdown), 2);
    EXPECT_EQ(pool->busy_count(), 0U);
}

// A reload's old pool goes when the last request through it ends; the counters are its
// server's and outlive it. The idle connections it closes as it goes are counted, as a
// shutdown (they were once closed uncounted: opened minus closed drifted from what was open).
TEST_F(UpstreamPoolTest, APoolThatGoesCountsTheIdleConnectionsItCloses) {
    make();
    auto counters = std::make_shared<upstream_metrics>();
    pool = std::make_shared<upstream_pool>(io, poller, registry, settings, settings.servers[0],
                                           counters);
    auto cs = open(3);
    give_back(cs);
    EXPECT_EQ(counters->idle.get(), 3);
    pool.reset();
    EXPECT_EQ(counters->idle.get(), 0);
    EXPECT_EQ(counters->closes_of(upstream_close::shutdown), 3);
    EXPECT_EQ(counters->opened.get(), 3);
}

} // namespace
} // namespace tarry::upstream

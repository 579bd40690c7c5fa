// The upstream group without I/O: how a request picks a server, and passive health.
#include <tarry/upstream/upstream_group.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace tarry::upstream {
namespace {

using namespace std::chrono_literals;

class UpstreamGroupTest : public ::testing::Test {
protected:
    boost::asio::io_context io;
    net::poller poller{io};
    timeouts::timeout_registry registry{io};

    upstream_group make(std::size_t servers, upstream_settings s = {}) {
        for (std::size_t i = 0; i < servers; ++i)
            s.servers.push_back(server_address::parse("127.0.0.1:" + std::to_string(9001 + i)));
        return upstream_group(io, poller, registry, s);
    }
    static std::string name(const std::shared_ptr<upstream_pool>& p) {
        return p ? p->name() : "none";
    }
    /// Returns once the clock has moved on: a pool marks itself down from the clock itself
    /// (timeouts::clock::now(), no clock to inject), so two marks are ordered only a tick apart.
    static void next_tick() {
        const auto at = timeouts::clock::now();
        while (timeouts::clock::now() == at) {
        }
    }
};

TEST_F(UpstreamGroupTest, RoundRobinTakesEachServerInTurn) {
    auto g = make(3);
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9001");
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9002");
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9003");
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9001");
}

TEST_F(UpstreamGroupTest, LeastConnectionsTakesTheServerWithFewestBusy) {
    upstream_settings s;
    s.balance = upstream_settings::balance_mode::least_conn;
    auto g = make(3, s);
    auto busy = g.pools()[0]->open(); // one request in flight on the first
    auto p = g.pick();
    EXPECT_NE(p, g.pools()[0]);
    auto q = g.pick();
    EXPECT_NE(q, g.pools()[0]);
    EXPECT_NE(p, q); // ties rotate
    g.pools()[0]->discard(*busy, upstream_close::error);
}

TEST_F(UpstreamGroupTest, AFailedServerIsSkippedOthersTakeItsTurn) {
    upstream_settings s;
    s.fail_timeout = 1h;
    auto g = make(2, s);
    g.failed(*g.pools()[0]);
    EXPECT_TRUE(g.pools()[0]->down());
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(name(g.pick()), "127.0.0.1:9002");
}

TEST_F(UpstreamGroupTest, ALoneServerIsNeverMarkedDown) {
    auto g = make(1);
    g.failed(*g.pools()[0]);
    EXPECT_FALSE(g.pools()[0]->down());
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9001");
    EXPECT_EQ(g.pick(g.pools()[0].get()), nullptr); // a retry elsewhere: there is nowhere
}

TEST_F(UpstreamGroupTest, WithEveryServerDownTheOldestMarkIsTried) {
    upstream_settings s;
    s.fail_timeout = 1h;
    auto g = make(3, s);
    g.failed(*g.pools()[1]);
    next_tick();
    g.failed(*g.pools()[2]);
    next_tick();
    g.failed(*g.pools()[0]);
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9002");
    // A retry after that one failed again goes to the oldest of the others.
    g.failed(*g.pools()[1]);
    EXPECT_EQ(name(g.pick(g.pools()[1].get())), "127.0.0.1:9003");
}

TEST_F(UpstreamGroupTest, AMarkEndsAfterFailTimeout) {
    upstream_settings s;
    s.fail_timeout = 20ms;
    auto g = make(2, s);
    g.failed(*g.pools()[0]);
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9002");
    // To the end of the mark (the pool reads the real clock; it has no clock to inject).
    std::this_thread::sleep_until(g.pools()[0]->down_until());
    EXPECT_FALSE(g.pools()[0]->down());
    EXPECT_EQ(name(g.pick()), "127.0.0.1:9001");
}

TEST_F(UpstreamGroupTest, AGroupNeedsAServer) {
    upstream_settings s;
    EXPECT_THROW(upstream_group(io, poller, registry, s), std::invalid_argument);
}

TEST(ServerAddressTest, TypedAddressesAndTextAgree) {
    const auto v4 = server_address::parse("127.0.0.1:3000");
    EXPECT_EQ(v4.name, "127.0.0.1:3000");
    EXPECT_EQ(v4.endpoint,
              server_address::tcp(boost::asio::ip::make_address("127.0.0.1"), 3000).endpoint);
    EXPECT_EQ(server_address::parse("localhost:80").name, "127.0.0.1:80");
    EXPECT_EQ(server_address::parse("[::1]:8080").name, "[::1]:8080");
    EXPECT_EQ(server_address::tcp(boost::asio::ip::make_address("::1"), 8080).name, "[::1]:8080");
    EXPECT_EQ(server_address::parse("unix:/run/app.sock").name, "unix:/run/app.sock");
    for (const char* bad :
         {"nowhere", ":80", "127.0.0.1:0", "127.0.0.1:65536", "example.com:80", "127.0.0.1:8x"})
        EXPECT_THROW(server_address::parse(bad), std::invalid_argument) << bad;
}

} // namespace
} // namespace tarry::upstream

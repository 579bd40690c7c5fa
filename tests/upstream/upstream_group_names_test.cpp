// The upstream group's servers by DNS name, without I/O: a pool per address of a name, kept,
// added and drained as the name table changes.
#include <tarry/upstream/upstream_group.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <gtest/gtest.h>

namespace tarry::upstream {
namespace {

namespace ip = boost::asio::ip;

class UpstreamGroupNamesTest : public ::testing::Test {
protected:
    boost::asio::io_context io;
    net::poller poller{io};
    timeouts::timeout_registry registry{io};
    std::shared_ptr<name_table> names = std::make_shared<name_table>();

    static std::string address_of(const std::shared_ptr<upstream_pool>& p) {
        ip::tcp::endpoint ep;
        std::memcpy(ep.data(), p->endpoint().data(), p->endpoint().size());
        return ep.address().to_string();
    }
};

TEST_F(UpstreamGroupNamesTest, EveryAddressOfANameIsAPoolNamedAsConfigured) {
    names->set("app.test", {ip::make_address("10.0.0.1"), ip::make_address("::1")});
    upstream_settings s;
    s.servers = server_address::of_host("app.test", 3000);
    s.servers.push_back(server_address::parse("127.0.0.1:9000"));
    upstream_group g(io, poller, registry, s, nullptr, names);
    ASSERT_EQ(g.pools().size(), 3U);
    EXPECT_EQ(g.pools()[0]->name(), "app.test:3000");
    EXPECT_EQ(address_of(g.pools()[0]), "10.0.0.1");
    EXPECT_EQ(g.pools()[1]->name(), "app.test:3000");
    EXPECT_EQ(address_of(g.pools()[1]), "::1");
    EXPECT_EQ(g.pools()[2]->name(), "127.0.0.1:9000");
}

TEST_F(UpstreamGroupNamesTest, AChangedAnswerKeepsAddsAndDrainsPoolsAtTheNextPick) {
    names->set("app.test", {ip::make_address("10.0.0.1"), ip::make_address("10.0.0.2")});
    upstream_settings s;
    s.servers = server_address::of_host("app.test", 3000);
    upstream_group g(io, poller, registry, s, nullptr, names);
    const auto kept = g.pools()[1]; // 10.0.0.2
    const auto gone = g.pools()[0]; // 10.0.0.1
    auto in_flight = gone->open();  // a request on the address that goes
    names->set("app.test", {ip::make_address("10.0.0.2"), ip::make_address("10.0.0.3")});
    EXPECT_EQ(g.pools().size(), 2U); // nothing changes before a request looks
    (void)g.pick();
    ASSERT_EQ(g.pools().size(), 2U);
    EXPECT_EQ(g.pools()[0], kept);
    EXPECT_EQ(address_of(g.pools()[1]), "10.0.0.3");
    EXPECT_FALSE(kept->stopped());
    EXPECT_TRUE(gone->stopped()); // drained: no new request, the one in flight ends normally
    EXPECT_EQ(gone->busy_count(), 1U);
    gone->give_back(in_flight, std::chrono::seconds(60), false); // closed, not pooled
    EXPECT_EQ(gone->idle_count(), 0U);
    EXPECT_EQ(gone->metrics().closes_of(upstream_close::removed), 1);
    for (int i = 0; i < 4; ++i)
        EXPECT_NE(g.pick(), gone);
}

TEST_F(UpstreamGroupNamesTest, ANameWithoutAnAnswerHasNoServerYet) {
    upstream_settings s;
    s.servers = server_address::of_host("app.test", 3000);
    upstream_group g(io, poller, registry, s, nullptr, names);
    EXPECT_EQ(g.pick(), nullptr);
    names->set("app.test", {ip::make_address("10.0.0.1")});
    EXPECT_NE(g.pick(), nullptr);
}

TEST_F(UpstreamGroupNamesTest, ANameNeedsATable) {
    upstream_settings s;
    s.servers = server_address::of_host("app.test", 3000);
    EXPECT_THROW(upstream_group(io, poller, registry, s), std::invalid_argument);
}

TEST(ServerAddressTest, LocalhostIsBothLoopbacksAndANameIsNamed) {
    const auto local = server_address::of_host("localhost", 3000);
    ASSERT_EQ(local.size(), 2U);
    EXPECT_EQ(local[0].name, "127.0.0.1:3000");
    EXPECT_EQ(local[1].name, "[::1]:3000");
    const auto numeric = server_address::of_host("10.0.0.1", 80);
    ASSERT_EQ(numeric.size(), 1U);
    EXPECT_FALSE(numeric[0].named());
    const auto named = server_address::of_host("app.internal", 80);
    ASSERT_EQ(named.size(), 1U);
    EXPECT_TRUE(named[0].named());
    EXPECT_EQ(named[0].name, "app.internal:80");
}

} // namespace
} // namespace tarry::upstream

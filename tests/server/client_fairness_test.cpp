// Fairness per client: max_connections_per_client, and pressure taking idle connections from
// the client holding the most. Clients are told apart by their loopback source address
// (127.0.0.2, 127.0.0.3, ...), or by the PROXY header a balancer sends.
#include "server_fixture.hpp"

#include <tarry/server/client_table.hpp>

#include <arpa/inet.h>

#include <memory>
#include <string>
#include <vector>

namespace tarry::test {
namespace {

using server::close_reason;

std::uint32_t v4(const char* text) {
    in_addr a{};
    ::inet_pton(AF_INET, text, &a);
    return a.s_addr;
}

in6_addr v6(const char* text) {
    in6_addr a{};
    ::inet_pton(AF_INET6, text, &a);
    return a;
}

TEST(ClientKeyTest, AnAddressIsItsOwnClientAndAPrefixJoinsItsNetwork) {
    const server::client_prefixes whole{32, 128};
    EXPECT_NE(whole.of_v4(v4("192.0.2.1")), whole.of_v4(v4("192.0.2.2")));
    EXPECT_NE(whole.of_v6(v6("2001:db8::1")), whole.of_v6(v6("2001:db8::2")));
    const server::client_prefixes nets{24, 64};
    EXPECT_EQ(nets.of_v4(v4("192.0.2.1")), nets.of_v4(v4("192.0.2.254")));
    EXPECT_NE(nets.of_v4(v4("192.0.2.1")), nets.of_v4(v4("192.0.3.1")));
    EXPECT_EQ(nets.of_v6(v6("2001:db8:0:1::1")), nets.of_v6(v6("2001:db8:0:1:ffff::9")));
    EXPECT_NE(nets.of_v6(v6("2001:db8:0:1::1")), nets.of_v6(v6("2001:db8:0:2::1")));
    // Prefixes that do not end on a byte.
    const server::client_prefixes odd{20, 61};
    EXPECT_EQ(odd.of_v4(v4("10.1.0.0")), odd.of_v4(v4("10.1.15.255")));
    EXPECT_NE(odd.of_v4(v4("10.1.0.0")), odd.of_v4(v4("10.1.16.0")));
    EXPECT_EQ(odd.of_v6(v6("2001:db8:0:0::")), odd.of_v6(v6("2001:db8:0:7::")));
    EXPECT_NE(odd.of_v6(v6("2001:db8:0:0::")), odd.of_v6(v6("2001:db8:0:8::")));
    // An IPv4 client of a dual-stack socket: its IPv4 prefix.
    EXPECT_EQ(nets.of_v6(v6("::ffff:192.0.2.1")), nets.of_v6(v6("::ffff:192.0.2.200")));
    EXPECT_NE(nets.of_v6(v6("::ffff:192.0.2.1")), nets.of_v6(v6("::ffff:192.0.9.1")));
    // What a connection keeps of an IPv6 client's key gives the key back.
    const auto k = nets.of_v6(v6("2001:db8::1"));
    EXPECT_TRUE(server::is_v6(k));
    EXPECT_EQ(server::v6_key(static_cast<std::uint32_t>(k)), k);
    EXPECT_FALSE(server::is_v6(nets.of_v4(v4("192.0.2.1"))));
}

TEST(ClientTableTest, CountsUpToTheLimitAndForgetsAClientWithItsLastConnection) {
    server::client_table t;
    const server::client_key a = 1;
    const server::client_key b = 2;
    EXPECT_TRUE(t.admit(a, 2));
    EXPECT_TRUE(t.admit(a, 2));
    EXPECT_FALSE(t.admit(a, 2));
    EXPECT_EQ(t.held(a), 2U);
    EXPECT_TRUE(t.admit(b, 2));
    t.leave(a);
    EXPECT_TRUE(t.admit(a, 2));
    t.leave(a);
    t.leave(a);
    t.leave(b);
    EXPECT_EQ(t.clients(), 0U);
    for (int i = 0; i < 1000; ++i)
        EXPECT_TRUE(t.admit(a, 0)); // 0: no limit
}

using ClientFairnessTest = ServerTest;

/// n connections from `source`, each used once and left idle.
std::vector<std::unique_ptr<test_client>> idle_from(std::uint16_t port, const char* source, int n) {
    std::vector<std::unique_ptr<test_client>> held;
    for (int i = 0; i < n; ++i) {
        held.push_back(std::make_unique<test_client>(port, 0, source));
        EXPECT_TRUE(held.back()->connected()) << source;
        EXPECT_TRUE(held.back()->send(get));
        const auto r = held.back()->read_response(3s);
        EXPECT_TRUE(r && r->status == 200) << source << " #" << i;
    }
    return held;
}

TEST_F(ClientFairnessTest, AClientOverItsLimitGetsA503ItCanReadAndTheOthersAreServed) {
    cfg.max_connections_per_client = 3;
    start();
    auto mine = idle_from(port, "127.0.0.2", 3);
    for (int round = 0; round < 3; ++round) {
        // The request comes with the connection, as a browser sends it: read, then refused.
        test_client over(port, 0, "127.0.0.2");
        ASSERT_TRUE(over.send(get));
        const auto r = over.read_response(3s);
        ASSERT_TRUE(r) << "the refusal was not readable (a reset?)";
        EXPECT_EQ(r->status, 503);
        EXPECT_TRUE(r->has("Connection: close"));
        EXPECT_TRUE(over.wait_closed(3s));
    }
    EXPECT_EQ(closes(*srv, close_reason::per_client), 3);
    // Another client is not affected, and those held still work.
    auto other = idle_from(port, "127.0.0.3", 3);
    ASSERT_TRUE(mine[0]->send(get));
    ASSERT_TRUE(mine[0]->read_response(3s));
    // One given back: the next is served.
    mine.pop_back();
    ASSERT_TRUE(eventually([&] {
        test_client again(port, 0, "127.0.0.2");
        if (!again.send(get)) return false;
        const auto r = again.read_response(3s);
        return r && r->status == 200;
    }));
}

TEST_F(ClientFairnessTest, ARefusedClientBehindABalancerIsTheOneItsProxyHeaderNames) {
    cfg.listen.at(0).proxy_protocol = true;
    cfg.max_connections_per_client = 2;
    start();
    const auto through = [&](const std::string& client) {
        auto c = std::make_unique<test_client>(port); // every one from the balancer's address
        EXPECT_TRUE(c->send("PROXY TCP4 " + client + " 127.0.0.1 40000 80\r\n" + get));
        return std::make_pair(std::move(c), c->read_response(3s));
    };
    auto [a1, r1] = through("192.0.2.7");
    auto [a2, r2] = through("192.0.2.7");
    auto [a3, r3] = through("192.0.2.7");
    auto [b1, rb] = through("198.51.100.1");
    ASSERT_TRUE(r1 && r2 && r3 && rb);
    EXPECT_EQ(r1->status, 200);
    EXPECT_EQ(r2->status, 200);
    EXPECT_EQ(r3->status, 503);
    EXPECT_EQ(rb->status, 200) << "a second client behind the same balancer";
    // IPv6 clients through the header, counted as their /64.
    auto [c1, rc1] = std::make_pair(std::make_unique<test_client>(port), std::optional<response>{});
    ASSERT_TRUE(c1->send("PROXY TCP6 2001:db8:0:1::5 ::1 40000 80\r\n" + get));
    rc1 = c1->read_response(3s);
    test_client c2(port);
    ASSERT_TRUE(c2.send("PROXY TCP6 2001:db8:0:1::6 ::1 40000 80\r\n" + get));
    test_client c3(port);
    ASSERT_TRUE(c3.send("PROXY TCP6 2001:db8:0:1::7 ::1 40000 80\r\n" + get));
    const auto rc2 = c2.read_response(3s);
    const auto rc3 = c3.read_response(3s);
    ASSERT_TRUE(rc1 && rc2 && rc3);
    EXPECT_EQ(rc1->status, 200);
    EXPECT_EQ(rc2->status, 200);
    EXPECT_EQ(rc3->status, 503) << "the third of one /64";
    // The counts go with the connections: once closed, the client is welcome again.
    a1.reset();
    a2.reset();
    c1.reset();
    ASSERT_TRUE(eventually([&] {
        auto [again, r] = through("192.0.2.7");
        return r && r->status == 200;
    }));
}

TEST_F(ClientFairnessTest, PressureTakesTheIdleConnectionsOfTheClientHoldingTheMostFirst) {
    // Ten ordinary clients with two idle connections each, the oldest on the server; then one
    // client that fills the rest of the limit with two thousand. Newcomers at the limit take the
    // large holder's connections, not the oldest: every ordinary client keeps its two.
    constexpr int large_holding = 2000;
    cfg.max_connections = 20 + large_holding;
    cfg.keep_alive_min_timeout = 50ms;
    cfg.keep_alive_timeout = 60s;
    start();
    std::vector<std::string> sources;
    for (int i = 0; i < 10; ++i)
        sources.push_back("127.0.0." + std::to_string(10 + i));
    std::vector<std::unique_ptr<test_client>> ordinary;
    for (const auto& s : sources)
        for (auto& c : idle_from(port, s.c_str(), 2))
            ordinary.push_back(std::move(c));
    auto large = idle_from(port, "127.0.0.2", large_holding);
    ASSERT_TRUE(eventually([&] { return srv->workers()[0]->connections() == 20 + large_holding; }));
    std::this_thread::sleep_for(100ms); // the quiet time pressure waits for: the setup
    std::vector<std::unique_ptr<test_client>> newcomers; // they stay: each meets the limit
    for (int i = 0; i < 10; ++i) {
        const std::string source = "127.0.0." + std::to_string(50 + i);
        newcomers.push_back(std::make_unique<test_client>(port, 0, source.c_str()));
        ASSERT_TRUE(newcomers.back()->send(get));
        const auto r = newcomers.back()->read_response(3s);
        ASSERT_TRUE(r) << "newcomer " << i;
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_GE(closes(*srv, close_reason::pressure), 10);
    EXPECT_GE(srv->workers()[0]->metrics().pressure_by_client.get(), 10);
    for (std::size_t i = 0; i < ordinary.size(); ++i) {
        ASSERT_TRUE(ordinary[i]->send(get)) << "ordinary connection " << i;
        const auto r = ordinary[i]->read_response(3s);
        ASSERT_TRUE(r) << "ordinary connection " << i << " was taken";
        EXPECT_EQ(r->status, 200);
    }
    // The ten taken were the large holder's, its oldest (among the first the look reaches).
    int taken = 0;
    for (std::size_t i = 0; i < 32; ++i)
        if (large[i]->wait_closed(20ms)) ++taken;
    EXPECT_GE(taken, 10);
}

using ClientFairnessReloadTest = ServerFromFileTest;

TEST_F(ClientFairnessReloadTest, AReloadThatWidensTheClientPrefixCountsEveryConnectionAgain) {
    const auto port = free_port();
    const std::string base =
        "listen = \"127.0.0.1:" + std::to_string(port) + "\"\nmax_connections_per_client = 4\n";
    write(base);
    start();
    ASSERT_TRUE(eventually([&] { return test_client(port).connected(); }));
    auto a = idle_from(port, "127.0.0.2", 2);
    auto b = idle_from(port, "127.0.0.3", 2);
    // One /24 now: the four held make the network's limit, so a fifth from it is refused.
    write(base + "client_prefix_v4 = 24\n");
    ASSERT_TRUE(srv->request_reload().get());
    {
        test_client over(port, 0, "127.0.0.4");
        ASSERT_TRUE(over.send(get));
        const auto r = over.read_response(3s);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 503);
    }
    // Back to whole addresses: each holds two of its four.
    write(base);
    ASSERT_TRUE(srv->request_reload().get());
    auto more = idle_from(port, "127.0.0.2", 2);
    EXPECT_EQ(closes(*srv, close_reason::per_client), 1);
}

} // namespace
} // namespace tarry::test

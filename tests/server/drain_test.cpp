// Behind a load balancer: what a stopping instance, an old connection and a request that meets
// its keep-alive deadline do, so that a balancer reusing connections loses nothing.
#include "server_fixture.hpp"

#include <algorithm>
#include <future>
#include <vector>

namespace tarry::test {
namespace {

using DrainTest = ServerTest;

std::string admin_get(std::uint16_t port, const std::string& path) {
    test_client c(port);
    c.send("GET " + path + " HTTP/1.1\r\nHost: admin\r\n\r\n");
    auto r = c.read_response();
    return r ? std::to_string(r->status) : "none";
}

TEST_F(DrainTest, IdleConnectionsCloseSpreadOverTheWindow) {
    cfg.close_spread_time = 600ms;
    cfg.keep_alive_min_timeout = 0s;
    start();
    std::vector<std::unique_ptr<test_client>> idle;
    for (int i = 0; i < 12; ++i) {
        idle.push_back(std::make_unique<test_client>(port));
        ASSERT_TRUE(idle.back()->send(get));
        ASSERT_TRUE(idle.back()->read_response());
    }
    const auto stop = steady::now();
    srv->stop();
    std::vector<steady::duration> at;
    for (auto& c : idle) {
        const auto closed = c->wait_closed(10s);
        ASSERT_TRUE(closed);
        at.push_back(*closed - stop);
    }
    std::sort(at.begin(), at.end());
    EXPECT_GE(at.front(), 30ms); // the first at 1/12 of the window, not at once
    EXPECT_GE(at.back(), 500ms); // the last near the end of it
    runner.join();
    srv.reset();
}

TEST_F(DrainTest, ARequestOnAnIdleConnectionDuringTheSpreadIsAnsweredWithClose) {
    cfg.close_spread_time = 1s;
    cfg.keep_alive_min_timeout = 0s;
    start();
    std::vector<std::unique_ptr<test_client>> idle;
    for (int i = 0; i < 4; ++i) {
        idle.push_back(std::make_unique<test_client>(port));
        ASSERT_TRUE(idle.back()->send(get));
        ASSERT_TRUE(idle.back()->read_response());
    }
    srv->stop();
    // The stop has reached the worker: its listener is closed.
    ASSERT_TRUE(eventually([&] { return !test_client(port).connected(); }));
    // The balancer has not noticed yet and reuses the last connection: it is answered.
    ASSERT_TRUE(idle.back()->send(get));
    auto r = idle.back()->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Connection: close"));
    EXPECT_TRUE(idle.back()->wait_closed(2s));
    runner.join();
    srv.reset();
}

TEST_F(DrainTest, ARecentlyUsedConnectionGetsItsQuietTimeFirst) {
    cfg.close_spread_time = 50ms;
    cfg.keep_alive_min_timeout = 700ms;
    start();
    test_client c(port);
    ASSERT_TRUE(c.send(get));
    ASSERT_TRUE(c.read_response());
    const auto answered = steady::now();
    srv->stop();
    const auto closed = c.wait_closed(5s);
    ASSERT_TRUE(closed);
    EXPECT_GE(*closed - answered, 650ms);
    runner.join();
    srv.reset();
}

TEST_F(DrainTest, HealthzSays503AsSoonAsAStopBegins) {
    cfg.admin_listen = server::listen_address{"127.0.0.1", 0};
    cfg.close_spread_time = 0s;
    custom.push_back({"/stream", [this](server::handler_context& h) {
                          return std::make_shared<slow_stream>(
                              h.io, slow_stream::shape{3, 10, 600ms, 10ms}, counts);
                      }});
    start();
    const auto admin = srv->admin_endpoint()->port();
    EXPECT_EQ(admin_get(admin, "/healthz"), "200");
    test_client busy(port);
    ASSERT_TRUE(busy.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(eventually([&] { return counts.alive == 1; })); // the answer has begun
    srv->stop();
    EXPECT_TRUE(eventually([&] { return admin_get(admin, "/healthz") == "503"; }));
    EXPECT_EQ(counts.finished, 0) << "the request was no longer in flight";
    auto r = busy.read_response();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->has("Connection: close"));
    runner.join();
    srv.reset();
}

TEST_F(DrainTest, PastItsAgeTheNextResponseClosesAndAnIdleOneIsLeftAlone) {
    cfg.max_connection_age = 300ms;
    cfg.keep_alive_timeout = 5s;
    start();
    test_client c(port);
    ASSERT_TRUE(c.send(get));
    auto first = c.read_response();
    ASSERT_TRUE(first);
    EXPECT_FALSE(first->has("Connection: close"));
    std::this_thread::sleep_for(600ms); // idle past its age: not closed for it
    EXPECT_FALSE(c.wait_closed(10ms));
    ASSERT_TRUE(c.send(get));
    auto second = c.read_response();
    ASSERT_TRUE(second);
    EXPECT_TRUE(second->has("Connection: close"));
    EXPECT_TRUE(c.wait_closed(2s));
}

TEST_F(DrainTest, ARequestWaitingAtTheKeepAliveDeadlineIsServed) {
    cfg.keep_alive_timeout = 300ms;
    start();
    for (int round = 0; round < 3; ++round) {
        test_client c(port);
        ASSERT_TRUE(c.send(get));
        ASSERT_TRUE(c.read_response());
        // Hold the worker past the deadline while the next request arrives: when it runs
        // again, the expiry and the request are both there.
        std::promise<void> held;
        srv->workers()[0]->post([&held] {
            std::this_thread::sleep_for(500ms);
            held.set_value();
        });
        // By design: the request comes mid-hold.
        std::this_thread::sleep_for(150ms);
        ASSERT_TRUE(c.send(get)); // 150 ms after the response: well within 300 ms
        held.get_future().wait();
        auto r = c.read_response(2s);
        ASSERT_TRUE(r) << "round " << round;
        EXPECT_EQ(r->status, 200);
    }
}

} // namespace
} // namespace tarry::test

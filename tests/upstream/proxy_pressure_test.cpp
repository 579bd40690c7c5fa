// The proxy under pressure, where client connections and upstream connections share a worker's
// timeout registry: at the connection limit, at the descriptor limit and across a reload, with
// the default durations that make kinds meet (header_timeout 60 s is also the upstream's idle,
// response and read timeout). Reclaiming must take client connections that are idle and
// nothing else: never an upstream connection taken for a client, never a client mid-request.
#include "thread_backend.hpp"

#include <tarry/server/config.hpp>

namespace tarry::test {
namespace {

class ProxyPressureTest : public ThreadBackendProxyTest {
protected:
    std::int64_t client_closes(server::close_reason r) { return closes(*srv, r); }
    std::size_t connections() { return srv->workers()[0]->connections(); }

    /// `n` requests at once, answered together: `n` upstream connections, then idle in the
    /// pool, and no client connection left.
    void fill_pool(int n) {
        backend->hold_until = backend->requests + n;
        std::vector<std::unique_ptr<test_client>> cs;
        for (int i = 0; i < n; ++i) {
            cs.push_back(std::make_unique<test_client>(port));
            ASSERT_TRUE(cs.back()->send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
        }
        for (auto& c : cs) {
            auto r = c->read_response();
            ASSERT_TRUE(r);
            ASSERT_EQ(r->status, 200);
        }
        cs.clear();
        ASSERT_TRUE(eventually([&] { return metrics().idle.get() == n; }));
        ASSERT_TRUE(eventually([&] { return connections() == 0; }));
    }

    /// `n` clients whose requests the backend holds: their upstream connections wait for a
    /// response (60 s, like header_timeout).
    std::vector<std::unique_ptr<test_client>> held(int n) {
        backend->hold_until = 1'000'000;
        std::vector<std::unique_ptr<test_client>> cs;
        const int before = backend->requests;
        for (int i = 0; i < n; ++i) {
            cs.push_back(std::make_unique<test_client>(port));
            EXPECT_TRUE(cs.back()->send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n"));
        }
        EXPECT_TRUE(eventually([&] { return backend->requests == before + n; }));
        return cs;
    }

    std::vector<std::unique_ptr<test_client>> silent(int n) {
        std::vector<std::unique_ptr<test_client>> cs;
        for (int i = 0; i < n; ++i) {
            cs.push_back(std::make_unique<test_client>(port));
            EXPECT_TRUE(cs.back()->connected());
        }
        return cs;
    }

    static int count_closed(const std::vector<std::unique_ptr<test_client>>& cs) {
        int n = 0;
        for (const auto& c : cs)
            if (c->wait_closed(20ms)) ++n;
        return n;
    }
};

// The crash found: silent clients at the limit share the 60 s lists with pooled and busy
// upstream connections, and pressure took an upstream connection for a client connection.
TEST_F(ProxyPressureTest, AtTheConnectionLimitOnlyIdleClientsAreReclaimed) {
    cfg.max_connections = 8;
    start_with({});
    fill_pool(4);
    auto busy = held(2);                // two pooled connections now wait for a response
    ASSERT_EQ(metrics().idle.get(), 2); // two still idle in the pool
    auto quiet = silent(6);             // the limit: 2 busy + 6 silent clients
    ASSERT_TRUE(eventually([&] { return connections() == 8; }));
    std::this_thread::sleep_for(150ms); // past the silent grace (a tenth of 1 s)

    std::vector<std::unique_ptr<test_client>> newcomers;
    for (int i = 0; i < 3; ++i) {
        newcomers.push_back(std::make_unique<test_client>(port));
        ASSERT_TRUE(newcomers.back()->send("GET /new HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(
            eventually([&] { return client_closes(server::close_reason::pressure) == i + 1; }));
    }
    backend->hold_until = 0;
    for (auto& c : busy) {
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    for (auto& c : newcomers) {
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    // Three silent clients made room, oldest first; no upstream connection was touched.
    EXPECT_EQ(client_closes(server::close_reason::pressure), 3);
    EXPECT_TRUE(eventually([&] { return count_closed(quiet) == 3; }));
    EXPECT_TRUE(quiet[0]->closed());
    EXPECT_FALSE(quiet[5]->closed());
    EXPECT_EQ(metrics().closes_of(upstream::upstream_close::pressure), 0);
    EXPECT_EQ(metrics().errors_of(upstream::upstream_error::reset), 0);
}

TEST_F(ProxyPressureTest, AtTheDescriptorLimitBusyUpstreamConnectionsAreNotTakenForClients) {
    start_with({});
    auto busy = held(2); // nothing idle in the pool: relief must come from the clients
    auto quiet = silent(3);
    std::this_thread::sleep_for(150ms); // past the silent grace (a tenth of 1 s)
    std::optional<test_client> newcomer;
    {
        const descriptor_limit limit; // one spare: the newcomer's socket; none for the accept
        newcomer.emplace(port);
        ASSERT_TRUE(newcomer->connected());
        ASSERT_TRUE(eventually([&] { return client_closes(server::close_reason::pressure) == 1; }));
    }
    EXPECT_TRUE(quiet[0]->wait_closed(5s));
    ASSERT_TRUE(newcomer->send("GET /new HTTP/1.1\r\nHost: t\r\n\r\n"));
    backend->hold_until = 0;
    auto r = newcomer->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    for (auto& c : busy) {
        auto b = c->read_response();
        ASSERT_TRUE(b);
        EXPECT_EQ(b->status, 200);
    }
    EXPECT_EQ(metrics().errors_of(upstream::upstream_error::reset), 0);
    EXPECT_EQ(count_closed(quiet), 1);
}

TEST_F(ProxyPressureTest, PressureThenAGracefulStopFinishesTheProxiedRequest) {
    cfg.max_connections = 4;
    start_with({});
    fill_pool(1);
    auto busy = held(1);
    auto quiet = silent(3);
    std::this_thread::sleep_for(150ms); // past the silent grace (a tenth of 1 s)
    test_client newcomer(port);
    ASSERT_TRUE(newcomer.send("GET /new HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(eventually([&] { return client_closes(server::close_reason::pressure) == 1; }));
    srv->stop(); // graceful: the held request and the newcomer's are answered with close
    // The stop has run on the worker once its listener refuses: only then may the answers come.
    ASSERT_TRUE(eventually([&] { return !test_client(port).connected(); }));
    backend->hold_until = 0;
    auto r = busy[0]->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Connection: close"));
    auto n = newcomer.read_response();
    ASSERT_TRUE(n);
    EXPECT_EQ(n->status, 200);
    EXPECT_TRUE(n->has("Connection: close"));
    runner.join();
    srv.reset();
    for (auto& c : quiet)
        EXPECT_TRUE(c->wait_closed(1s));
}

// Keep-alive clients churn the pool (connections taken, given back) while silent clients and
// newcomers keep the worker at its limit: every exchange is answered, nothing is freed twice
// (the sanitizer build checks), and pressure takes only clients.
TEST_F(ProxyPressureTest, PressureWhilePooledConnectionsAreTakenAndGivenBack) {
    cfg.max_connections = 8;
    cfg.keep_alive_min_timeout = 100ms; // so that keep-alive clients are reclaimable too
    start_with({});
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> users;
    for (int u = 0; u < 4; ++u) {
        users.emplace_back([&] {
            while (!stop) {
                test_client c(port);
                for (int i = 0; i < 20 && !stop; ++i) {
                    if (!c.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n")) break;
                    auto r = c.read_response();
                    if (!r) break; // reclaimed while idle, or retired: reconnect
                    (r->status == 200 ? answered : failed)++;
                    if (r->has("Connection: close")) break;
                    std::this_thread::sleep_for(std::chrono::milliseconds(5 * (i % 4)));
                }
            }
        });
    }
    std::thread crowd([&] {
        while (!stop) {
            auto quiet = silent(8);
            std::this_thread::sleep_for(120ms);
        }
    });
    // Until enough has happened under pressure (or a generous deadline).
    eventually([&] { return answered > 100 && client_closes(server::close_reason::pressure) > 2; },
               30s);
    stop = true;
    for (auto& t : users)
        t.join();
    crowd.join();
    EXPECT_GT(answered, 50);
    EXPECT_EQ(failed, 0);
    EXPECT_GT(client_closes(server::close_reason::pressure), 0);
    EXPECT_EQ(metrics().closes_of(upstream::upstream_close::pressure), 0);
    EXPECT_EQ(metrics().busy.get(), 0);
}

/// The server from a configuration file (what a reload re-reads), proxying "/" to a backend.
class ProxyReloadTest : public ServerFromFileTest {
protected:
    thread_backend backend{{}};
    std::uint16_t port = free_port();

    void write(const std::string& top) {
        ServerFromFileTest::write(
            "listen = \"127.0.0.1:" + std::to_string(port) + "\"\n" + top +
            "[[route]]\nprefix = \"/\"\nupstream = \"app\"\n"
            "[upstream.app]\nservers = [\"127.0.0.1:" +
            std::to_string(backend.port()) +
            "\"]\nidle_timeout = \"20002ms\"\nresponse_timeout = \"20002ms\"\n");
    }
};

// keep_alive_timeout 20 s is a 20,002 ms list; the upstream's response_timeout and the silent
// client's header_timeout are 20,002 ms too. A reload that shortens keep_alive_timeout moves
// the idle client and nothing else: neither the upstream connection waiting for its response
// (which would answer 504 at the new deadline) nor the silent client.
TEST_F(ProxyReloadTest, AReloadMovesIdleClientsOnlyWhateverElseHasTheirDuration) {
    write("keep_alive_timeout = \"20s\"\nheader_timeout = \"20002ms\"\n");
    start();
    test_client idle(port);
    const auto answered = steady::now();
    ASSERT_TRUE(idle.send(get));
    auto r = idle.read_response();
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    backend.hold_until = 1'000'000;
    test_client waiting(port); // its upstream connection waits 20,002 ms for the response
    ASSERT_TRUE(waiting.send(get));
    test_client quiet(port); // accepted, sends nothing: 20,002 ms from its accept
    ASSERT_TRUE(quiet.connected());
    std::this_thread::sleep_for(400ms); // time waited under the old timeout, by design

    write("keep_alive_timeout = \"600ms\"\nheader_timeout = \"20002ms\"\n");
    ASSERT_TRUE(srv->request_reload().get());

    const auto closed = idle.wait_closed(10s);
    ASSERT_TRUE(closed);
    EXPECT_GE(*closed - answered, 600ms); // and within the 10 s waited, not the old 20 s
    // Had it moved too, the silent client would close by the idle one's deadline and a bit.
    EXPECT_FALSE(quiet.wait_closed(1s)) << "the silent client was moved with the idle ones";
    backend.hold_until = 0;
    auto w = waiting.read_response();
    ASSERT_TRUE(w);
    EXPECT_EQ(w->status, 200) << "the upstream's wait was moved with the idle clients";
}

// Pressure at the limit, a reload in the middle of it, pressure again: the retired and the
// reclaimable kinds follow the new keep-alive duration, and newcomers keep being served.
TEST_F(ProxyReloadTest, PressureDuringAReload) {
    write(
        "max_connections = 4\nkeep_alive_timeout = \"20s\"\nkeep_alive_min_timeout = \"100ms\"\n");
    start();
    {
        // Four upstream connections at once, then idle in the pool: the oldest entries of
        // their duration, which is the keep-alive one (20,002 ms).
        backend.hold_until = 4;
        std::vector<std::unique_ptr<test_client>> cs;
        for (int i = 0; i < 4; ++i) {
            cs.push_back(std::make_unique<test_client>(port));
            ASSERT_TRUE(cs.back()->send(get));
        }
        for (auto& c : cs)
            ASSERT_TRUE(c->read_response());
    }
    eventually([&] { return srv->workers()[0]->connections() == 0; });
    std::vector<std::unique_ptr<test_client>> kept;
    for (int i = 0; i < 4; ++i) { // the limit, all keep-alive after one request each
        kept.push_back(std::make_unique<test_client>(port));
        ASSERT_TRUE(kept.back()->send(get));
        ASSERT_TRUE(kept.back()->read_response());
    }
    std::this_thread::sleep_for(150ms); // past keep_alive_min_timeout
    test_client first(port);
    ASSERT_TRUE(first.send(get));
    auto f = first.read_response();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->status, 200);
    EXPECT_TRUE(kept[0]->wait_closed(2s)); // the oldest idle made room

    write(
        "max_connections = 4\nkeep_alive_timeout = \"10s\"\nkeep_alive_min_timeout = \"100ms\"\n");
    auto reloaded = srv->request_reload();
    test_client second(port); // during or right after the reload
    ASSERT_TRUE(second.send(get));
    ASSERT_TRUE(reloaded.get());
    auto s = second.read_response();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->status, 200);
    std::this_thread::sleep_for(150ms); // past keep_alive_min_timeout
    test_client third(port);
    ASSERT_TRUE(third.send(get));
    auto t = third.read_response();
    ASSERT_TRUE(t);
    EXPECT_EQ(t->status, 200);
    int closed = 0;
    for (auto& c : kept)
        if (c->wait_closed(20ms)) ++closed;
    EXPECT_GE(closed, 2);
}

} // namespace
} // namespace tarry::test

// Upgrade tunnels through the proxy, end to end: a real WebSocket application (the `ws` package,
// tests/upstream/ws_backend.js) behind, a real WebSocket client (Beast's) in front.
#include "upstream/proxy_fixture.hpp"

#include <tarry/upstream/proxy_handler.hpp>
#include <tarry/upstream/upstream_group.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include <fcntl.h>

#include <atomic>
#include <sstream>
#include <thread>
#include <vector>

namespace tarry::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using upstream::tunnel_close;

/// A WebSocket client through the proxy, every read bounded by SO_RCVTIMEO.
class ws_client {
public:
    ws_client(std::uint16_t port, const std::string& path) : ws_(io_) {
        tcp::socket& s = ws_.next_layer();
        s.connect({asio::ip::make_address("127.0.0.1"), port});
        timeval t{5, 0};
        ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
        ws_.handshake("t", path, ec_);
    }
    [[nodiscard]] bool open() const { return !ec_; }
    [[nodiscard]] boost::system::error_code error() const { return ec_; }

    bool send(const std::string& message, bool binary = false) {
        ws_.binary(binary);
        ws_.write(asio::buffer(message), ec_);
        return !ec_;
    }
    std::optional<std::string> receive() {
        beast::flat_buffer b;
        ws_.read(b, ec_);
        if (ec_) return std::nullopt;
        return beast::buffers_to_string(b.data());
    }
    bool ping() {
        ws_.ping({}, ec_);
        return !ec_;
    }
    void close() { ws_.close(websocket::close_code::normal, ec_); }
    websocket::stream<tcp::socket>& stream() { return ws_; }

private:
    asio::io_context io_;
    websocket::stream<tcp::socket> ws_;
    boost::system::error_code ec_;
};

const std::string upgrade_raw = "GET /raw HTTP/1.1\r\nHost: t\r\nUpgrade: tarry-raw\r\n"
                                "Connection: Upgrade\r\n\r\n";

class ProxyTunnelTest : public ProxyTest {
protected:
    node_backend app{5000, {}, TARRY_WS_BACKEND_JS};

    void SetUp() override {
        ASSERT_TRUE(app.started()) << "node with the ws package (tests/upstream: npm ci)";
        ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(app.port()))};
    }

    std::int64_t closes(tunnel_close why) { return metrics().tunnel_closes_of(why); }
    std::int64_t tunnels() { return metrics().tunnels.get(); }

    /// The application's own count of open WebSockets.
    int app_open() {
        test_client c(app.port());
        c.send("GET /stats HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto r = c.read_response();
        if (!r) return -1;
        const auto at = r->body.find("\"open\":");
        return at == std::string::npos ? -1 : std::stoi(r->body.substr(at + 7));
    }
};

TEST_F(ProxyTunnelTest, AWebSocketEchoesTextAndBinaryBothWaysThenClosesCleanly) {
    start();
    ws_client ws(port, "/echo");
    ASSERT_TRUE(ws.open()) << ws.error().message();
    EXPECT_EQ(tunnels(), 1);
    EXPECT_EQ(metrics().busy.get(), 0) << "a tunnel is not a busy pooled connection";
    for (int i = 0; i < 20; ++i) {
        const std::string text = "hello " + std::to_string(i);
        ASSERT_TRUE(ws.send(text));
        EXPECT_EQ(ws.receive(), text);
    }
    std::string binary(1000, '\0');
    for (std::size_t i = 0; i < binary.size(); ++i)
        binary[i] = static_cast<char>(i * 7);
    ASSERT_TRUE(ws.send(binary, true));
    EXPECT_EQ(ws.receive(), binary);
    EXPECT_GT(metrics().tunnel_bytes_up.get(), 1000);
    EXPECT_GT(metrics().tunnel_bytes_down.get(), 1000);

    ws.close(); // the close handshake, then the server closes, then the client
    EXPECT_FALSE(ws.error()) << ws.error().message();
    EXPECT_TRUE(eventually([&] { return tunnels() == 0; }));
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::done) == 1; }));
    EXPECT_TRUE(eventually([&] { return app_open() == 0; }));
}

TEST_F(ProxyTunnelTest, ALargeMessageCrossesBothWaysIntact) {
    start();
    ws_client ws(port, "/echo");
    ASSERT_TRUE(ws.open()) << ws.error().message();
    std::string big(8 << 20, '\0');
    std::uint32_t x = 12345;
    for (char& c : big) {
        x = x * 1103515245 + 12345;
        c = static_cast<char>(x >> 24);
    }
    ASSERT_TRUE(ws.send(big, true));
    const auto back = ws.receive();
    ASSERT_TRUE(back.has_value()) << ws.error().message();
    EXPECT_TRUE(*back == big) << back->size();
    EXPECT_GE(metrics().tunnel_bytes_up.get(), 8 << 20);
    EXPECT_GE(metrics().tunnel_bytes_down.get(), 8 << 20);
}

TEST_F(ProxyTunnelTest, AnIdleTunnelIsClosedAtItsTimeoutOnBothSides) {
    ups.tunnel_idle_timeout = 300ms;
    start();
    ws_client ws(port, "/echo");
    ASSERT_TRUE(ws.open()) << ws.error().message();
    // From before the last message: the tunnel's quiet starts with the last byte through it
    // (the echo), so this is never shorter than what the tunnel waited.
    const auto quiet = steady::now();
    ASSERT_TRUE(ws.send("one"));
    EXPECT_EQ(ws.receive(), "one");
    EXPECT_FALSE(ws.receive().has_value()) << "the tunnel closes: the read fails";
    const auto after = steady::now() - quiet;
    EXPECT_GE(after, 300ms);
    // Closed at the timeout, not by the read's own 5 s: the close is counted as the timeout's.
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::idle_timeout) == 1; }));
    EXPECT_TRUE(eventually([&] { return app_open() == 0; })) << "the upstream side closes too";
    EXPECT_EQ(tunnels(), 0);
}

TEST_F(ProxyTunnelTest, PingsKeepAQuietTunnelAliveAndABusyOneIsKept) {
    ups.tunnel_idle_timeout = 400ms;
    start();
    ws_client pinged(port, "/echo");
    ws_client busy(port, "/echo");
    ASSERT_TRUE(pinged.open() && busy.open());
    // Three timeouts' worth: pings (answered by the application's pongs) on one, messages on
    // the other, each every 100 ms.
    for (int i = 0; i < 12; ++i) {
        ASSERT_TRUE(pinged.ping());
        ASSERT_TRUE(busy.send("tick"));
        ASSERT_EQ(busy.receive(), "tick");
        std::this_thread::sleep_for(100ms);
    }
    bool ponged = false;
    pinged.stream().control_callback([&](websocket::frame_type kind, beast::string_view) {
        ponged |= kind == websocket::frame_type::pong;
    });
    ASSERT_TRUE(pinged.send("still here"));
    EXPECT_EQ(pinged.receive(), "still here");
    EXPECT_TRUE(ponged);
    EXPECT_EQ(closes(tunnel_close::idle_timeout), 0);
    EXPECT_EQ(tunnels(), 2);
}

TEST_F(ProxyTunnelTest, AnUpgradeRefusedByTheApplicationIsAnOrdinaryResponse) {
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /refuse HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\n\r\n"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 403);
    EXPECT_EQ(r->body, "refused");
    // Still HTTP: the next request on the connection is answered as one.
    ASSERT_TRUE(c.send("GET /plain HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto next = c.read_response();
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(next->body, "plain GET /plain upgrade=none");
    EXPECT_EQ(tunnels(), 0);
}

TEST_F(ProxyTunnelTest, BytesAfterTheRequestAndHalfClosesPassBothWays) {
    start();
    test_client c(port);
    // The first bytes of the new protocol come with the request, before the 101.
    ASSERT_TRUE(c.send(upgrade_raw + "early,"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 101);
    EXPECT_TRUE(r->has("Upgrade: tarry-raw")) << r->head;
    EXPECT_TRUE(r->has("Connection: upgrade")) << r->head;
    EXPECT_EQ(r->head.find("Content-Length"), std::string::npos) << r->head;
    EXPECT_EQ(r->head.find("Transfer-Encoding"), std::string::npos) << r->head;
    ASSERT_TRUE(c.send("late"));
    // The client half-closes: the application hears the end, answers, and half-closes too.
    ASSERT_TRUE(eventually([&] { return metrics().tunnel_bytes_down.get() >= 10; }));
    c.shutdown_write();
    ASSERT_TRUE(c.wait_closed(5s).has_value());
    EXPECT_EQ(c.pending(), "early,latebye:10");
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::done) == 1; }));
    EXPECT_EQ(tunnels(), 0);
}

TEST_F(ProxyTunnelTest, ATunnelIsBoundedWhenTheClientSendsButDoesNotRead) {
    start();
    test_client c(port, 64 << 10);
    ASSERT_TRUE(c.send(upgrade_raw));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 101);
    // The application echoes everything; this client does not read. Its sends must stall once
    // the buffers on the way are full. Most of those are the kernel's: loopback receive buffers
    // grow to net.ipv4.tcp_rmem's maximum (32 MiB on some machines, three of them on the way),
    // so the test waits for the stall (no byte taken for a second) rather than bounding the
    // bytes, and fails if 1 GiB goes without one.
    ::fcntl(c.fd(), F_SETFL, ::fcntl(c.fd(), F_GETFL) | O_NONBLOCK);
    const std::string chunk(64 << 10, 'z');
    const std::int64_t before = heap_in_use();
    constexpr std::size_t cap = std::size_t{1} << 30;
    std::size_t sent = 0;
    bool stalled = false;
    const auto deadline = steady::now() + 60s;
    auto progressed = steady::now();
    while (sent < cap && steady::now() < deadline) {
        const ssize_t n = ::send(c.fd(), chunk.data(), chunk.size(), MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            progressed = steady::now();
            continue;
        }
        if (steady::now() - progressed > 1s) {
            stalled = true;
            break;
        }
        pollfd p{c.fd(), POLLOUT, 0};
        ::poll(&p, 1, 50);
    }
    EXPECT_TRUE(stalled) << "backpressure never reached the client: " << sent << " bytes sent";
    // What the proxy holds meanwhile is a few bounded buffers (64 KiB each way, the client's
    // read buffer grown for a burst), not what went through: the rest waits in the sockets.
    // (The heap, not the resident size: under the sanitizer freed blocks stay resident in its
    // quarantine, and the resident size grew with the bytes sent, to 22 MiB once.)
    EXPECT_LT(heap_in_use() - before, 2 << 20) << "sent " << sent;
    EXPECT_GT(metrics().tunnel_bytes_up.get(), 0);
    EXPECT_EQ(tunnels(), 1);
}

TEST_F(ProxyTunnelTest, TheTwoDirectionsFlowIndependently) {
    start();
    test_client c(port);
    ASSERT_TRUE(c.send("GET /flood?n=16777216 HTTP/1.1\r\nHost: t\r\nUpgrade: tarry-raw\r\n"
                       "Connection: Upgrade\r\n\r\n"));
    // The application streams 16 MB down, which this client does not read yet, while the client
    // sends 16 MB up: the way up must stay open while the way down is full (a client that
    // writes before it reads would otherwise wait for ever).
    ::fcntl(c.fd(), F_SETFL, ::fcntl(c.fd(), F_GETFL) | O_NONBLOCK);
    const std::string chunk(64 << 10, 'u');
    std::size_t sent = 0;
    const auto deadline = steady::now() + 30s;
    auto progressed = steady::now();
    while (sent < (16u << 20) && steady::now() < deadline) {
        if (steady::now() - progressed > 3s) break; // no byte taken for 3 s: stalled
        const ssize_t n =
            ::send(c.fd(), chunk.data(), std::min(chunk.size(), (16u << 20) - sent), MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            progressed = steady::now();
            continue;
        }
        pollfd p{c.fd(), POLLOUT, 0};
        ::poll(&p, 1, 50);
    }
    ASSERT_EQ(sent, 16u << 20) << "the way up stalled behind the way down; the proxy took "
                               << metrics().tunnel_bytes_up.get() << " up, gave "
                               << metrics().tunnel_bytes_down.get() << " down";
    ::fcntl(c.fd(), F_SETFL, ::fcntl(c.fd(), F_GETFL) & ~O_NONBLOCK);
    c.shutdown_write();
    // Everything down, then the count of what went up, then the close.
    std::size_t down = 0;
    std::string tail;
    char buf[1 << 16];
    for (;;) {
        pollfd p{c.fd(), POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) break;
        const ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
        if (n <= 0) break;
        down += static_cast<std::size_t>(n);
        tail.append(buf, static_cast<std::size_t>(n));
        if (tail.size() > 64) tail.erase(0, tail.size() - 64);
    }
    const std::string got = "got:" + std::to_string(16u << 20);
    EXPECT_TRUE(tail.ends_with(got)) << tail;
    EXPECT_GE(down, (16u << 20) + got.size()); // and the 101's head
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::done) == 1; }));
}

TEST_F(ProxyTunnelTest, AnUpgradeOnARouteThatRefusesUpgradesGoesUpAsAnOrdinaryRequest) {
    custom.push_back({"/", [this](server::handler_context& h) {
                          proxy = std::make_shared<upstream::proxy_handler>(
                              std::make_shared<upstream::upstream_group>(h.io, h.poll, h.registry,
                                                                         ups, h.upstreams),
                              false);
                          return proxy;
                      }});
    ServerTest::start();
    ws_client ws(port, "/echo");
    EXPECT_FALSE(ws.open()) << "no 101 without the Upgrade field";
    test_client c(port);
    ASSERT_TRUE(c.send("GET /echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\n\r\n"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "plain GET /echo upgrade=none");
    EXPECT_EQ(tunnels(), 0);
}

TEST_F(ProxyTunnelTest, AClientThatGoesAwayClosesTheUpstreamSide) {
    start();
    {
        ws_client ws(port, "/echo");
        ASSERT_TRUE(ws.open());
        ASSERT_TRUE(ws.send("x"));
        ASSERT_EQ(ws.receive(), "x");
        const linger reset{1, 0}; // a reset, not a close handshake
        ::setsockopt(ws.stream().next_layer().native_handle(), SOL_SOCKET, SO_LINGER, &reset,
                     sizeof reset);
    }
    EXPECT_TRUE(eventually([&] { return tunnels() == 0; }));
    EXPECT_EQ(closes(tunnel_close::client_close), 1);
    EXPECT_TRUE(eventually([&] { return app_open() == 0; }));
}

// At an explicit connection limit, tunnels count like any other connection and are never taken
// for pressure (a tunnel's client cannot be told Connection: close): newcomers past the bound
// (a sixteenth of the limit, at least one) wait in the backlog, and go in as tunnels end.
TEST_F(ProxyTunnelTest, AConnectionLimitHoldsWithTunnelsOpenAndTheRestGoInAsTheyEnd) {
    cfg.workers = 1;
    cfg.max_connections = 4;
    cfg.keep_alive_min_timeout = 100ms;
    start();
    std::vector<std::unique_ptr<test_client>> cs;
    for (int i = 0; i < 8; ++i) {
        cs.push_back(std::make_unique<test_client>(port));
        ASSERT_TRUE(cs.back()->send(upgrade_raw));
    }
    std::this_thread::sleep_for(1500ms); // retries every 100 ms: many chances to go past
    EXPECT_EQ(srv->workers()[0]->connections(), 5U);
    EXPECT_EQ(tunnels(), 5);
    for (int i = 0; i < 5; ++i) {
        auto r = cs[static_cast<std::size_t>(i)]->read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 101) << i;
    }
    for (int i = 0; i < 3; ++i)
        cs[static_cast<std::size_t>(i)].reset();
    for (int i = 5; i < 8; ++i) {
        auto r = cs[static_cast<std::size_t>(i)]->read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 101) << i;
    }
    EXPECT_TRUE(eventually([&] { return tunnels() == 5; }));
    EXPECT_EQ(srv->workers()[0]->connections(), 5U);
    EXPECT_EQ(closes(tunnel_close::idle_timeout), 0);
}

// A tunnel's request state goes back to the thread's free list when it ends; its mode once
// went with it, and the next connection to take that state was shut or cut short.
TEST_F(ProxyTunnelTest, TheConnectionsAfterAnEndedTunnelAreOrdinaryHttp) {
    cfg.workers = 1; // every connection on the thread whose free list the tunnel's state joined
    start();
    const std::string two_gets = "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n"
                                 "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n";
    const auto next_connection_answers_twice = [&](const char* after) {
        for (int i = 0; i < 3; ++i) {
            test_client c(port);
            ASSERT_TRUE(c.send(two_gets)) << after;
            for (int n = 0; n < 2; ++n) {
                const auto r = c.read_response();
                ASSERT_TRUE(r.has_value()) << after << ": connection " << i << ", response " << n;
                EXPECT_EQ(r->status, 200) << after;
            }
        }
    };
    { // the client half-closes, the application answers and closes
        test_client c(port);
        ASSERT_TRUE(c.send(upgrade_raw + "x"));
        ASSERT_EQ(c.read_response()->status, 101);
        c.shutdown_write();
        ASSERT_TRUE(c.wait_closed(5s).has_value());
    }
    ASSERT_TRUE(eventually([&] { return tunnels() == 0; }));
    next_connection_answers_twice("after a half-close");
    { // a close handshake
        ws_client ws(port, "/echo");
        ASSERT_TRUE(ws.open());
        ws.close();
    }
    ASSERT_TRUE(eventually([&] { return tunnels() == 0; }));
    next_connection_answers_twice("after a close handshake");
    { // a reset
        ws_client ws(port, "/echo");
        ASSERT_TRUE(ws.open());
        const linger reset{1, 0};
        ::setsockopt(ws.stream().next_layer().native_handle(), SOL_SOCKET, SO_LINGER, &reset,
                     sizeof reset);
    }
    ASSERT_TRUE(eventually([&] { return tunnels() == 0; }));
    next_connection_answers_twice("after a reset");
}

TEST_F(ProxyTunnelTest, AGracefulStopClosesOpenTunnelsAtTheDrainTimeout) {
    cfg.drain_timeout = 300ms;
    start();
    ws_client ws(port, "/echo");
    ASSERT_TRUE(ws.open());
    ASSERT_TRUE(ws.send("x"));
    ASSERT_EQ(ws.receive(), "x");
    const auto asked = steady::now();
    srv->stop();
    EXPECT_FALSE(ws.receive().has_value());
    const auto took = steady::now() - asked;
    EXPECT_GE(took, 250ms) << "a tunnel is given the drain timeout";
    runner.join();
    srv.reset();
    EXPECT_EQ(closes(tunnel_close::shutdown), 1) << "closed by the stop, at the drain timeout";
    EXPECT_TRUE(eventually([&] { return app_open() == 0; }));
}

/// The server from a configuration file (what a reload re-reads), proxying "/" to the WebSocket
/// application.
class ProxyTunnelReloadTest : public ServerFromFileTest {
protected:
    node_backend app{5000, {}, TARRY_WS_BACKEND_JS};
    std::uint16_t port = free_port();

    void write_config(const std::string& top = {}) {
        write("listen = \"127.0.0.1:" + std::to_string(port) + "\"\n" + top +
              "[[route]]\nprefix = \"/\"\nupstream = \"app\"\n"
              "[upstream.app]\nservers = [\"127.0.0.1:" +
              std::to_string(app.port()) + "\"]\n");
    }
    double upstream_sample(const std::string& family, const std::string& more = {}) {
        return sample(srv->metrics(), family + "{server=\"127.0.0.1:" + std::to_string(app.port()) +
                                          "\"" + more + "}");
    }
};

// A reload builds new upstream pools, while the tunnels opened before it go on through the old
// ones. The upstream counters are the server's across the reload: not reset, the tunnels still
// counted open, their closes counted when they end (a reload once read every upstream series as
// 0, two open tunnels as none, and their closes were never counted).
TEST_F(ProxyTunnelReloadTest, AReloadNeitherResetsTheUpstreamCountersNorForgetsOpenTunnels) {
    ASSERT_TRUE(app.started()) << "node with the ws package (tests/upstream: npm ci)";
    write_config();
    start();
    ws_client a(port, "/echo");
    ws_client b(port, "/echo");
    ASSERT_TRUE(a.open() && b.open());
    ASSERT_TRUE(a.send("before"));
    EXPECT_EQ(a.receive(), "before");
    EXPECT_EQ(upstream_sample("tarry_upstream_tunnels"), 2);
    EXPECT_EQ(upstream_sample("tarry_upstream_requests_total"), 2);

    write("this is not toml ["); // a rejected reload first, then a good one
    ASSERT_FALSE(srv->request_reload().get());
    write_config("keep_alive_timeout = \"30s\"\n");
    ASSERT_TRUE(srv->request_reload().get());

    EXPECT_EQ(upstream_sample("tarry_upstream_tunnels"), 2) << srv->metrics();
    EXPECT_EQ(upstream_sample("tarry_upstream_requests_total"), 2);
    ASSERT_TRUE(b.send("after"));
    EXPECT_EQ(b.receive(), "after");
    ws_client c(port, "/echo"); // through the new pool
    ASSERT_TRUE(c.open());
    EXPECT_EQ(upstream_sample("tarry_upstream_tunnels"), 3);
    EXPECT_EQ(upstream_sample("tarry_upstream_requests_total"), 3);

    a.close();
    b.close();
    c.close();
    ASSERT_TRUE(eventually([&] { return upstream_sample("tarry_upstream_tunnels") == 0; }))
        << srv->metrics();
    const double ended =
        upstream_sample("tarry_upstream_tunnel_closes_total", ",reason=\"done\"") +
        upstream_sample("tarry_upstream_tunnel_closes_total", ",reason=\"client_close\"");
    EXPECT_EQ(ended, 3) << srv->metrics();
    EXPECT_GT(upstream_sample("tarry_upstream_tunnel_bytes_total", ",direction=\"up\""), 0);
}

/// The sum of every series of `family` whose labels include `label` (Prometheus text).
double sum_of(const std::string& metrics, const std::string& family, const std::string& label) {
    double total = 0;
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with(family + "{") && line.find(label) != std::string::npos)
            total += std::stod(line.substr(line.rfind(' ') + 1));
    return total;
}

// Thirty reloads 50 ms apart, alternating between the application alone and a dead server
// before it, while three clients keep requests going: every request is answered 200 (a dead
// server's refusal is retried on the live one), no counter goes down, and once the storm is
// over every upstream connection ever opened is either open or counted closed (the old pools'
// idle connections were once closed uncounted).
TEST_F(ProxyTunnelReloadTest, AReloadStormUnderLoadLosesNoRequestAndNoConnectionGoesUncounted) {
    const std::uint16_t dead = free_port();
    const std::string live = "127.0.0.1:" + std::to_string(app.port());
    const auto config = [&](bool with_dead) {
        write("listen = \"127.0.0.1:" + std::to_string(port) +
              "\"\n[[route]]\nprefix = \"/\"\nupstream = \"app\"\n[upstream.app]\nservers = [" +
              (with_dead ? "\"127.0.0.1:" + std::to_string(dead) + "\", " : std::string()) + "\"" +
              live + "\"]\n");
    };
    ASSERT_TRUE(app.started()) << "node with the ws package (tests/upstream: npm ci)";
    config(false);
    start();
    ASSERT_TRUE(eventually([&] { return test_client(port).connected(); }));
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    std::vector<std::string> failures(3);
    std::vector<std::thread> clients;
    for (std::size_t t = 0; t < 3; ++t)
        clients.emplace_back([&, t] {
            while (!stop && failures[t].empty()) {
                test_client c(port);
                for (int i = 0; i < 5 && failures[t].empty(); ++i) {
                    const auto r = c.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n") ? c.read_response()
                                                                                : std::nullopt;
                    if (!r || r->status != 200)
                        failures[t] = r ? r->head : "no answer";
                    else
                        ++answered;
                }
            }
        });
    const auto family = [&](const std::string& f) { return sum_of(srv->metrics(), f, live); };
    double opened = 0, requests = 0;
    for (int i = 0; i < 30; ++i) {
        config(i % 2 == 0);
        const int answered_before = answered;
        ASSERT_TRUE(srv->request_reload().get()) << i;
        // Traffic under this configuration before the next one.
        EXPECT_TRUE(eventually([&] { return answered > answered_before + 3; })) << i;
        const double o = family("tarry_upstream_connections_opened_total");
        const double r = family("tarry_upstream_requests_total");
        EXPECT_GE(o, opened) << i;
        EXPECT_GE(r, requests) << i;
        opened = o;
        requests = r;
    }
    stop = true;
    for (auto& c : clients)
        c.join();
    for (const auto& f : failures)
        EXPECT_EQ(f, "");
    EXPECT_GT(answered.load(), 30);
    config(false);
    ASSERT_TRUE(srv->request_reload().get()); // the last old pools go with their last requests
    const auto accounted = [&] {
        const std::string m = srv->metrics();
        const double open = sum_of(m, "tarry_upstream_connections", live);
        const double closed = sum_of(m, "tarry_upstream_closes_total", live);
        return sum_of(m, "tarry_upstream_connections_opened_total", live) == open + closed;
    };
    EXPECT_TRUE(eventually(accounted)) << srv->metrics();
    EXPECT_EQ(sum_of(srv->metrics(), "tarry_upstream_connections", live + "\",state=\"busy"), 0);
}

} // namespace
} // namespace tarry::test

// WebSockets over HTTP/2 (RFC 8441), end to end: Python's h2 (python3-h2,
// tests/server/h2_websocket_client.py) opens each WebSocket as an extended CONNECT on an h2c
// (or h2 over TLS) connection, and a real WebSocket application (the `ws` package,
// tests/upstream/ws_backend.js) behind the proxy gets an HTTP/1.1 GET with Upgrade; its 101
// becomes the stream's 200 and the stream's DATA the tunnel's bytes, under the stream's flow
// control and the tunnel's idle timeout.
#include "upstream/proxy_fixture.hpp"
#include "upstream/thread_backend.hpp"

#include <tarry/http/exchange.hpp>
#include <tarry/http/handler.hpp>
#include <tarry/upstream/proxy_handler.hpp>
#include <tarry/upstream/upstream_group.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

using namespace std::chrono_literals;

namespace tarry::test {
namespace {

using upstream::tunnel_close;
using h2_counters = server::worker_metrics::h2_counters;

/// A sum of the workers' HTTP/2 counters: `pick` chooses one.
template <class Pick> std::int64_t h2_metric(server::server& s, Pick pick) {
    std::int64_t n = 0;
    for (auto& w : s.workers())
        n += pick(w->metrics().h2).get();
    return n;
}

class H2WebSocketTest : public ProxyTest {
protected:
    node_backend app{5000, {}, TARRY_WS_BACKEND_JS};
    bool tls = false;
    std::filesystem::path certs =
        std::filesystem::temp_directory_path() / ("tarry_h2ws_" + std::to_string(::getpid()));

    void SetUp() override {
        ASSERT_TRUE(app.started()) << "node with the ws package (tests/upstream: npm ci)";
        ups.servers = {upstream::server_address::parse("127.0.0.1:" + std::to_string(app.port()))};
        cfg.http2 = true;
    }
    ~H2WebSocketTest() override {
        std::error_code ec;
        std::filesystem::remove_all(certs, ec);
    }

    void use_tls() {
        tls = true;
        const run_result made =
            run_shell("sh " TARRY_TLS_ASSETS "/make_certs.sh " + certs.string());
        ASSERT_EQ(made.status, 0) << made.output;
        server::listen_address a("127.0.0.1", 0);
        a.tls = true;
        cfg.listen = {a};
        cfg.tls_certificate = certs / "default.pem";
        cfg.tls_certificate_key = certs / "default.key";
    }

    [[nodiscard]] run_result python(const std::string& args) const {
        return run_shell("/usr/bin/python3 " TARRY_H2_WS_CLIENT " " + std::to_string(port) +
                         (tls ? " --tls " : " ") + args);
    }

    std::int64_t closes(tunnel_close why) { return metrics().tunnel_closes_of(why); }
    std::int64_t tunnels() { return metrics().tunnels.get(); }
    std::int64_t h2_tunnels() {
        return h2_metric(
            *srv, [](h2_counters & h) -> auto& { return h.tunnels; });
    }

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

TEST_F(H2WebSocketTest, TheServerAnnouncesExtendedConnect) {
    start();
    const run_result r = python("settings");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "enable_connect 1\n");
}

TEST_F(H2WebSocketTest, MessagesEchoBothWaysThenTheCloseHandshakeEndsTheStream) {
    start();
    const run_result r = python("echo /echo");
    ASSERT_EQ(r.status, 0) << r.output;
    // 200 without the 101's Sec-WebSocket-Accept, Upgrade, Connection, and no length.
    EXPECT_EQ(r.output, "200\nfields: none\nechoed\nclosed\n");
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::done) == 1; }));
    EXPECT_TRUE(eventually([&] { return app_open() == 0; }));
    EXPECT_GT(metrics().tunnel_bytes_up.get(), 1000);
    EXPECT_GT(metrics().tunnel_bytes_down.get(), 1000);
    EXPECT_EQ(h2_metric(
                  *srv, [](h2_counters & h) -> auto& { return h.tunnels_total; }),
              1);
    EXPECT_TRUE(eventually([&] { return h2_tunnels() == 0 && tunnels() == 0; }));
}

TEST_F(H2WebSocketTest, OverTlsAsBrowsersUseIt) {
    use_tls();
    start();
    const run_result r = python("echo /echo");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "200\nfields: none\nechoed\nclosed\n");
}

TEST_F(H2WebSocketTest, ALargeMessageCrossesTheFlowControlWindows) {
    start();
    // 3 MB each way: many times the stream's 64 KB windows and the connection's.
    const run_result r = python("big 3000000 /echo");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "big 3000000 ok\n");
    EXPECT_GE(metrics().tunnel_bytes_up.get(), 3000000);
    EXPECT_GE(metrics().tunnel_bytes_down.get(), 3000000);
}

TEST_F(H2WebSocketTest, AnIdleTunnelIsResetAtItsIdleTimeout) {
    // RST_STREAM(CANCEL): the timeout closes the upstream connection at once, without the close
    // handshake, which RFC 8441 5 maps to a reset (an orderly end would be END_STREAM); the
    // stream's body timeout does not apply to a tunnel, so it is the tunnel's that ends it.
    ups.tunnel_idle_timeout = 300ms;
    cfg.body_timeout = 100ms;
    start();
    const run_result r = python("idle /echo");
    ASSERT_EQ(r.status, 0) << r.output;
    ASSERT_EQ(r.output.substr(0, r.output.find('\n')), "reset CANCEL") << r.output;
    const auto at = r.output.find("quiet ");
    ASSERT_NE(at, std::string::npos) << r.output;
    EXPECT_GE(std::stoi(r.output.substr(at + 6)), 300);
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::idle_timeout) == 1; }));
    EXPECT_TRUE(eventually([&] { return app_open() == 0; })) << "the upstream side closes too";
    EXPECT_TRUE(eventually([&] { return h2_tunnels() == 0; }));
}

TEST_F(H2WebSocketTest, AResetFromTheClientClosesTheUpstreamAndTheConnectionGoesOn) {
    start();
    const run_result r = python("reset /echo " + std::to_string(app.port()));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "upstream closed\n200\n");
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::client_close) == 1; }));
    EXPECT_TRUE(eventually([&] { return tunnels() == 0 && h2_tunnels() == 0; }));
}

TEST_F(H2WebSocketTest, HalfClosesPassBothWaysAsEndStream) {
    start();
    // The client's END_STREAM is the upstream's half-close: it answers "bye:5" and closes,
    // which ends the stream with END_STREAM.
    const run_result r = python("raw /raw tarry-raw");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "200\nhellobye:5\nended\n");
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::done) == 1; }));
}

TEST_F(H2WebSocketTest, TheUpstreamClosingFirstEndsTheStreamWhileTheClientStillSends) {
    start();
    const run_result r = python("first /first");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "200\nfirst\nended\nsent\n");
    EXPECT_TRUE(eventually([&] {
        test_client c(app.port());
        c.send("GET /stats HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto s = c.read_response();
        return s && s->body.find("\"after_end\":4") != std::string::npos;
    })) << "the bytes sent after the upstream's half-close reach it";
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::done) == 1; }));
}

TEST_F(H2WebSocketTest, SeveralWebSocketsBesideOrdinaryRequestsOnOneConnection) {
    start();
    const run_result r = python("many 8 /echo /plain");
    ASSERT_EQ(r.status, 0) << r.output;
    std::string expected = "8 websockets ok\n";
    for (int i = 0; i < 8; ++i)
        expected += "200 plain GET /plain upgrade=none\n";
    EXPECT_EQ(r.output, expected);
    EXPECT_EQ(h2_metric(
                  *srv, [](h2_counters & h) -> auto& { return h.tunnels_total; }),
              8);
}

TEST_F(H2WebSocketTest, AnUpgradeRefusedByTheApplicationIsTheStreamsAnswer) {
    start();
    const run_result r = python("status /refuse");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "403 refused\n");
    EXPECT_EQ(tunnels(), 0);
    EXPECT_EQ(h2_tunnels(), 0);
}

TEST_F(H2WebSocketTest, ARouteThatPassesNoUpgradeRefusesIt) {
    custom.push_back({"/", [this](server::handler_context& h) {
                          proxy = std::make_shared<upstream::proxy_handler>(
                              std::make_shared<upstream::upstream_group>(h.io, h.poll, h.registry,
                                                                         ups, h.upstreams),
                              false);
                          return proxy;
                      }});
    ServerTest::start();
    const run_result r = python("status /echo");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "501 Not Implemented\n");
    EXPECT_EQ(app_open(), 0);
}

// Dead-peer detection (http2_ping_interval): a quiet WebSocket outlives every other timeout, so a
// client gone without a FIN would hold it, and its upstream connection, until the tunnel's hour.

TEST_F(H2WebSocketTest, ADeadPeerIsPingedThenClosedWithItsTunnel) {
    cfg.http2_ping_interval = 200ms;
    cfg.http2_ack_timeout = 200ms;
    start();
    const run_result r = python("dead /echo");
    ASSERT_EQ(r.status, 0) << r.output;
    ASSERT_EQ(r.output.substr(0, r.output.find("quiet")), "ping\ngoaway 0\neof\n") << r.output;
    // The interval, then the bound: never sooner.
    EXPECT_GE(std::stoi(r.output.substr(r.output.find("quiet ") + 6)), 400) << r.output;
    EXPECT_TRUE(eventually([&] { return closes(tunnel_close::client_close) == 1; }));
    EXPECT_TRUE(eventually([&] { return app_open() == 0; })) << "the upstream side closes too";
    EXPECT_TRUE(eventually([&] {
        return h2_metric(
                   *srv, [](h2_counters & h) -> auto& { return h.connections; }) == 0;
    }));
    // The client's connection is counted under the bound that ran out.
    EXPECT_EQ(test::closes(*srv, server::close_reason::http2_ack_timeout), 1);
}

TEST_F(H2WebSocketTest, ALivePeerAnswersThePingsAndKeepsItsQuietWebSocket) {
    cfg.http2_ping_interval = 100ms;
    cfg.http2_ack_timeout = 200ms;
    start();
    const run_result r = python("live /echo 4");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "pings 4\nechoed\n");
    EXPECT_EQ(closes(tunnel_close::idle_timeout), 0);
}

/// A page whose script opens a WebSocket to /echo on its own origin, sends a message and shows
/// the echo in its title (what --dump-dom prints, at the load event). The page's image,
/// /page/hold, is answered only when /page/done comes, after the echo: the load event waits
/// for it, so the DOM is dumped after the echo.
class page_handler final : public http::handler {
public:
    void on_request(http::exchange& ex) override {
        const std::string_view target = ex.request().target;
        if (target == "/page/hold") {
            hold_.ex = &ex;
            ex.defer(hold_);
            return;
        }
        if (target == "/page/done") {
            ex.respond_text(200, "done\n");
            if (http::exchange* waiting = std::exchange(hold_.ex, nullptr))
                waiting->respond_text(200, "released\n");
            return;
        }
        static constexpr std::string_view page =
            "<!doctype html><html><head><title>waiting</title></head><body><script>\n"
            "const done = () => fetch('/page/done');\n"
            "const ws = new WebSocket('wss://' + location.host + '/echo');\n"
            "ws.onopen = () => ws.send('hello over h2');\n"
            "ws.onmessage = (e) => { document.title = 'echoed: ' + e.data; ws.close(); done(); };\n"
            "ws.onerror = () => { document.title = 'error'; done(); };\n"
            "</script><img src='/page/hold'></body></html>\n";
        http::response_head h;
        h.content_type = "text/html";
        h.content_length = page.size();
        ex.respond(h);
        ex.write(page);
        ex.finish();
    }

private:
    struct held final : http::deferred {
        void on_abort() noexcept override { ex = nullptr; }
        http::exchange* ex = nullptr;
    };
    held hold_;
};

TEST_F(H2WebSocketTest, HeadlessChromiumOpensItsWebSocketOnTheH2Connection) {
    use_tls();
    custom.push_back(
        {"/page", [](server::handler_context&) { return std::make_shared<page_handler>(); }});
    start();
    // The test CA's certificate is trusted by its key (Chromium has no CA file option).
    const std::string spki =
        run_shell("openssl x509 -in " + (certs / "default.pem").string() +
                  " -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 "
                  "-binary | base64")
            .output;
    ASSERT_EQ(spki.size(), 45U) << spki;
    const std::filesystem::path netlog = certs / "netlog.json";
    const run_result r = run_shell(
        "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--disable-dev-shm-usage --ignore-certificate-errors-spki-list=" +
        spki.substr(0, 44) + " --user-data-dir=" + (certs / "profile").string() +
        " --log-net-log=" + netlog.string() +
        " --dump-dom https://127.0.0.1:" + std::to_string(port) + "/page");
    EXPECT_NE(r.output.find("<title>echoed: hello over h2</title>"), std::string::npos) << r.output;
    // The WebSocket went over the page's h2 connection (an extended CONNECT), not a connection
    // of its own: the server counted it as an HTTP/2 tunnel.
    EXPECT_EQ(h2_metric(
                  *srv, [](h2_counters & h) -> auto& { return h.tunnels_total; }),
              1);
    std::ifstream in(netlog);
    const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(log.find(":protocol"), std::string::npos) << "the net log shows no :protocol";
}

class H2WebSocketBuiltInTest : public ServerTest {
protected:
    H2WebSocketBuiltInTest() { cfg.http2 = true; }
    ~H2WebSocketBuiltInTest() override {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }

    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("tarry_h2connect_" + std::to_string(::getpid()));

    /// A static-files route at "/", its index a page.
    void use_docroot() {
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "index.html") << "<p>index</p>\n";
        cfg.docroot = dir;
    }
    [[nodiscard]] run_result python(const std::string& args) const {
        return run_shell("/usr/bin/python3 " TARRY_H2_WS_CLIENT " " + std::to_string(port) + " " +
                         args);
    }
};

/// What an HTTP/1.1 CONNECT for `authority` gets on `port`: its status.
int http11_connect(std::uint16_t port, const std::string& authority) {
    test_client c(port);
    if (!c.send("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")) return 0;
    const auto r = c.read_response(5s);
    return r ? r->status : 0;
}

TEST_F(H2WebSocketBuiltInTest, ARouteWithoutTunnelsAnswersAsForAnyMethodItDoesNotTake) {
    start();
    const run_result r = python("status /echo");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.substr(0, 4), "405 ") << r.output;
}

// A plain CONNECT (RFC 9113 8.5: a tunnel to :authority, no :protocol) asks for a forward proxy,
// which tarry is not: HTTP/2 answers it as HTTP/1.1 does (501, whatever the route), and the
// connection goes on. nginx answers 405 to both.

TEST_F(H2WebSocketBuiltInTest, PlainConnectToTheBuiltInAnswerIsNotImplementedAsOverHttp11) {
    start();
    EXPECT_EQ(http11_connect(port, "example.com:443"), 501);
    const run_result r = python("connect example.com:443");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "501 Not Implemented\n200\n");
}

TEST_F(H2WebSocketBuiltInTest, PlainConnectToStaticFilesIsNotImplementedAsOverHttp11) {
    use_docroot();
    start();
    EXPECT_EQ(http11_connect(port, "example.com:443"), 501);
    const run_result r = python("connect example.com:443");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "501 Not Implemented\n200\n");
}

TEST_F(H2WebSocketBuiltInTest, ExtendedConnectOfAnotherProtocolToStaticFilesIsNotAllowed) {
    use_docroot();
    start();
    const run_result r = python("status / tarry-other");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "405 Method Not Allowed\n");
}

TEST_F(H2WebSocketBuiltInTest, ExtendedConnectOfAnotherProtocolToTheBuiltInAnswerIsNotAllowed) {
    start();
    const run_result r = python("status / tarry-other");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "405 Method Not Allowed\n");
}

/// The proxy in front of a backend that counts the requests it gets.
class H2ConnectProxyTest : public ThreadBackendProxyTest {
protected:
    H2ConnectProxyTest() { cfg.http2 = true; }
    [[nodiscard]] run_result python(const std::string& args) const {
        return run_shell("/usr/bin/python3 " TARRY_H2_WS_CLIENT " " + std::to_string(port) + " " +
                         args);
    }
};

TEST_F(H2ConnectProxyTest, PlainConnectIsNotImplementedAsOverHttp11AndNeverForwarded) {
    start_with({});
    EXPECT_EQ(http11_connect(port, "example.com:443"), 501);
    const run_result r = python("connect example.com:443");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "501 Not Implemented\n200\n");
    EXPECT_EQ(backend->requests.load(), 1) << "the GET after it alone";
}

// An extended CONNECT goes up as HTTP/1.1's GET with Upgrade (the ws application's tarry-raw
// tunnels above). An upstream that ignores the Upgrade answers as to a plain GET: over HTTP/1.1
// its 200 is the upgrade declined, but on an extended CONNECT a 2xx says the tunnel is open
// (RFC 8441 5), so the client hears 502 instead.
TEST_F(H2ConnectProxyTest, ExtendedConnectTheUpstreamDoesNotSwitchForIsABadGateway) {
    start_with({});
    const run_result r = python("status /x tarry-other");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "502 Bad Gateway\n");
    EXPECT_EQ(backend->requests.load(), 1);
    // The same upstream's 200 to HTTP/1.1's upgrade, declined: passed on as it is.
    test_client c(port);
    ASSERT_TRUE(c.send("GET /x HTTP/1.1\r\nHost: t\r\nUpgrade: tarry-other\r\n"
                       "Connection: upgrade\r\n\r\n"));
    const auto h1 = c.read_response(5s);
    ASSERT_TRUE(h1);
    EXPECT_EQ(h1->status, 200);
    EXPECT_EQ(h1->body, "ok");
}

} // namespace
} // namespace tarry::test

// HTTP/2 on the binary (`http2 = true`) against the clients people use, on real sockets, each
// for what h2_server_test and h2_proxy_test (curl and python3-h2, in process) leave out:
// headless Chromium loading a page of thirty assets over TLS (its net log shows them on one h2
// session; the access log says HTTP/2.0 for each), Node.js's http2 client (streams at once, a
// POST through the proxy to a Node.js application, h2c and TLS), nghttp (several URIs and a
// page's assets on one connection, the SETTINGS tarry sends), h2load (a short run, nothing
// lost), and curl reusing one TLS connection for several URLs.
#include "h2_binary.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tarry::test {
namespace {

/// A page that references ten style sheets, ten scripts and ten images (and its favicon): the
/// shape of a page a browser fetches on one connection. Each script counts itself, so the page
/// shows "scripts 10" once every script ran.
std::vector<std::string> make_page(const fs::path& www) {
    fs::create_directories(www);
    // The smallest PNG: one pixel.
    const std::string png = run_shell("printf '%s' iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
                                      "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg== | "
                                      "base64 -d")
                                .output;
    std::vector<std::string> assets;
    std::string head;
    std::string body;
    for (int i = 0; i < 10; ++i) {
        const std::string n = std::to_string(i);
        write_file(www / ("s" + n + ".css"), ".c" + n + " { color: #" + n + n + n + "; }\n");
        write_file(www / ("j" + n + ".js"), "window.loaded = (window.loaded || 0) + 1;\n");
        write_file(www / ("i" + n + ".png"), png);
        head += "<link rel=\"stylesheet\" href=\"/s" + n + ".css\">\n<script src=\"/j" + n +
                ".js\"></script>\n";
        body += "<img src=\"/i" + n + ".png\" class=\"c" + n + "\">\n";
        assets.insert(assets.end(), {"/s" + n + ".css", "/j" + n + ".js", "/i" + n + ".png"});
    }
    write_file(www / "favicon.ico", png);
    write_file(www / "index.html",
               "<!doctype html>\n<html><head><title>thirty assets</title>\n" + head +
                   "</head><body>\n" + body +
                   "<p id=\"n\"></p><script>document.getElementById('n').textContent = "
                   "'scripts ' + window.loaded;</script>\n</body></html>\n");
    return assets;
}

TEST(H2ChromiumTest, APageOfThirtyAssetsLoadsOnOneH2Session) {
    scratch_dir dir("h2_chromium");
    const std::vector<std::string> assets = make_page(dir / "www");
    h2_tarry t(dir.path(), "workers = 2\naccess_log = \"" + (dir / "access.log").string() +
                               "\"\ndocroot = \"" + (dir / "www").string() + "\"\n");
    ASSERT_TRUE(t.ready()) << t.log();
    // The certificate is trusted by its key (Chromium has no CA file option).
    const run_result spki =
        run_shell("openssl x509 -in " + (test_certs() / "default.pem").string() +
                  " -pubkey -noout | openssl pkey -pubin -outform der | "
                  "openssl dgst -sha256 -binary | base64");
    ASSERT_EQ(spki.output.size(), 45U) << spki.output;
    const fs::path netlog = dir / "netlog.json";
    const run_result dom = run_shell(
        "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--disable-dev-shm-usage --ignore-certificate-errors-spki-list=" +
        spki.output.substr(0, 44) + " --user-data-dir=" + (dir / "profile").string() +
        " --log-net-log=" + netlog.string() +
        " --net-log-capture-mode=Default --virtual-time-budget=5000 --dump-dom " + t.tls_url("/") +
        " 2>/dev/null");
    EXPECT_TRUE(has(dom.output, "scripts 10")) << dom.output; // every script ran

    // One HTTP/2 session to tarry carried the page and every asset, nothing went as HTTP/1.1.
    const run_result log = run_shell("/usr/bin/python3 " TARRY_H2_NETLOG " " + netlog.string());
    ASSERT_EQ(log.status, 0) << log.output;
    const std::string host = "localhost:" + std::to_string(t.tls_port);
    EXPECT_EQ(count(log.output, "session " + host + " "), 1U) << log.output;
    EXPECT_EQ(count(log.output, "session "), 1U) << log.output;
    const auto at = log.output.find("session " + host + " h2 ");
    ASSERT_NE(at, std::string::npos) << log.output;
    const long streams = std::stol(log.output.substr(at + 12 + host.size()));
    EXPECT_GE(streams, 31) << log.output; // the page and its thirty assets (and the favicon)
    EXPECT_TRUE(has(log.output, "h2_requests " + std::to_string(streams) + "\n")) << log.output;
    EXPECT_TRUE(has(log.output, "h1_requests 0\n")) << log.output;

    // Every asset answered 200 over HTTP/2 (the access log is flushed within a second).
    for (const std::string& path : assets)
        EXPECT_FALSE(
            log_line_with(dir / "access.log", "\"GET " + path + " HTTP/2.0\" 200 ").empty());
    (void)log_line_with(dir / "access.log", "\"GET / HTTP/2.0\" 200 ");
    const std::string m = t.metrics();
    EXPECT_GE(sample(m, "tarry_h2_streams_total"), 31) << m;
    EXPECT_FALSE(has(slurp(dir / "access.log"), "HTTP/1.1\"")) << slurp(dir / "access.log");
}

/// Node.js's http2 client (tests/server/h2_node_client.js): h2c with prior knowledge, or TLS
/// with ALPN h2 and the test CA.
class H2NodeTest : public ::testing::TestWithParam<bool> {
protected:
    scratch_dir dir{"h2_node"};
    node_app app;

    [[nodiscard]] run_result node(const h2_tarry& t, const std::string& args) const {
        const bool tls = GetParam();
        return run_shell("timeout 60 node " TARRY_H2_NODE_CLIENT " " +
                         (tls ? "https://127.0.0.1:" + std::to_string(t.tls_port) + " " +
                                    (test_certs() / "ca.pem").string()
                              : t.url("") + " -") +
                         " " + args);
    }
};

TEST_P(H2NodeTest, ConcurrentStreamsAndAPostThroughTheProxy) {
    ASSERT_NE(app.port(), 0) << "the application did not start";
    fs::create_directories(dir / "www");
    write_file(dir / "www" / "a.txt", std::string(100000, 'a'));
    h2_tarry t(dir.path(), "workers = 2\n" + app_routes(app, dir / "www"));
    ASSERT_TRUE(t.ready()) << t.log();
    const std::string alpn = GetParam() ? "\"alpn\":\"h2\"" : "\"alpn\":\"h2c\"";

    // Fifty GETs of a file at once on one session, each larger than a stream's window.
    const run_result files = node(t, "get 50 /a.txt");
    ASSERT_EQ(files.status, 0) << files.output;
    EXPECT_TRUE(has(files.output, alpn)) << files.output;
    EXPECT_TRUE(has(files.output, "\"sessions\":1,")) << files.output;
    EXPECT_EQ(count(files.output, "{\"status\":200,\"length\":100000,"), 50U) << files.output;
    EXPECT_TRUE(has(files.output, "\"errors\":[]")) << files.output;

    // Twenty at once through the proxy.
    const run_result proxied = node(t, "get 20 /app/x");
    ASSERT_EQ(proxied.status, 0) << proxied.output;
    EXPECT_EQ(count(proxied.output, "{\"status\":200,\"length\":2,\"body\":\"ok\"}"), 20U)
        << proxied.output;
    EXPECT_TRUE(has(proxied.output, "\"errors\":[]")) << proxied.output;

    // A 1 MB POST streamed with backpressure (max_body_bytes is 1 MiB), through the proxy to
    // the HTTP/1.1 application.
    const run_result post = node(t, "post 1000000 /app/upload");
    ASSERT_EQ(post.status, 0) << post.output;
    EXPECT_TRUE(has(post.output, "{\"status\":200,\"length\":7,\"body\":\"1000000\"}"))
        << post.output;
    EXPECT_TRUE(has(post.output, "\"errors\":[]")) << post.output;
}

INSTANTIATE_TEST_SUITE_P(PlainAndTls, H2NodeTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                             return p.param ? "Tls" : "H2c";
                         });

TEST(H2NghttpTest, SeveralUrisAndAPagesAssetsOnOneConnection) {
    scratch_dir dir("h2_nghttp");
    const std::vector<std::string> assets = make_page(dir / "www");
    h2_tarry t(dir.path(), "workers = 1\ndocroot = \"" + (dir / "www").string() + "\"\n");
    ASSERT_TRUE(t.ready()) << t.log();
    for (const bool tls : {false, true}) {
        SCOPED_TRACE(tls ? "TLS" : "h2c");
        const auto url = [&](const std::string& p) { return tls ? t.tls_url(p) : t.url(p); };
        // Two URIs: one connection (nghttp opens one per origin), both answered; the SETTINGS
        // tarry sends first.
        const run_result v =
            run_shell("timeout 30 nghttp -nv " + url("/s1.css") + " " + url("/j2.js"));
        ASSERT_EQ(v.status, 0) << v.output;
        EXPECT_EQ(count(v.output, "] Connected"), 1U) << v.output;
        EXPECT_EQ(count(v.output, ":status: 200"), 2U) << v.output;
        EXPECT_TRUE(has(v.output, "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):128]")) << v.output;
        EXPECT_TRUE(has(v.output, "recv SETTINGS frame <length=0, flags=0x01, stream_id=0>"))
            << v.output;                                        // our SETTINGS acknowledged
        EXPECT_FALSE(has(v.output, "recv GOAWAY")) << v.output; // nghttp sends its own at the end
        if (tls) {
            EXPECT_TRUE(has(v.output, "The negotiated protocol: h2")) << v.output;
        }

        // -a: the page, then every asset it references, on the same connection.
        const run_result a = run_shell("timeout 30 nghttp -nav " + url("/"));
        ASSERT_EQ(a.status, 0) << a.output;
        EXPECT_EQ(count(a.output, "] Connected"), 1U) << a.output;
        EXPECT_EQ(count(a.output, ":status: 200"), assets.size() + 1) << a.output;
        for (const std::string& path : assets)
            EXPECT_TRUE(has(a.output, ":path: " + path + "\n")) << path;
    }
}

TEST(H2LoadTest, AShortRunLosesNothingOnFilesAndThroughTheProxy) {
    scratch_dir dir("h2_h2load");
    node_app app;
    ASSERT_NE(app.port(), 0) << "the application did not start";
    fs::create_directories(dir / "www");
    write_file(dir / "www" / "a.txt", std::string(20000, 'a'));
    h2_tarry t(dir.path(), "workers = 2\n" + app_routes(app, dir / "www"));
    ASSERT_TRUE(t.ready()) << t.log();
    for (const std::string& target :
         {t.url("/a.txt"), t.tls_url("/a.txt"), t.url("/app/x"), t.tls_url("/app/x")}) {
        SCOPED_TRACE(target);
        const run_result r = run_shell("timeout 120 h2load -n 2000 -c 4 -m 16 " + target);
        ASSERT_EQ(r.status, 0) << r.output;
        EXPECT_TRUE(has(r.output, "2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout"))
            << r.output;
        EXPECT_TRUE(has(r.output, "status codes: 2000 2xx, 0 3xx, 0 4xx, 0 5xx")) << r.output;
        if (target.starts_with("https")) {
            EXPECT_TRUE(has(r.output, "Application protocol: h2")) << r.output;
        }
    }
    // The load left nothing behind: no stream open, and no GOAWAY but the ones h2load's own
    // closes ask for.
    EXPECT_TRUE(eventually([&] { return sample(t.metrics(), "tarry_h2_streams") == 0; }, 20s))
        << t.metrics();
    EXPECT_EQ(sample(t.metrics(), "tarry_h2_goaways_sent_total{code=\"ENHANCE_YOUR_CALM\"}"), -1)
        << t.metrics();
}

TEST(H2CurlTest, OneTlsConnectionForSeveralUrlsAndAPostThroughTheProxy) {
    scratch_dir dir("h2_curl");
    node_app app;
    ASSERT_NE(app.port(), 0) << "the application did not start";
    fs::create_directories(dir / "www");
    write_file(dir / "www" / "a.txt", "0123456789");
    h2_tarry t(dir.path(), "workers = 1\n" + app_routes(app, dir / "www"));
    ASSERT_TRUE(t.ready()) << t.log();
    // Three URLs, one connection: curl reuses it over TLS (the plain prior-knowledge one it
    // cannot, see docs/http2.md).
    const run_result r =
        run_shell("curl -sS -k --http2 --max-time 20 -o /dev/null -o /dev/null -o /dev/null -w "
                  "'%{http_version} %{response_code} %{num_connects}\\n' " +
                  t.tls_url("/a.txt") + " " + t.tls_url("/app/x") + " " + t.tls_url("/a.txt"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "2 200 1\n2 200 0\n2 200 0\n");
    // A POST with a body through the proxy, h2c and TLS.
    write_file(dir / "body.bin", std::string(300000, 'p'));
    for (const std::string& flags : {"--http2-prior-knowledge " + t.url("/app/upload"),
                                     "-k --http2 " + t.tls_url("/app/upload")}) {
        const run_result post = run_shell("curl -sS --max-time 20 -w ' %{http_version}' "
                                          "--data-binary @" +
                                          (dir / "body.bin").string() + " " + flags);
        EXPECT_EQ(post.output, "300000 2") << flags;
    }
}

} // namespace
} // namespace tarry::test

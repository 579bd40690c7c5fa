// Sites, redirects, headers and nginx's routing idioms on the binary, behind curl on real
// sockets: sites chosen by Host (and by HTTP/2's :authority), two sites with their own
// certificates over TLS (curl --resolve), a redirect chain followed by curl -L, fields on
// answers and errors, the redirect chain and Strict-Transport-Security in headless Chromium, an
// upstream route stripping its prefix, the single-page fallback, a
// reload that changes a site's names while requests run, and --check-config's one-line errors.
// Certificates are made at test time by tls/make_certs.sh (no private key is committed).
#include "tarry_process.hpp"
#include "test_certs.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;

void spit(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

bool has(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

std::string port_text(std::uint16_t p) {
    return std::to_string(p);
}

/// A site's document root with an index and one more file.
void site_root(const fs::path& dir, const std::string& name) {
    fs::create_directories(dir);
    spit(dir / "index.html", "index of " + name + "\n");
    spit(dir / "x.txt", "x of " + name + "\n");
}

launch_options no_listen() {
    launch_options o;
    o.listen = false;
    return o;
}

/// tarry on the addresses the configuration gives (a plain one first), waited for.
class server {
public:
    server(const fs::path& config, std::uint16_t plain)
        : process_({"--config", config.string()}, no_listen()) {
        ready_ = eventually([&] { return test_client(plain).connected(); }, 10s);
    }
    [[nodiscard]] bool ready() const noexcept { return ready_; }
    [[nodiscard]] pid_t pid() const noexcept { return process_.pid(); }

private:
    tarry_process process_;
    bool ready_ = false;
};

std::string curl(const std::string& args) {
    return run_shell("curl -sS --max-time 10 " + args).output;
}

class SitesTest : public ::testing::Test {
protected:
    scratch_dir dir{"sites"};
    std::uint16_t plain = free_port();
    std::uint16_t tls = free_port();

    void SetUp() override {
        site_root(dir / "a", "a");
        site_root(dir / "b", "b");
        site_root(dir / "top", "top");
    }
    [[nodiscard]] std::string url(const std::string& host, const std::string& path) const {
        return "-H 'Host: " + host + "' http://127.0.0.1:" + port_text(plain) + path;
    }
};

TEST_F(SitesTest, HostChoosesTheSiteWithoutPortCaseOrTrailingDot) {
    const fs::path cfg = dir / "t.toml";
    spit(cfg, "listen = [\"127.0.0.1:" + port_text(plain) + "\"]\n" + "docroot = \"" +
                  (dir / "top").string() +
                  "\"\n"
                  "[[site]]\nserver_names = [\"a.test\", \"*.a.test\"]\n"
                  "[[site.route]]\nprefix = \"/\"\ndocroot = \"" +
                  (dir / "a").string() +
                  "\"\n"
                  "[[site]]\nserver_names = [\"b.test\"]\n"
                  "[[site.route]]\nprefix = \"/\"\ndocroot = \"" +
                  (dir / "b").string() + "\"\n");
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    EXPECT_EQ(curl(url("a.test", "/")), "index of a\n");
    EXPECT_EQ(curl(url("A.Test.:" + port_text(plain), "/")), "index of a\n");
    EXPECT_EQ(curl(url("www.a.test", "/x.txt")), "x of a\n");
    EXPECT_EQ(curl(url("b.test:1234", "/x.txt")), "x of b\n");
    EXPECT_EQ(curl(url("c.test", "/")), "index of top\n");
    EXPECT_EQ(curl(url("deep.www.a.test", "/")), "index of top\n");
    EXPECT_EQ(curl("http://127.0.0.1:" + port_text(plain) + "/"), "index of top\n");
}

TEST_F(SitesTest, UnknownHostGets421WhenConfigured) {
    const fs::path cfg = dir / "t.toml";
    spit(cfg, "listen = [\"127.0.0.1:" + port_text(plain) +
                  "\"]\nunknown_host = \"421\"\n"
                  "[[site]]\nserver_names = [\"a.test\"]\n"
                  "[[site.route]]\nprefix = \"/\"\ndocroot = \"" +
                  (dir / "a").string() + "\"\n");
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' " + url("a.test", "/")), "200");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' " + url("c.test", "/")), "421");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' http://127.0.0.1:" + port_text(plain) + "/"),
              "421");
}

/// Plain to HTTPS, then a site's redirect to another site, over two certificates chosen by SNI.
class TlsSitesTest : public SitesTest {
protected:
    fs::path cfg = dir / "tls.toml";

    void SetUp() override {
        SitesTest::SetUp();
        const fs::path& c = test_certs();
        spit(cfg, "listen = [\"127.0.0.1:" + port_text(plain) + "\"]\n" +
                      "tls_listen = [\"127.0.0.1:" + port_text(tls) +
                      "\"]\nhttp2 = true\nhttps_redirect = true\n" + "tls_certificate = \"" +
                      (c / "default.pem").string() + "\"\n" + "tls_certificate_key = \"" +
                      (c / "default.key").string() + "\"\n" +
                      "[[tls]]\nserver_names = [\"a.test\"]\ncertificate = \"" +
                      (c / "a.pem").string() + "\"\ncertificate_key = \"" + (c / "a.key").string() +
                      "\"\n[[tls]]\nserver_names = [\"b.test\", \"*.b.test\"]\ncertificate = \"" +
                      (c / "b.pem").string() + "\"\ncertificate_key = \"" + (c / "b.key").string() +
                      "\"\n"
                      "[[site]]\nserver_names = [\"a.test\"]\n"
                      "headers = { \"Strict-Transport-Security\" = \"max-age=63072000\" }\n"
                      "[[site.route]]\nprefix = \"/\"\ndocroot = \"" +
                      (dir / "a").string() +
                      "\"\n"
                      "[[site]]\nserver_names = [\"b.test\"]\n"
                      "[[site.route]]\nprefix = \"/\"\ndocroot = \"" +
                      (dir / "b").string() +
                      "\"\n"
                      "[[site]]\nserver_names = [\"old.b.test\"]\n"
                      "[[site.route]]\nprefix = \"/\"\nredirect = \"https://a.test:" +
                      port_text(tls) + "{uri}\"\nstatus = 308\n");
    }
    [[nodiscard]] std::string resolve() const {
        std::string r = "--cacert " + (test_certs() / "ca.pem").string();
        for (const char* name : {"a.test", "b.test", "old.b.test"})
            for (const std::uint16_t port : {plain, tls})
                r += " --resolve " + std::string(name) + ":" + port_text(port) + ":127.0.0.1";
        return r;
    }
};

TEST_F(TlsSitesTest, TwoSitesWithTheirOwnCertificates) {
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    const std::string a = curl("-v " + resolve() + " https://a.test:" + port_text(tls) + "/");
    EXPECT_TRUE(has(a, "subject: CN=a.test")) << a;
    EXPECT_TRUE(has(a, "index of a")) << a;
    EXPECT_TRUE(has(a, "strict-transport-security: max-age=63072000")) << a;
    const std::string b = curl("-v " + resolve() + " https://b.test:" + port_text(tls) + "/x.txt");
    EXPECT_TRUE(has(b, "subject: CN=b.test")) << b;
    EXPECT_TRUE(has(b, "x of b")) << b;
    EXPECT_FALSE(has(b, "strict-transport-security")) << b;
}

TEST_F(TlsSitesTest, HostOfAnotherCertificateIsMisdirected) {
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    // SNI a.test gives a.test's certificate; a request on that connection for b.test (which has
    // a certificate of its own) is answered 421, over HTTP/1.1 and HTTP/2 alike.
    for (const char* version : {"--http1.1", "--http2"}) {
        SCOPED_TRACE(version);
        const std::string base = std::string(version) + " -o /dev/null -w '%{http_code}' " +
                                 resolve() + " https://a.test:" + port_text(tls) + "/";
        EXPECT_EQ(curl(base + " -H 'Host: b.test'"), "421");
        EXPECT_EQ(curl(base + " -H 'Host: www.b.test:443'"), "421");
        EXPECT_EQ(curl(base + " -H 'Host: A.TEST.'"), "200");
        // A name no [[tls]] lists gets the default certificate: not a.test's either.
        EXPECT_EQ(curl(base + " -H 'Host: localhost'"), "421");
    }
    // Its own name on its own connection is served.
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' " + resolve() +
                   " https://b.test:" + port_text(tls) + "/"),
              "200");
}

TEST_F(TlsSitesTest, Http2AuthorityChoosesTheSite) {
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    for (const char* name : {"a", "b"}) {
        const std::string out = curl("--http2 -w ' %{http_version}' " + resolve() + " https://" +
                                     name + ".test:" + port_text(tls) + "/x.txt");
        EXPECT_EQ(out, std::string("x of ") + name + "\n 2");
    }
}

TEST_F(TlsSitesTest, RedirectChainFollowedByCurl) {
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    // http://old.b.test -> (https_redirect, 301) https://old.b.test -> (the site's, 308)
    // https://a.test/x.txt
    const std::string out =
        curl("-L -w '%{num_redirects} %{http_code} %{url_effective}' " + resolve() +
             " 'http://old.b.test:" + port_text(plain) + "/x.txt?q=1'");
    EXPECT_EQ(out, "x of a\n2 200 https://a.test:" + port_text(tls) + "/x.txt?q=1") << out;
    const std::string first =
        curl("-i " + resolve() + " http://a.test:" + port_text(plain) + "/x.txt");
    EXPECT_TRUE(has(first, "HTTP/1.1 301 Moved Permanently")) << first;
    EXPECT_TRUE(has(first, "Location: https://a.test:" + port_text(tls) + "/x.txt\r\n")) << first;
}

/// Headless Chromium trusting the test certificates of a.test and b.test by their keys (it has
/// no CA file option), every *.test name on 127.0.0.1, a fresh profile each run: the page it
/// ends on after redirects and scripts, as its DOM.
std::string chromium_dom(const fs::path& profile, const std::string& url) {
    std::string spki;
    for (const char* leaf : {"a.pem", "b.pem"}) {
        const run_result r = run_shell("openssl x509 -in " + (test_certs() / leaf).string() +
                                       " -pubkey -noout | openssl pkey -pubin -outform der | "
                                       "openssl dgst -sha256 -binary | base64");
        spki += (spki.empty() ? "" : ",") + r.output.substr(0, 44);
    }
    return run_shell(
               "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic "
               "--no-first-run --disable-background-networking --disable-component-update "
               "--disable-sync --disable-dev-shm-usage --ignore-certificate-errors-spki-list=" +
               spki +
               " --host-resolver-rules='MAP *.test 127.0.0.1' --user-data-dir=" + profile.string() +
               " --virtual-time-budget=5000 --dump-dom '" + url + "' 2>/dev/null")
        .output;
}

TEST_F(TlsSitesTest, RedirectChainFollowedByChromium) {
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    // http://old.b.test (plain) -> 301 https://old.b.test -> 308 https://a.test/x.txt
    const std::string dom =
        chromium_dom(dir / "profile", "http://old.b.test:" + port_text(plain) + "/x.txt?q=1");
    EXPECT_TRUE(has(dom, "x of a")) << dom;
}

TEST_F(TlsSitesTest, StrictTransportSecurityIsHonouredByChromium) {
    // A page of each site sends the browser to http:// at the TLS port. a.test's answers carry
    // Strict-Transport-Security, so Chromium asks https:// itself and gets the file; b.test's
    // do not, so Chromium speaks plain HTTP to the TLS port and gets the 400 that says so.
    for (const char* site : {"a", "b"})
        spit(dir / site / "go.html", std::string("<html><body><script>location.href = \"http://") +
                                         site + ".test:" + port_text(tls) +
                                         "/x.txt\"</script></body></html>\n");
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    const std::string a =
        chromium_dom(dir / "profile_a", "https://a.test:" + port_text(tls) + "/go.html");
    EXPECT_TRUE(has(a, "x of a")) << a;
    const std::string b =
        chromium_dom(dir / "profile_b", "https://b.test:" + port_text(tls) + "/go.html");
    EXPECT_TRUE(has(b, "The plain HTTP request was sent to HTTPS port")) << b;
}

TEST_F(SitesTest, FieldsErrorPagesAndStripPrefixAroundAnUpstream) {
    // The upstream: another tarry serving files.
    const std::uint16_t up = free_port();
    const fs::path up_cfg = dir / "up.toml";
    spit(up_cfg, "listen = [\"127.0.0.1:" + port_text(up) + "\"]\ndocroot = \"" +
                     (dir / "b").string() + "\"\n");
    server upstream(up_cfg, up);
    ASSERT_TRUE(upstream.ready());
    spit(dir / "502.html", "<p>the application is down</p>\n");
    const fs::path cfg = dir / "t.toml";
    spit(cfg, "listen = [\"127.0.0.1:" + port_text(plain) + "\"]\n" +
                  "[upstream.app]\nservers = [\"127.0.0.1:" + port_text(up) + "\"]\n" +
                  "[upstream.gone]\nservers = [\"127.0.0.1:" + port_text(free_port()) + "\"]\n" +
                  "[[route]]\nprefix = \"/\"\ndocroot = \"" + (dir / "top").string() + "\"\n" +
                  "fallback = \"/index.html\"\n"
                  "headers = { \"X-Frame-Options\" = \"DENY\" }\n"
                  "[[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nstrip_prefix = true\n"
                  "hide_headers = [\"ETag\"]\n"
                  "headers = { \"Cache-Control\" = \"no-store\" }\n"
                  "[[route]]\nprefix = \"/down/\"\nupstream = \"gone\"\n"
                  "error_pages = { 502 = \"" +
                  (dir / "502.html").string() + "\" }\n" +
                  // The upstream's own 404 is kept on /api/, replaced on /caught/.
                  "[[route]]\nprefix = \"/caught/\"\nupstream = \"app\"\nstrip_prefix = true\n"
                  "intercept_errors = true\nerror_pages = { 404 = \"" +
                  (dir / "404.html").string() + "\" }\n");
    spit(dir / "404.html", "<p>no such page here</p>\n");
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());
    const std::string api = curl("-i " + url("x", "/api/x.txt"));
    EXPECT_TRUE(has(api, "HTTP/1.1 200 OK")) << api;
    EXPECT_TRUE(has(api, "x of b")) << api;
    EXPECT_TRUE(has(api, "Cache-Control: no-store")) << api;
    EXPECT_TRUE(has(api, "Last-Modified: ")) << api;
    EXPECT_FALSE(has(api, "ETag")) << api;
    const std::string down = curl("-i " + url("x", "/down/"));
    EXPECT_TRUE(has(down, "HTTP/1.1 502 Bad Gateway")) << down;
    EXPECT_TRUE(has(down, "Content-Type: text/html")) << down;
    EXPECT_TRUE(has(down, "<p>the application is down</p>")) << down;
    const std::string kept = curl("-i " + url("x", "/api/none.txt"));
    EXPECT_TRUE(has(kept, "HTTP/1.1 404 Not Found")) << kept;
    EXPECT_FALSE(has(kept, "no such page here")) << kept;
    // Intercepted: the page in place of the upstream's body, twice on one connection (the
    // upstream's body was read and dropped, the connections on both sides stay usable).
    const std::string caught =
        curl("-i " + url("x", "/caught/none.txt") + " " + url("x", "/caught/x.txt"));
    EXPECT_TRUE(has(caught, "HTTP/1.1 404 Not Found")) << caught;
    EXPECT_TRUE(has(caught, "Content-Type: text/html")) << caught;
    EXPECT_TRUE(has(caught, "<p>no such page here</p>")) << caught;
    EXPECT_TRUE(has(caught, "x of b")) << caught;
    // The single-page application: a path that is no file gets the index, with the fields.
    const std::string spa = curl("-i " + url("x", "/app/settings/profile"));
    EXPECT_TRUE(has(spa, "HTTP/1.1 200 OK")) << spa;
    EXPECT_TRUE(has(spa, "index of top")) << spa;
    EXPECT_TRUE(has(spa, "X-Frame-Options: DENY")) << spa;
    const std::string head = curl("-I " + url("x", "/x.txt"));
    EXPECT_TRUE(has(head, "X-Frame-Options: DENY")) << head;
}

TEST_F(SitesTest, ReloadChangesASitesNamesWhileRequestsRun) {
    const fs::path cfg = dir / "t.toml";
    const auto write = [&](const std::string& names) {
        spit(cfg, "listen = [\"127.0.0.1:" + port_text(plain) + "\"]\n" + "docroot = \"" +
                      (dir / "top").string() + "\"\n[[site]]\nserver_names = " + names +
                      "\n[[site.route]]\nprefix = \"/\"\ndocroot = \"" + (dir / "a").string() +
                      "\"\n");
    };
    write("[\"a.test\"]");
    server s(cfg, plain);
    ASSERT_TRUE(s.ready());

    // Clients on keep-alive connections, asking for both names until told to stop: every
    // answer is one of the two sites, none is lost.
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
        clients.emplace_back([&] {
            std::optional<test_client> client;
            client.emplace(plain);
            for (int i = 0; !stop; ++i) {
                const std::string host = i % 2 == 0 ? "a.test" : "b.test";
                if (!client->send("GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n")) {
                    ++failed;
                    return;
                }
                const auto r = client->read_response();
                if (!r || r->status != 200 ||
                    (r->body != "index of a\n" && r->body != "index of top\n")) {
                    ADD_FAILURE() << "request " << i << " for " << host << ": "
                                  << (r ? r->head + r->body : std::string("no answer"));
                    ++failed;
                    return;
                }
                ++answered;
                // Past max_requests_per_connection (and at random), a fresh connection.
                if (r->has("Connection: close") || i % 97 == 0) client.emplace(plain);
            }
        });
    }
    ASSERT_TRUE(eventually([&] { return answered > 100; }, 10s));
    write("[\"b.test\"]");
    ::kill(s.pid(), SIGHUP);
    EXPECT_TRUE(eventually([&] { return curl(url("b.test", "/")) == "index of a\n"; }, 10s));
    EXPECT_EQ(curl(url("a.test", "/")), "index of top\n");
    const int before = answered;
    EXPECT_TRUE(eventually([&] { return answered > before + 100; }, 10s));
    stop = true;
    for (std::thread& t : clients)
        t.join();
    EXPECT_EQ(failed, 0);
}

TEST_F(SitesTest, CheckConfigNamesTheKeyInOneLine) {
    const std::string root = (dir / "a").string();
    const std::string site = "[[site]]\nserver_names = [\"a.test\"]\n";
    const std::string route = "[[site.route]]\nprefix = \"/\"\ndocroot = \"" + root + "\"\n";
    const struct {
        std::string text;
        std::string says;
    } cases[] = {
        {site, "site[1].route: required"},
        {"[[site]]\nserver_names = [\"a b\"]\n" + route,
         "site[1].server_names: expected a server name"},
        {site + route + site + route,
         "site[2].server_names: \"a.test\" is already a name of site[1]"},
        {site + "default = true\n" + route + "[[route]]\nprefix = \"/\"\nrespond = \"hello\"\n",
         "site[1].default: the top-level [[route]] tables already make the default site"},
        {"unknown_host = \"410\"\n", "unknown_host: expected \"default\", \"421\" or \"404\""},
        {"https_redirect = true\n", "https_redirect: needs a tls_listen address"},
        {"[[route]]\nprefix = \"/\"\nredirect = \"https://{host}{path}\"\n",
         "route[1].redirect: unknown placeholder \"{path}\""},
        {"[[route]]\nprefix = \"/\"\nredirect = \"https://x/\"\nstatus = 200\n",
         "route[1].status: expected an integer from 300 to 308"},
        {"[[route]]\nprefix = \"/\"\nredirect = \"https://x/\"\nstatus = 304\n",
         "route[1].status: expected 301, 302, 303, 307 or 308, got 304"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nstatus = 301\n",
         "route[1].status: only a redirect route has a status"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nstrip_prefix = true\n",
         "route[1].strip_prefix: only an upstream route strips its prefix"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nintercept_errors = true\n",
         "route[1].intercept_errors: only an upstream route has an upstream's errors to replace"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nfallback = \"/index.html\"\n",
         "route[1].fallback: only a docroot route has a fallback file"},
        {"[[route]]\nprefix = \"/\"\ndocroot = \"" + root + "\"\nfallback = \"index.html\"\n",
         "route[1].fallback: must start with \"/\""},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nheaders = { \"Content-Length\" = \"1\" "
         "}\n",
         "route[1].headers: \"Content-Length\" is written by the server itself"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nheaders = { \"X-A\" = 1 }\n",
         "route[1].headers.X-A: expected a string, got 1"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nhide_headers = [\"Bad Name\"]\n",
         "route[1].hide_headers: expected a field name"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nerror_pages = { 200 = \"/x\" }\n",
         "route[1].error_pages.200: expected a status from 400 to 599"},
        {"[[route]]\nprefix = \"/\"\nrespond = \"hello\"\nerror_pages = { 404 = "
         "\"/nonexistent/404.html\" }\n",
         "route[1].error_pages.404: cannot read the file /nonexistent/404.html"},
        {site + "[[site.route]]\nprefix = \"/\"\nupstream = \"nope\"\n",
         "site[1].route[1].upstream: no upstream named \"nope\""},
        {site + "colour = 1\n" + route, "site[1]: unknown key \"colour\""},
        {site + "[[site.route]]\nprefix = \"/\"\ndocroot = \"/nonexistent\"\n",
         "site[1].route[1].docroot: /nonexistent does not exist"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        const fs::path cfg = dir / "bad.toml";
        spit(cfg, c.text);
        const run_result r = run_tarry("--config " + cfg.string() + " --check-config");
        EXPECT_EQ(r.status, 2) << r.output;
        EXPECT_TRUE(has(r.output, c.says)) << r.output;
        EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    }
}

} // namespace
} // namespace tarry::test

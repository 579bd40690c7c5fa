// proxy_protocol on a TLS listener, on the binary: behind a real HAProxy in `mode tcp`
// (send-proxy-v2, send-proxy, its health checks' LOCAL command) with curl from a loopback
// address of its own, HTTP/1.1 and HTTP/2 by ALPN, the client in the access log and in
// X-Forwarded-For at a Node.js application; and raw clients for what a balancer does not do on
// purpose (a header cut short, none at all, a bad one, plain HTTP behind a good one, a header
// and a ClientHello in one segment). Certificates are made at test time by tls/make_certs.sh.
#include "tarry_process.hpp"
#include "upstream/proxy_fixture.hpp"

#include <gtest/gtest.h>

#include <poll.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;

// --- Certificates and clients, made once per test program -------------------------------------

/// A Python client that sends a PROXY header, then speaks TLS over the same socket (ssl's
/// MemoryBIO, so the header and the ClientHello can share a segment), one request per line of
/// output as JSON.
///   client.py PORT CA HEADER HOW PATH...   HEADER: v1:ADDR, v2:ADDR (IPv4 or IPv6) or local;
///                                          HOW: together (the header and the ClientHello in
///                                          one send), apart, or pieces (byte by byte); one
///                                          request per PATH on the connection
///   client.py fairness PORT CA             max_connections_per_client 1 behind the header: a
///                                          connection from 192.0.2.9 held open, a second from
///                                          it, one from 192.0.2.10
constexpr const char* client_py = R"PY(
import json, socket, ssl, struct, sys, time

def header(spec):
    kind, _, addr = spec.partition(":")
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    if kind == "local":
        return sig + b"\x20\x00\x00\x00"
    six = ":" in addr
    if kind == "v1":
        return ("PROXY %s %s %s 40000 443\r\n" % ("TCP6" if six else "TCP4", addr,
                "::1" if six else "127.0.0.1")).encode()
    if six:
        body = socket.inet_pton(socket.AF_INET6, addr) + socket.inet_pton(socket.AF_INET6, "::1")
        family = 0x21
    else:
        body = socket.inet_aton(addr) + socket.inet_aton("127.0.0.1")
        family = 0x11
    body += struct.pack("!HH", 40000, 443)
    return sig + bytes([0x21, family]) + struct.pack("!H", len(body)) + body

class conn:
    def __init__(self, port, ca, spec, how):
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["http/1.1"])
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname="localhost")
        self.first = header(spec)
        if how == "pieces":
            for b in self.first:
                self.sock.sendall(bytes([b]))
                time.sleep(0.002)
            self.first = b""
        elif how == "apart":
            self.sock.sendall(self.first)
            self.first = b""
        self.pump(self.tls.do_handshake)

    def flush(self):
        o = self.out.read()
        if o or self.first:
            self.sock.sendall(self.first + o)
            self.first = b""

    def pump(self, op):
        while True:
            try:
                r = op()
                self.flush()
                return r
            except ssl.SSLWantReadError:
                self.flush()
                d = self.sock.recv(65536)
                if not d:
                    raise EOFError("closed")
                self.inc.write(d)

    def get(self, path):
        self.pump(lambda: self.tls.write(
            ("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path).encode()))
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.pump(lambda: self.tls.read(65536))
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        while len(body) < length:
            body += self.pump(lambda: self.tls.read(65536))
        return {"path": path, "status": int(lines[0].split(" ")[1]),
                "body": body.decode("latin-1")}

def attempt(port, ca, spec):
    try:
        c = conn(port, ca, spec, "together")
        return c, c.get("/fair")["status"]
    except (OSError, EOFError, ssl.SSLError) as e:
        return None, "closed"

if sys.argv[1] == "fairness":
    port, ca = int(sys.argv[2]), sys.argv[3]
    held, first = attempt(port, ca, "v2:192.0.2.9")
    _, second = attempt(port, ca, "v2:192.0.2.9")
    _, other = attempt(port, ca, "v1:192.0.2.10")
    print(json.dumps({"first": first, "second": second, "other": other}))
else:
    port, ca, spec, how = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    c = conn(port, ca, spec, how)
    for path in sys.argv[5:]:
        print(json.dumps(c.get(path)))
)PY";

/// The CA, the server's certificate and the client above, in a directory for the whole program.
class assets : public ::testing::Environment {
public:
    void SetUp() override {
        std::signal(SIGPIPE, SIG_IGN);
        dir_ = fs::temp_directory_path() / ("tarry_tls_pp_" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        const run_result r = run_shell("sh '" + std::string(TARRY_TLS_ASSETS) +
                                       "/make_certs.sh' '" + dir_.string() + "'");
        ASSERT_EQ(r.status, 0) << r.output;
        std::ofstream(dir_ / "client.py") << client_py;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    static std::string file(const std::string& name) { return (dir_ / name).string(); }

private:
    static inline fs::path dir_;
};

[[maybe_unused]] const auto* const assets_environment =
    ::testing::AddGlobalTestEnvironment(new assets);

/// Waits (the access log flushes within a second) until `file` has `text`.
bool appears(const fs::path& file, const std::string& text) {
    return eventually([&] { return slurp(file).find(text) != std::string::npos; });
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

/// tarry with a TLS listener behind a balancer (`tls_listen = "... proxy_protocol"`), an admin
/// listener, and the settings `more` adds to its configuration file; ready once /metrics answers.
class tls_behind_balancer {
public:
    tls_behind_balancer(const scratch_dir& dir, const std::string& more)
        : port_(free_port()), admin_(free_port()), log_(dir / "access.log"),
          process_({"--config", write_config(dir, more)}) {
        eventually([&] { return !metrics().empty(); }, 10s);
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] const fs::path& log() const noexcept { return log_; }
    tarry_process& process() noexcept { return process_; }

    std::string metrics() const {
        test_client c(admin_);
        if (!c.connected() || !c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")) return {};
        const auto r = c.read_response();
        return r && r->status == 200 ? r->body : std::string{};
    }
    /// Waits until `series` reads `value` in /metrics; returns the last reading.
    double await(const std::string& series, double value) const {
        double seen = -1;
        eventually([&] { return (seen = sample(metrics(), series)) == value; }, 10s);
        return seen;
    }

private:
    std::string write_config(const scratch_dir& dir, const std::string& more) const {
        const fs::path cfg = dir / "tarry.toml";
        std::ofstream(cfg) << "tls_listen = \"127.0.0.1:" << port_ << " proxy_protocol\"\n"
                           << "tls_certificate = \"" << assets::file("default.pem") << "\"\n"
                           << "tls_certificate_key = \"" << assets::file("default.key") << "\"\n"
                           << "admin_listen = \"127.0.0.1:" << admin_ << "\"\n"
                           << "access_log = \"" << log_.string() << "\"\n"
                           << "workers = 1\n"
                           << more;
        return cfg.string();
    }

    std::uint16_t port_;
    std::uint16_t admin_;
    fs::path log_;
    tarry_process process_; ///< (its own plain listener on a free port besides)
};

/// HAProxy in TCP mode in front of tarry's TLS port: one frontend per entry of `server_options`
/// (such as "send-proxy-v2"), each on a port of its own; `backend_lines` go in every backend
/// (health checks).
class haproxy_process {
public:
    haproxy_process(const scratch_dir& dir, std::uint16_t to,
                    const std::vector<std::string>& server_options,
                    const std::string& backend_lines = {}) {
        const fs::path cfg = dir / "haproxy.cfg";
        std::ofstream out(cfg);
        out << "global\n  maxconn 1000\n"
               "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n"
               "  timeout server 30s\n  timeout check 5s\n";
        for (std::size_t i = 0; i < server_options.size(); ++i) {
            ports_.push_back(free_port());
            out << "frontend f" << i << "\n  bind 127.0.0.1:" << ports_.back()
                << "\n  default_backend b" << i << "\nbackend b" << i << "\n"
                << backend_lines << "  server tarry 127.0.0.1:" << to << " " << server_options[i]
                << "\n";
        }
        out.close();
        child_.emplace(std::vector<std::string>{"haproxy", "-db", "-q", "-f", cfg.string()});
        eventually(
            [&] {
                for (const auto p : ports_)
                    if (!test_client(p).connected()) return false;
                return true;
            },
            10s);
    }
    [[nodiscard]] std::uint16_t port(std::size_t i) const { return ports_.at(i); }

private:
    std::vector<std::uint16_t> ports_;
    std::optional<child_process> child_; ///< started once the ports are chosen
};

/// curl from 127.0.0.7 through HAProxy's frontend at `port`, verifying tarry's certificate for
/// "localhost"; `args`: the rest (options, URL paths are made from `paths`).
run_result curl_via(std::uint16_t port, const std::string& args,
                    const std::vector<std::string>& paths) {
    const std::string host = "localhost:" + std::to_string(port);
    std::string cmd = "curl -sS --max-time 10 --interface 127.0.0.7 --cacert '" +
                      assets::file("ca.pem") + "' --resolve " + host + ":127.0.0.1 " + args;
    for (const auto& p : paths)
        cmd += " https://" + host + p;
    return run_shell(cmd);
}

const std::string forwarded_for = "x-forwarded-for: 127.0.0.7\n";

/// The configuration's lines that send every request to `app`.
std::string to_app(const node_backend& app) {
    return "[upstream.app]\nservers = [\"127.0.0.1:" + std::to_string(app.port()) +
           "\"]\n[[route]]\nprefix = \"/\"\nupstream = \"app\"\n";
}

// --- Behind HAProxy ------------------------------------------------------------------------------

TEST(TlsProxyProtocolTest, BehindHaproxyTheClientIsInTheLogAndXForwardedForOverHttp11) {
    scratch_dir dir("tls_pp_haproxy");
    node_backend app;
    ASSERT_TRUE(app.started());
    tls_behind_balancer t(dir, "http2 = false\n" + to_app(app));
    haproxy_process lb(dir, t.port(), {"send-proxy-v2", "send-proxy"});
    for (std::size_t i = 0; i < 2; ++i) {
        // Two requests on one connection: the header came once, before the ClientHello.
        const std::string via = "/headers?via=" + std::to_string(i);
        const run_result r = curl_via(lb.port(i), "-w '%{http_version}\\n'", {via, via + "b"});
        EXPECT_EQ(r.status, 0) << r.output;
        EXPECT_EQ(count(r.output, forwarded_for), 2U) << r.output;
        EXPECT_EQ(count(r.output, "x-forwarded-proto: https\n"), 2U) << r.output;
        EXPECT_EQ(count(r.output, "1.1\n"), 2U) << r.output;
        EXPECT_TRUE(appears(t.log(), "127.0.0.7 - - [")) << slurp(t.log());
        EXPECT_TRUE(appears(t.log(), "\"GET " + via + "b HTTP/1.1\" 200 ")) << slurp(t.log());
    }
    EXPECT_EQ(count(slurp(t.log()), "127.0.0.7 - - ["), 4U) << slurp(t.log());
    EXPECT_EQ(slurp(t.log()).find("127.0.0.1 - - ["), std::string::npos)
        << "the balancer's address is never the client's:\n"
        << slurp(t.log());
    EXPECT_EQ(t.await("tarry_tls_handshakes_total{result=\"full\"}", 2), 2) << t.metrics();
    EXPECT_EQ(sample(t.metrics(), "tarry_connection_closes_total{reason=\"proxy_header\"}"), 0);
}

TEST(TlsProxyProtocolTest, Http2ByAlpnBehindHaproxyKeepsTheClient) {
    scratch_dir dir("tls_pp_h2");
    node_backend app;
    ASSERT_TRUE(app.started());
    tls_behind_balancer t(dir, "http2 = true\n" + to_app(app));
    haproxy_process lb(dir, t.port(), {"send-proxy-v2"});
    // Two streams on one connection.
    const run_result r =
        curl_via(lb.port(0), "--http2 -w '%{http_version}\\n'", {"/headers?h2=1", "/headers?h2=2"});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(count(r.output, forwarded_for), 2U) << r.output;
    EXPECT_EQ(count(r.output, "\n2\n"), 2U) << r.output;
    EXPECT_TRUE(appears(t.log(), "127.0.0.7 - - [")) << slurp(t.log());
    EXPECT_TRUE(appears(t.log(), "\"GET /headers?h2=2 HTTP/2.0\" 200 ")) << slurp(t.log());
    EXPECT_EQ(slurp(t.log()).find("127.0.0.1 - - ["), std::string::npos) << slurp(t.log());
}

TEST(TlsProxyProtocolTest, HaproxysHealthChecksSayLocalAndAreServedAsTheBalancer) {
    // HAProxy's checks with check-send-proxy behind send-proxy-v2 send the LOCAL command (no
    // addresses): served as on a plain listener, the socket's own peer the client.
    scratch_dir dir("tls_pp_checks");
    tls_behind_balancer t(dir, "http2 = false\n");
    haproxy_process lb(dir, t.port(),
                       {"send-proxy-v2 check check-send-proxy check-ssl verify none inter 100ms"},
                       "  option httpchk GET /health-check\n");
    EXPECT_TRUE(appears(t.log(), "127.0.0.1 - - [")) << slurp(t.log());
    EXPECT_TRUE(appears(t.log(), "\"GET /health-check HTTP/1.0\" 200 ")) << slurp(t.log());
    const run_result r = curl_via(lb.port(0), "", {"/from-a-client"});
    EXPECT_EQ(r.output, "Hello, World!");
    EXPECT_TRUE(appears(t.log(), "127.0.0.7 - - [")) << slurp(t.log());
    EXPECT_EQ(sample(t.metrics(), "tarry_connection_closes_total{reason=\"proxy_header\"}"), 0);
}

// --- Raw clients ---------------------------------------------------------------------------------

/// Python's client above against `port`, one JSON line per request.
run_result python(std::uint16_t port, const std::string& header, const std::string& how,
                  const std::string& paths) {
    return run_shell("timeout 20 python3 '" + assets::file("client.py") + "' " +
                     std::to_string(port) + " '" + assets::file("ca.pem") + "' " + header + " " +
                     how + " " + paths);
}

class RawTlsProxyProtocolTest : public ::testing::Test {
protected:
    RawTlsProxyProtocolTest()
        : dir_("tls_pp_raw"), t_(dir_, "http2 = false\nheader_timeout = \"500ms\"\n") {}

    scratch_dir dir_;
    tls_behind_balancer t_;
};

TEST_F(RawTlsProxyProtocolTest, TheHeaderWithTheClientHelloInOneSegmentApartOrInPieces) {
    const std::vector<std::pair<std::string, std::string>> cases{{"v2:192.0.2.1", "together"},
                                                                 {"v1:192.0.2.2", "together"},
                                                                 {"v2:192.0.2.3", "apart"},
                                                                 {"v1:192.0.2.4", "pieces"},
                                                                 {"v2:2001:db8::5", "together"}};
    for (const auto& [header, how] : cases) {
        const run_result r = python(t_.port(), header, how, "/a /b");
        EXPECT_EQ(r.status, 0) << header << " " << how << ": " << r.output;
        EXPECT_EQ(count(r.output, "\"status\": 200"), 2U) << header << " " << how << r.output;
        const std::string client = header.substr(3);
        EXPECT_TRUE(appears(t_.log(), client + " - - [")) << client << "\n" << slurp(t_.log());
    }
    EXPECT_EQ(count(slurp(t_.log()), " 200 "), 2 * cases.size()) << slurp(t_.log());
}

TEST_F(RawTlsProxyProtocolTest, ALocalHeaderKeepsTheSocketsOwnAddress) {
    const run_result r = python(t_.port(), "local", "together", "/local");
    EXPECT_EQ(count(r.output, "\"status\": 200"), 1U) << r.output;
    EXPECT_TRUE(appears(t_.log(), "127.0.0.1 - - [")) << slurp(t_.log());
}

TEST_F(RawTlsProxyProtocolTest, AHeaderCutShortOrNoneIsClosedSilentlyAtTheHeaderTimeout) {
    test_client half(t_.port());
    test_client none(t_.port());
    ASSERT_TRUE(half.send("PROXY TCP4 192.0.2.7 127.0.0.1 4"));
    const auto sent = steady::now();
    for (test_client* c : {&half, &none}) {
        const auto [got, fin] = read_to_end(c->fd());
        EXPECT_EQ(got, "") << "no answer, no alert, to a balancer that sent half a header";
        EXPECT_TRUE(fin) << "an end, not a reset";
        EXPECT_GE(steady::now() - sent, 450ms) << "not before the header timeout";
    }
    EXPECT_EQ(t_.await("tarry_connection_closes_total{reason=\"header_timeout\"}", 2), 2);
    EXPECT_EQ(sample(t_.metrics(), "tarry_connection_closes_total{reason=\"handshake\"}"), 0);
}

TEST_F(RawTlsProxyProtocolTest, AHeaderThenPlainHttpGetsTheHintedBadRequest) {
    test_client c(t_.port());
    ASSERT_TRUE(c.send("PROXY TCP4 192.0.2.8 127.0.0.1 40000 443\r\n"
                       "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"));
    const auto [got, fin] = read_to_end(c.fd());
    EXPECT_TRUE(got.starts_with("HTTP/1.1 400 Bad Request\r\n")) << got;
    EXPECT_TRUE(got.ends_with("\r\n\r\nThe plain HTTP request was sent to HTTPS port\n")) << got;
    EXPECT_TRUE(fin) << got;
    EXPECT_TRUE(appears(t_.log(), "192.0.2.8 - - [")) << slurp(t_.log());
    EXPECT_TRUE(appears(t_.log(), "\"GET /plain HTTP/1.1\" 400 ")) << slurp(t_.log());
}

TEST_F(RawTlsProxyProtocolTest, AMalformedHeaderOrNoneIsClosedWithoutATlsAnswer) {
    const std::vector<std::string> bad{
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\nGET / HTTP/1.1\r\n\r\n", // v1 ends with CRLF
        "PROXY TCP4 300.1.1.1 5.6.7.8 1 2\r\n",
        std::string("\r\n\r\n\0\r\nQUIT\n\x21\x12\x00\x0c", 16),          // v2 with a bad family
        "GET / HTTP/1.1\r\nHost: t\r\n\r\n",                              // no header at all
        std::string("\x16\x03\x01\x00\x2f\x01\x00\x00\x2b\x03\x03", 11)}; // a ClientHello
    for (const std::string& bytes : bad) {
        test_client c(t_.port());
        ASSERT_TRUE(c.send(bytes));
        const auto [got, fin] = read_to_end(c.fd());
        EXPECT_EQ(got, "") << "no answer to a balancer speaking something else";
        EXPECT_TRUE(fin) << "an end, not a reset";
    }
    EXPECT_EQ(t_.await("tarry_connection_closes_total{reason=\"proxy_header\"}", 5), 5);
    EXPECT_EQ(sample(t_.metrics(), "tarry_tls_handshake_failures_total{reason=\"plain_http\"}"), 0);
}

TEST(TlsProxyProtocolPhaseTest, TheHeaderComesUnderHeaderTimeoutThenTheHandshakesOwn) {
    // While its header is incomplete a connection is silent (header_timeout, nothing held);
    // from the header on it is in its handshake (handshake_timeout).
    scratch_dir dir("tls_pp_phase");
    tls_behind_balancer t(dir, "header_timeout = \"60s\"\n");
    const std::string silent = "tarry_connections_by_phase{phase=\"silent\"}";
    const std::string handshake = "tarry_connections_by_phase{phase=\"handshake\"}";
    test_client c(t.port());
    ASSERT_TRUE(c.send("PROXY TCP4 192.0.2.9 127.0.0.1 40000"));
    EXPECT_EQ(t.await(silent, 1), 1) << t.metrics();
    EXPECT_EQ(sample(t.metrics(), handshake), 0);
    ASSERT_TRUE(c.send(" 443\r\n"));
    EXPECT_EQ(t.await(handshake, 1), 1) << t.metrics();
    EXPECT_EQ(sample(t.metrics(), silent), 0);
}

TEST(TlsProxyProtocolFairnessTest, MaxConnectionsPerClientCountsTheHeadersClient) {
    scratch_dir dir("tls_pp_fair");
    tls_behind_balancer t(dir, "http2 = false\nmax_connections_per_client = 1\n");
    const run_result r =
        run_shell("timeout 30 python3 '" + assets::file("client.py") + "' fairness " +
                  std::to_string(t.port()) + " '" + assets::file("ca.pem") + "'");
    EXPECT_EQ(r.output, "{\"first\": 200, \"second\": \"closed\", \"other\": 200}\n");
    EXPECT_EQ(t.await("tarry_connection_closes_total{reason=\"per_client\"}", 1), 1) << t.metrics();
}

TEST(TlsProxyProtocolConfigTest, CheckConfigAcceptsItOnATlsAddress) {
    const run_result r = run_tarry("--check-config --tls-listen '127.0.0.1:8443 proxy_protocol' "
                                   "--tls-certificate " +
                                   assets::file("default.pem") + " --tls-certificate-key " +
                                   assets::file("default.key"));
    EXPECT_EQ(r.status, 0) << r.output;
}

} // namespace
} // namespace tarry::test

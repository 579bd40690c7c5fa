// TLS on the binary behind real clients: curl, openssl s_client, Python's ssl module, Node.js
// https, headless Chromium and testssl.sh, plus raw sockets and an in-process OpenSSL client for
// what no client does on purpose (stalls, resets, plain HTTP, forged records). Certificates are
// made at test time by tls/make_certs.sh (no private key is committed).
#include "tarry_process.hpp"
#include "tls/reference.hpp"

#include <gtest/gtest.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <netinet/tcp.h>

#include <tarry/tls/record_protection.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;

// --- Files and commands --------------------------------------------------------------------------

void spit(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

/// Single-quoted for sh.
std::string q(const std::string& s) {
    std::string out = "'";
    for (const char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string q(const fs::path& p) {
    return q(p.string());
}

using command_result = run_result;

/// A shell command, its output (both streams) and exit status.
command_result run(const std::string& cmd) {
    return run_shell(cmd);
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

bool has(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

/// A number from a flat JSON object ("key": 12), or -1.
long json_number(const std::string& json, const std::string& key) {
    std::smatch m;
    if (std::regex_search(json, m, std::regex("\"" + key + "\":\\s*(-?[0-9]+)")))
        return std::stol(m[1]);
    return -1;
}

/// A boolean from a flat JSON object: 1 true, 0 false, -1 absent.
int json_bool(const std::string& json, const std::string& key) {
    std::smatch m;
    if (std::regex_search(json, m, std::regex("\"" + key + "\":\\s*(true|false)")))
        return m[1] == "true" ? 1 : 0;
    return -1;
}

/// A fresh directory for one test's files, removed after it.
const fs::path assets = TARRY_TLS_ASSETS;

// --- Certificates, made once per test program ----------------------------------------------------

/// The CA and certificates make_certs.sh lists, in a temporary directory for the whole program.
class certificates : public ::testing::Environment {
public:
    void SetUp() override {
        std::signal(SIGPIPE, SIG_IGN); // OpenSSL writes to sockets the server may have closed
        dir_ = fs::temp_directory_path() / ("tarry_tls_certs_" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        const command_result r = run("sh " + q(assets / "make_certs.sh") + " " + q(dir_));
        ASSERT_EQ(r.status, 0) << r.output;
        ASSERT_TRUE(fs::exists(dir_ / "expired.pem")) << r.output;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    static fs::path file(const std::string& name) { return dir_ / name; }

private:
    static inline fs::path dir_;
};

[[maybe_unused]] const auto* const certificates_environment =
    ::testing::AddGlobalTestEnvironment(new certificates);

fs::path cert(const std::string& name) {
    return certificates::file(name);
}

// --- tarry with a TLS listener -------------------------------------------------------------------

/// Scrapes /metrics from the admin address (empty when it does not answer).
std::string scrape(std::uint16_t admin) {
    test_client c(admin);
    if (!c.connected() || !c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")) return {};
    const auto r = c.read_response();
    return r && r->status == 200 ? r->body : std::string{};
}

/// tarry with a plain listener (tarry_process's), a TLS listener and an admin listener, each on
/// a free port; ready once /metrics answers (the listeners open before the admin one).
class tls_server {
public:
    /// `args`: more arguments; `default_certificate`: --tls-certificate default.pem (else the
    /// configuration file names the certificates); `log`: stdout and stderr (else inherited).
    explicit tls_server(std::vector<std::string> args = {}, bool default_certificate = true,
                        const fs::path& log = {})
        : tls_port_(free_port()), admin_port_(free_port()),
          process_(arguments(args, default_certificate, tls_port_, admin_port_), launch(log)) {
        eventually([&] { return !scrape(admin_port_).empty(); }, 10s);
    }

    [[nodiscard]] std::uint16_t port() const { return tls_port_; }
    [[nodiscard]] std::string port_text() const { return std::to_string(tls_port_); }
    [[nodiscard]] std::uint16_t admin_port() const { return admin_port_; }
    [[nodiscard]] pid_t pid() const { return process_.pid(); }
    /// Running (not exited, nor a zombie waiting to be reaped).
    [[nodiscard]] bool alive() const {
        const std::string stat = slurp("/proc/" + std::to_string(process_.pid()) + "/stat");
        const auto paren = stat.rfind(')');
        return process_.pid() > 0 && paren != std::string::npos && paren + 2 < stat.size() &&
               stat[paren + 2] != 'Z';
    }
    int stop() { return process_.stop(); }
    /// Whether it ended within `limit` (stop() then gives its exit status).
    bool ends_within(steady::duration limit) { return process_.process().wait_for(limit); }

    [[nodiscard]] std::string metrics() const { return scrape(admin_port_); }
    [[nodiscard]] double metric(const std::string& series) const {
        return sample(metrics(), series);
    }
    /// Waits (up to 5 s) until the series reaches `value`; returns what it last read. Counters
    /// of a close move right after the descriptor is gone, so a client may see the close first.
    double await(const std::string& series, double value) const {
        double v = -1;
        eventually([&] { return (v = metric(series)) >= value; });
        return v;
    }
    /// Waits (up to 5 s) until a gauge is `value`; returns what it last read.
    double await_equal(const std::string& series, double value) const {
        double v = -1;
        eventually([&] { return (v = metric(series)) == value; });
        return v;
    }
    [[nodiscard]] std::string url(const std::string& host = "localhost") const {
        return "https://" + host + ":" + port_text() + "/";
    }
    /// curl against this server, the test CA trusted, `host` resolved to 127.0.0.1.
    [[nodiscard]] std::string curl(const std::string& options,
                                   const std::string& host = "localhost") const {
        return "timeout 30 curl -sS --max-time 20 --cacert " + q(cert("ca.pem")) + " --resolve " +
               host + ":" + port_text() + ":127.0.0.1 " + options;
    }

private:
    static std::vector<std::string> arguments(const std::vector<std::string>& args,
                                              bool default_certificate, std::uint16_t tls,
                                              std::uint16_t admin) {
        std::vector<std::string> a{"--tls-listen", "127.0.0.1:" + std::to_string(tls),
                                   "--admin-listen", "127.0.0.1:" + std::to_string(admin)};
        if (default_certificate)
            a.insert(a.end(), {"--tls-certificate", cert("default.pem").string(),
                               "--tls-certificate-key", cert("default.key").string()});
        a.insert(a.end(), args.begin(), args.end());
        return a;
    }
    static launch_options launch(const fs::path& log) {
        launch_options l;
        l.output = log.string();
        return l;
    }

    std::uint16_t tls_port_;
    std::uint16_t admin_port_;
    tarry_process process_;
};

const std::string full = "tarry_tls_handshakes_total{result=\"full\"}";
const std::string resumed = "tarry_tls_handshakes_total{result=\"resumed\"}";
std::string failures(const std::string& reason) {
    return "tarry_tls_handshake_failures_total{reason=\"" + reason + "\"}";
}
std::string closes(const std::string& reason) {
    return "tarry_connection_closes_total{reason=\"" + reason + "\"}";
}
const std::string handshaking = "tarry_connections_by_phase{phase=\"handshake\"}";

/// The subject CN of the certificate the server sends for `servername` (empty: no SNI).
std::string served_cn(const tls_server& t, const std::string& servername) {
    const std::string sni = servername.empty() ? "-noservername" : "-servername " + q(servername);
    const command_result r = run("timeout 20 openssl s_client -connect 127.0.0.1:" + t.port_text() +
                                 " " + sni + " </dev/null");
    std::smatch m;
    static const std::regex subject("subject=\\s*CN\\s*=\\s*([^\\n,/]+)");
    if (std::regex_search(r.output, m, subject)) return m[1];
    return "(none: " + r.output.substr(0, 300) + ")";
}

// --- An OpenSSL client in this process -----------------------------------------------------------

/// A TLS client on a blocking loopback socket (5 s timeouts), verifying "localhost" against the
/// test CA: for what command-line clients do not do, such as writing a forged record after a
/// real handshake.
class ossl_client {
public:
    ossl_client(std::uint16_t port, int version) {
        ctx_ = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_min_proto_version(ctx_, version);
        SSL_CTX_set_max_proto_version(ctx_, version);
        SSL_CTX_load_verify_locations(ctx_, cert("ca.pem").c_str(), nullptr);
        SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
        static const unsigned char alpn[] = "\x08http/1.1";
        SSL_CTX_set_alpn_protos(ctx_, alpn, sizeof alpn - 1);
        SSL_CTX_set_keylog_callback(ctx_, [](const SSL* ssl, const char* line) {
            static_cast<ossl_client*>(SSL_get_app_data(ssl))->keylog_ += line + std::string("\n");
        });
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        const timeval tv{5, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            error_ = std::string("connect: ") + std::strerror(errno);
            return;
        }
        ssl_ = SSL_new(ctx_);
        SSL_set_app_data(ssl_, this);
        SSL_set_fd(ssl_, fd_);
        SSL_set_tlsext_host_name(ssl_, "localhost");
        SSL_set1_host(ssl_, "localhost");
        ERR_clear_error();
        connected_ = SSL_connect(ssl_) == 1;
        if (!connected_) {
            char text[256] = "no OpenSSL error (the connection ended)";
            if (const unsigned long e = ERR_peek_last_error(); e != 0)
                ERR_error_string_n(e, text, sizeof text);
            error_ = std::string("handshake: ") + text;
        }
    }
    ossl_client(const ossl_client&) = delete;
    ossl_client& operator=(const ossl_client&) = delete;
    ~ossl_client() {
        if (ssl_ != nullptr) SSL_free(ssl_);
        if (ctx_ != nullptr) SSL_CTX_free(ctx_);
        if (fd_ >= 0) ::close(fd_);
    }

    [[nodiscard]] bool connected() const { return connected_; }
    /// Why it is not connected.
    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] int fd() const { return fd_; }
    [[nodiscard]] std::string version() const { return SSL_get_version(ssl_); }
    [[nodiscard]] std::string cipher() const { return SSL_get_cipher_name(ssl_); }

    /// GET `target`; the response (head and Content-Length body), or "" on an error.
    std::string get(const std::string& target) {
        const std::string req = "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
        if (SSL_write(ssl_, req.data(), static_cast<int>(req.size())) <= 0) return {};
        std::string in;
        std::size_t end;
        while ((end = in.find("\r\n\r\n")) == std::string::npos)
            if (!more(in)) return {};
        std::size_t length = 0;
        std::smatch m;
        const std::string head = in.substr(0, end);
        if (std::regex_search(head, m, std::regex("\r\n[Cc]ontent-[Ll]ength: *([0-9]+)")))
            length = std::stoul(m[1]);
        while (in.size() < end + 4 + length)
            if (!more(in)) return {};
        return in;
    }

    /// Writes `bytes` in records of `piece` bytes each (SSL_write makes one record per call).
    bool write_records(const std::string& bytes, std::size_t piece) {
        for (std::size_t at = 0; at < bytes.size(); at += piece) {
            const std::string part = bytes.substr(at, piece);
            if (SSL_write(ssl_, part.data(), static_cast<int>(part.size())) <= 0) return false;
        }
        return true;
    }
    /// Reads until `text` appears `n` times (or an error or the 5 s timeout): what came.
    std::string read_until(const std::string& text, std::size_t n) {
        std::string in;
        while (count(in, text) < n && more(in)) {
        }
        return in;
    }

    /// The socket's receive and send timeouts (5 s at first).
    void set_timeout(std::chrono::milliseconds t) {
        const timeval tv{static_cast<time_t>(t.count() / 1000),
                         static_cast<suseconds_t>(t.count() % 1000 * 1000)};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    /// Sends a KeyUpdate now (asking for the server's in answer when `requested`).
    bool key_update(bool requested) {
        return SSL_key_update(ssl_, requested ? SSL_KEY_UPDATE_REQUESTED
                                              : SSL_KEY_UPDATE_NOT_REQUESTED) == 1 &&
               SSL_do_handshake(ssl_) == 1;
    }
    /// Up to `n` bytes of plaintext (0 on an error or the end).
    std::size_t read_some(char* buf, std::size_t n) {
        const int r = SSL_read(ssl_, buf, static_cast<int>(n));
        return r > 0 ? static_cast<std::size_t>(r) : 0;
    }

    /// Reads once more: the bytes, or the reason OpenSSL gives for the failure (its code in
    /// `reason`: SSL_AD_REASON_OFFSET + the alert for an alert the server sent), or "EOF".
    std::string read_failure(int& reason) {
        char buf[4096];
        ERR_clear_error();
        const int n = SSL_read(ssl_, buf, sizeof buf);
        if (n > 0) {
            reason = 0;
            return std::string(buf, static_cast<std::size_t>(n));
        }
        const int e = SSL_get_error(ssl_, n);
        const unsigned long err = ERR_peek_error();
        reason = ERR_GET_REASON(err);
        if (e == SSL_ERROR_ZERO_RETURN) return "close_notify";
        if (err == 0) return "EOF (SSL error " + std::to_string(e) + ")";
        char text[256];
        ERR_error_string_n(err, text, sizeof text);
        return text;
    }

    /// A TLS 1.3 writer of records of our own after the handshake, as OpenSSL's would be (the
    /// client's application traffic secret, sequence 0): for records no API makes (empty ones,
    /// alerts). OpenSSL's writing must not be used after it.
    std::optional<tls::record_protection> own_writer() const {
        const auto at = keylog_.find("CLIENT_TRAFFIC_SECRET_0 ");
        const auto suite = tls::aead_of_suite(
            static_cast<std::uint16_t>(SSL_CIPHER_get_protocol_id(SSL_get_current_cipher(ssl_))));
        if (at == std::string::npos || !suite) return std::nullopt;
        const std::string line = keylog_.substr(at, keylog_.find('\n', at) - at);
        const tls::test::bytes secret = tls::test::hex(line.substr(line.rfind(' ') + 1));
        tls::record_protection w;
        if (!w.init(*suite, secret)) return std::nullopt;
        return w;
    }

    /// Sends close_notify (the end of this side's output; it may still read).
    bool send_close_notify() { return SSL_shutdown(ssl_) >= 0; }
    /// TCP_CORK on or off: records written while it is on leave together, in one segment.
    void cork(bool on) {
        const int v = on ? 1 : 0;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &v, sizeof v);
    }

    /// Reads from the socket itself until the end: true for an orderly end (FIN, not a reset).
    bool socket_ends() {
        char buf[4096];
        for (;;) {
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n == 0) return true;
            if (n < 0) return false;
        }
    }

private:
    bool more(std::string& in) {
        char buf[16384];
        const int n = SSL_read(ssl_, buf, sizeof buf);
        if (n <= 0) return false;
        in.append(buf, static_cast<std::size_t>(n));
        return true;
    }

    SSL_CTX* ctx_ = nullptr;
    SSL* ssl_ = nullptr;
    int fd_ = -1;
    bool connected_ = false;
    std::string error_;
    std::string keylog_; ///< the key log lines of the handshake (own_writer)
};

/// A real TLS 1.3 ClientHello (from OpenSSL's client, for "localhost"), as one record.
std::string client_hello() {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL* ssl = SSL_new(ctx);
    BIO* rbio = BIO_new(BIO_s_mem());
    BIO* wbio = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, rbio, wbio);
    SSL_set_tlsext_host_name(ssl, "localhost");
    SSL_set_connect_state(ssl);
    SSL_do_handshake(ssl); // wants to read: the ClientHello is in wbio
    std::string out;
    char buf[4096];
    int n;
    while ((n = BIO_read(wbio, buf, sizeof buf)) > 0)
        out.append(buf, static_cast<std::size_t>(n));
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return out;
}

/// A connected loopback socket, or -1.
int raw_connect(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    return -1;
}

/// Closes with a reset (SO_LINGER 0).
void reset(int fd) {
    const linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
}

// --- 1. curl: keep-alive, both versions, ALPN ----------------------------------------------------

TEST(TlsCurlTest, TwoUrlsShareOneConnectionOverTls13And12AndAlpnPicksH2OrHttp11) {
    // ALPN picks h2 (http2 on, the default) or http/1.1 (--no-http2) from curl's "h2,http/1.1".
    for (const bool http2 : {true, false}) {
        SCOPED_TRACE(http2 ? "http2 on" : "--no-http2");
        tls_server t(http2 ? std::vector<std::string>{} : std::vector<std::string>{"--no-http2"});
        const std::string write_out = "-w 'W %{num_connects} %{http_version} %{response_code}\\n'";
        const std::string protocol = http2 ? "h2" : "http/1.1";
        const std::string version_seen = http2 ? "2" : "1.1";
        int handshakes = 0;
        for (const std::string version : {"--tlsv1.3", "--tlsv1.2 --tls-max 1.2"}) {
            SCOPED_TRACE(version);
            const command_result r =
                run(t.curl("-v --http2 " + version + " -o /dev/null -o /dev/null " + write_out +
                           " " + t.url() + " " + t.url() + "again"));
            EXPECT_EQ(r.status, 0) << r.output;
            EXPECT_TRUE(has(r.output, "W 1 " + version_seen + " 200\n")) << r.output;
            EXPECT_TRUE(has(r.output, "W 0 " + version_seen + " 200\n"))
                << "the second URL reuses the connection\n"
                << r.output;
            EXPECT_TRUE(has(r.output, "ALPN: offers h2,http/1.1")) << r.output;
            EXPECT_TRUE(std::regex_search(
                r.output, std::regex("ALPN[:,] server accepted (to use )?" + protocol)))
                << r.output;
            const bool v13 = version == "--tlsv1.3";
            EXPECT_TRUE(has(r.output, v13 ? "SSL connection using TLSv1.3 / TLS_"
                                          : "SSL connection using TLSv1.2 / ECDHE-ECDSA-"))
                << r.output;
            EXPECT_EQ(t.await(full, ++handshakes), handshakes) << "one handshake for both URLs";
        }
        const std::string m = t.metrics();
        EXPECT_EQ(sample(m, resumed), 0);
        EXPECT_EQ(sample(m, "tarry_tls_handshake_duration_seconds_count"), 2) << m;
        EXPECT_EQ(sample(m, failures("no_alpn")), 0);
    }
}

TEST(TlsStartupTest, TheLogSaysWhichListenersAreTls) {
    // At the default log level (tarry_process runs it at warn); its standard output, a file
    // here, is flushed when it exits, so it is stopped once its TLS port answers.
    scratch_dir dir("startup_log");
    const fs::path log = dir / "out.log";
    const std::string plain_port = std::to_string(free_port());
    const std::string tls_port = std::to_string(free_port());
    run(std::string(TARRY_BINARY) + " --listen 127.0.0.1:" + plain_port +
        " --tls-listen 127.0.0.1:" + tls_port + " --tls-certificate " + q(cert("default.pem")) +
        " --tls-certificate-key " + q(cert("default.key")) + " > " + q(log) +
        " 2>&1 & pid=$!; for i in $(seq 400); do curl -sk -o /dev/null https://127.0.0.1:" +
        tls_port + "/ && break; sleep 0.05; done; kill $pid; wait $pid");
    const std::string text = slurp(log);
    EXPECT_TRUE(has(text, "listening on 127.0.0.1:" + tls_port + " (TLS)\n")) << text;
    EXPECT_TRUE(has(text, "listening on 127.0.0.1:" + plain_port + "\n")) << text;
}

TEST(TlsCurlTest, AnAlpnWithoutHttp11IsRefusedAndCounted) {
    // With http2 off, a client that offers only h2 is refused (no_application_protocol), as
    // nginx does; with it on (the default), it is served.
    tls_server t({"--no-http2"});
    const command_result r = run("timeout 20 openssl s_client -connect 127.0.0.1:" + t.port_text() +
                                 " -alpn h2 </dev/null");
    EXPECT_TRUE(has(r.output, "no application protocol")) << r.output;
    EXPECT_EQ(t.await(failures("no_alpn"), 1), 1) << t.metrics();
    EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' " + t.url())).output, "200");

    tls_server on;
    const command_result h2 =
        run("timeout 20 openssl s_client -connect 127.0.0.1:" + on.port_text() +
            " -alpn h2 </dev/null");
    EXPECT_TRUE(has(h2.output, "ALPN protocol: h2")) << h2.output;
    EXPECT_EQ(on.metric(failures("no_alpn")), 0) << on.metrics();
}

TEST(TlsCurlTest, AnAlpnOfOnlyHttp10IsServed) {
    // HTTP/1.1's older sibling, as nginx serves it, http2 on (the default) or off; with http2
    // off, h2 offered with it still picks http/1.1's place.
    tls_server on;
    tls_server t({"--no-http2"});
    const command_result alone =
        run("printf 'GET / HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' | timeout 20 openssl "
            "s_client -connect 127.0.0.1:" +
            on.port_text() + " -alpn http/1.0 -ign_eof 2>&1");
    EXPECT_TRUE(has(alone.output, "ALPN protocol: http/1.0")) << alone.output;
    EXPECT_TRUE(has(alone.output, " 200 OK")) << alone.output;
    for (const std::string alpn : {"http/1.0", "h2,http/1.0"}) {
        SCOPED_TRACE(alpn);
        const command_result r =
            run("printf 'GET / HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' | timeout 20 openssl "
                "s_client -connect 127.0.0.1:" +
                t.port_text() + " -alpn " + alpn + " -ign_eof 2>&1");
        EXPECT_TRUE(has(r.output, "ALPN protocol: http/1.0")) << r.output;
        EXPECT_TRUE(has(r.output, " 200 OK")) << r.output;
    }
    EXPECT_EQ(t.metric(failures("no_alpn")), 0) << t.metrics();
}

TEST(TlsMetricsTest, OpenConnectionsAreCountedByVersionAndCipherUntilTheyClose) {
    tls_server t({"--workers", "2"});
    auto v13 = std::make_unique<ossl_client>(t.port(), TLS1_3_VERSION);
    auto v12 = std::make_unique<ossl_client>(t.port(), TLS1_2_VERSION);
    ASSERT_TRUE(v13->connected()) << v13->error();
    ASSERT_TRUE(v12->connected()) << v12->error();
    ASSERT_TRUE(v13->get("/").starts_with("HTTP/1.1 200 OK"));
    ASSERT_TRUE(v12->get("/").starts_with("HTTP/1.1 200 OK"));
    const std::string series13 =
        "tarry_tls_connections{version=\"TLSv1.3\",cipher=\"" + v13->cipher() + "\"}";
    const std::string series12 =
        "tarry_tls_connections{version=\"TLSv1.2\",cipher=\"" + v12->cipher() + "\"}";
    EXPECT_EQ(t.await_equal(series13, 1), 1) << t.metrics();
    EXPECT_EQ(t.await_equal(series12, 1), 1) << t.metrics();
    EXPECT_EQ(t.metric("tarry_tls_own_record_connections"), 1) << "TLS 1.3 only";
    const double offload = t.metric("tarry_tls_kernel_offload");
    EXPECT_TRUE(offload == 0 || offload == 1) << offload;
    v13.reset();
    v12.reset();
    EXPECT_EQ(t.await_equal(series13, 0), 0);
    EXPECT_EQ(t.await_equal(series12, 0), 0);
    EXPECT_EQ(t.await_equal("tarry_tls_own_record_connections", 0), 0);
}

TEST(TlsRecordsTest, RecordsOfAnyShapeCarryRequestsPipelinedOrByteByByte) {
    tls_server t({"--workers", "1"});
    for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
        SCOPED_TRACE(version);
        ossl_client c(t.port(), version);
        ASSERT_TRUE(c.connected()) << c.error();
        std::string pipelined;
        for (int i = 0; i < 20; ++i)
            pipelined += "GET /p" + std::to_string(i) + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
        // Twenty requests in one record, then one request a byte per record, then a request
        // split across records at odd places, with a long field.
        ASSERT_TRUE(c.write_records(pipelined, pipelined.size()));
        std::string got = c.read_until("Hello, World!", 20);
        EXPECT_EQ(count(got, "HTTP/1.1 200 OK\r\n"), 20U) << got;
        ASSERT_TRUE(c.write_records("GET /bytes HTTP/1.1\r\nHost: localhost\r\n\r\n", 1));
        got = c.read_until("Hello, World!", 1);
        EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n")) << got;
        const std::string long_request =
            "GET /long HTTP/1.1\r\nHost: localhost\r\nX-Long: " + std::string(6000, 'x') +
            "\r\n\r\n";
        ASSERT_TRUE(c.write_records(long_request, 997));
        got = c.read_until("Hello, World!", 1);
        EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n")) << got.substr(0, 200);
    }
    EXPECT_EQ(t.metric(closes("tls")), 0);
}

// --- 2. A static file of several megabytes -------------------------------------------------------

TEST(TlsStaticFileTest, AFileOfSeveralMegabytesIsByteIdenticalWithHeadAndRanges) {
    scratch_dir dir("static");
    fs::create_directories(dir / "www");
    std::string data(6 * 1024 * 1024 + 12345, '\0'); // not a multiple of a record or a piece
    std::mt19937 rng(42);
    for (char& c : data)
        c = static_cast<char>(rng());
    spit(dir / "www" / "big.bin", data);
    tls_server t({"--docroot", (dir / "www").string(), "--workers", "2"});
    const std::string url = t.url() + "big.bin";

    // HTTP/1.1 and HTTP/2 (ALPN h2, the default): the file through both protocols' sends.
    for (const std::string protocol : {"--http1.1", "--http2"}) {
        SCOPED_TRACE(protocol);
        const std::string status_line = protocol == "--http2" ? "HTTP/2 " : "HTTP/1.1 ";
        for (const std::string version :
             {"--tlsv1.3", "--tlsv1.2 --tls-max 1.2", "--tlsv1.3 --limit-rate 8M",
              "--tlsv1.2 --tls-max 1.2 --limit-rate 8M"}) {
            SCOPED_TRACE(version); // the slow reader makes the server's sends come back short
            const fs::path out = dir / "download";
            fs::remove(out);
            const command_result r = run(t.curl(protocol + " " + version + " -o " + q(out) +
                                                " -w '%{http_code} %{size_download}' " + url));
            EXPECT_EQ(r.output, "200 " + std::to_string(data.size()));
            const std::string got = slurp(out);
            ASSERT_EQ(got.size(), data.size());
            EXPECT_TRUE(got == data) << "the download differs from the file";
        }

        const command_result head = run(t.curl(protocol + " -I " + url));
        EXPECT_TRUE(head.output.starts_with(status_line + "200")) << head.output;
        EXPECT_TRUE(std::regex_search(
            head.output,
            std::regex("\r\n[Cc]ontent-[Ll]ength: " + std::to_string(data.size()) + "\r\n")))
            << head.output;

        struct range {
            std::string spec;
            std::size_t from, to; // inclusive
        };
        for (const range& rg : {range{"65530-131080", 65530, 131080}, range{"0-0", 0, 0},
                                range{"-1000", data.size() - 1000, data.size() - 1}}) {
            SCOPED_TRACE(rg.spec);
            const fs::path part = dir / "part";
            const fs::path headers = dir / "headers";
            const command_result r = run(t.curl(protocol + " -r " + rg.spec + " -D " + q(headers) +
                                                " -o " + q(part) + " " + url));
            EXPECT_EQ(r.status, 0) << r.output;
            const std::string h = slurp(headers);
            EXPECT_TRUE(h.starts_with(status_line + "206")) << h;
            EXPECT_TRUE(std::regex_search(
                h, std::regex("[Cc]ontent-[Rr]ange: bytes " + std::to_string(rg.from) + "-" +
                              std::to_string(rg.to) + "/" + std::to_string(data.size()))))
                << h;
            EXPECT_TRUE(slurp(part) == data.substr(rg.from, rg.to - rg.from + 1));
        }
    }
}

// --- 3. openssl s_client: KeyUpdate, renegotiation, old versions ---------------------------------

/// s_client with `input` fed in steps (each "pause" sleeps 0.6 s): its commands (K, k, R) must
/// come alone in a read of its standard input.
command_result s_client(const tls_server& t, const std::string& options,
                        const std::vector<std::string>& input) {
    std::string feed = "(";
    for (const std::string& step : input)
        feed += step == "pause" ? "sleep 0.6; " : "printf " + q(step) + "; ";
    feed += "sleep 0.6)";
    return run(feed + " | timeout 30 openssl s_client -connect 127.0.0.1:" + t.port_text() +
               " -servername localhost -CAfile " + q(cert("ca.pem")) + " -crlf -msg " + options);
}

const std::string request_line = "GET / HTTP/1.1\nHost: localhost\n\n";

TEST(TlsOpensslTest, KeyUpdateBothWaysOnTarrysOwnRecords) {
    tls_server t;
    const command_result r = s_client(t, "-tls1_3",
                                      {"pause", request_line, "pause", "K\n", "pause", request_line,
                                       "pause", "k\n", "pause", request_line, "pause"});
    const std::string& o = r.output;
    EXPECT_EQ(count(o, "HTTP/1.1 200 OK"), 3U) << o;
    const std::string ours = ">>> TLS 1.3, Handshake [length 0005], KeyUpdate";
    const std::string theirs = "<<< TLS 1.3, Handshake [length 0005], KeyUpdate";
    EXPECT_EQ(count(o, ours), 2U) << o;
    EXPECT_EQ(count(o, theirs), 1U) << "one answer to update_requested, none to not_requested\n"
                                    << o;
    // Order: request, our K, the server's KeyUpdate, the second response.
    const auto k = o.find(ours);
    const auto answer = o.find(theirs);
    const auto second = o.find("HTTP/1.1 200 OK", o.find("HTTP/1.1 200 OK") + 1);
    EXPECT_TRUE(k < answer && answer < second) << o;
    EXPECT_TRUE(answer != std::string::npos && has(o.substr(answer, 100), "18 00 00 01 00"))
        << "update_not_requested\n"
        << o;
    EXPECT_FALSE(has(o, "fatal")) << o;
    EXPECT_EQ(t.await_equal("tarry_tls_own_record_connections", 0), 0) << "closed by now";
}

TEST(TlsOpensslTest, RenegotiationOnTls12IsRefusedAndTheServerStaysHealthy) {
    tls_server t;
    const command_result r =
        s_client(t, "-tls1_2", {"pause", request_line, "pause", "R\n", "pause", request_line});
    EXPECT_TRUE(has(r.output, "RENEGOTIATING")) << r.output;
    EXPECT_TRUE(has(r.output, "<<< TLS 1.2, Alert [length 0002], warning no_renegotiation"))
        << r.output;
    EXPECT_EQ(count(r.output, "HTTP/1.1 200 OK"), 1U) << r.output;
    EXPECT_TRUE(t.alive());
    for (const std::string version : {"--tlsv1.3", "--tls-max 1.2"})
        EXPECT_EQ(run(t.curl(version + " -o /dev/null -w '%{response_code}' " + t.url())).output,
                  "200");
}

TEST(TlsOpensslTest, Tls11AndTls10AreRefusedAsProtocolVersion) {
    tls_server t;
    int n = 0;
    for (const std::string version : {"-tls1_1", "-tls1"}) {
        SCOPED_TRACE(version);
        // Without the system's configuration (which may refuse these before any byte is sent)
        // and at security level 0, so the client really offers the old version.
        const command_result r =
            run("OPENSSL_CONF=/dev/null timeout 20 openssl s_client -connect "
                "127.0.0.1:" +
                t.port_text() + " " + version + " -cipher DEFAULT:@SECLEVEL=0 </dev/null");
        EXPECT_NE(r.status, 0);
        EXPECT_TRUE(has(r.output, "alert protocol version")) << r.output;
        EXPECT_EQ(t.await(failures("protocol_version"), ++n), n) << t.metrics();
    }
    EXPECT_EQ(t.metric(full), 0);
}

// --- 4. Python's ssl module ----------------------------------------------------------------------

std::string python(const std::string& args) {
    return run("timeout 60 python3 " + q(assets / "py_client.py") + " " + args).output;
}

TEST(TlsPythonTest, FiftyRequestsOnOneConnectionThenCloseNotifyBothWays) {
    tls_server t;
    for (const std::string version : {"1.3", "1.2"}) {
        SCOPED_TRACE("TLS " + version);
        const std::string out =
            python("keepalive " + t.port_text() + " " + q(cert("ca.pem")) + " 50 " + version);
        EXPECT_EQ(json_number(out, "ok"), 50) << out;
        EXPECT_TRUE(has(out, "\"version\": \"TLSv" + version + "\"")) << out;
        EXPECT_TRUE(has(out, "\"alpn\": \"http/1.1\"")) << out;
        // unwrap(): our close_notify, then the server's, then the TCP end.
        EXPECT_EQ(json_bool(out, "unwrapped"), 1)
            << "the server answers close_notify with its own\n"
            << out;
        EXPECT_EQ(json_bool(out, "eof"), 1) << out;
    }
    EXPECT_EQ(t.await(full, 2), 2);
}

TEST(TlsPythonTest, ASessionIsResumedOnTheNextConnection) {
    tls_server t({"--workers", "2"});
    int n = 0;
    for (const std::string version : {"1.3", "1.2"}) {
        SCOPED_TRACE("TLS " + version);
        const std::string out =
            python("resume " + t.port_text() + " " + q(cert("ca.pem")) + " " + version);
        EXPECT_EQ(json_number(out, "first_status"), 200) << out;
        EXPECT_EQ(json_bool(out, "has_ticket"), 1) << out;
        EXPECT_EQ(json_number(out, "second_status"), 200) << out;
        EXPECT_EQ(json_bool(out, "reused"), 1) << out;
        EXPECT_TRUE(has(out, "\"version\": \"TLSv" + version + "\"")) << out;
        EXPECT_EQ(t.await(resumed, ++n), n) << t.metrics();
    }
    EXPECT_EQ(t.metric(full), 2);
}

TEST(TlsPythonTest, ManyFreshConnectionsEachGetTheirFirstResponse) {
    // A client that answers the server's flight fast (Python's C code) may have its Finished in
    // the socket while OpenSSL still runs the call that wrote the flight: the session tickets
    // are then written in that same call. The first response must still be sealed under the
    // record sequence number that follows them. Four clients at once, 100 connections each,
    // one request right behind each handshake.
    tls_server t({"--workers", "1"});
    for (const std::string version : {"1.3", "1.2"}) {
        SCOPED_TRACE("TLS " + version);
        const std::string one = "timeout 60 python3 " + q(assets / "py_client.py") + " fresh " +
                                t.port_text() + " " + q(cert("ca.pem")) + " 100 " + version;
        const std::string out = run("for k in 1 2 3 4; do " + one + " & done; wait").output;
        long ok = 0, failed = 0;
        static const std::regex field("\"(ok|failed)\": ([0-9]+)");
        for (auto it = std::sregex_iterator(out.begin(), out.end(), field);
             it != std::sregex_iterator(); ++it)
            ((*it)[1] == "ok" ? ok : failed) += std::stol((*it)[2]);
        EXPECT_EQ(ok, 400) << out;
        EXPECT_EQ(failed, 0) << out;
    }
    EXPECT_EQ(t.metric(closes("tls")), 0);
}

// --- 5. Node.js https with a keep-alive agent ----------------------------------------------------

TEST(TlsNodeTest, AHundredRequestsOnAKeepAliveAgentOverFewSockets) {
    scratch_dir dir("node");
    fs::create_directories(dir / "www");
    for (int k = 0; k < 10; ++k) {
        std::string body;
        for (int i = 0; i < 100; ++i)
            body += "file " + std::to_string(k) + "\n";
        spit(dir / "www" / ("file-" + std::to_string(k) + ".txt"), body);
    }
    tls_server t({"--docroot", (dir / "www").string(), "--workers", "2"});
    const command_result r = run("timeout 60 node " + q(assets / "node_client.js") + " " +
                                 t.port_text() + " " + q(cert("ca.pem")) + " 100 4");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(json_number(r.output, "ok"), 100) << r.output;
    EXPECT_TRUE(has(r.output, "\"bad\":[]")) << r.output;
    const long sockets = json_number(r.output, "sockets");
    EXPECT_GE(sockets, 1) << r.output;
    EXPECT_LE(sockets, 4) << r.output;
    EXPECT_FALSE(has(r.output, "TLSv1.2")) << r.output;
    EXPECT_EQ(count(r.output, "\"http/1.1\""), static_cast<std::size_t>(sockets)) << r.output;
    // One handshake per socket (full, or resumed from the agent's session cache).
    double handshakes = 0;
    eventually([&] {
        const std::string m = t.metrics();
        handshakes = sample(m, full) + sample(m, resumed);
        return handshakes >= static_cast<double>(sockets);
    });
    EXPECT_EQ(handshakes, static_cast<double>(sockets)) << t.metrics();
}

// --- 6. Headless Chromium ------------------------------------------------------------------------

TEST(TlsChromiumTest, APageWithItsAssetsLoadsOverHttpsAndIsScreenshotted) {
    scratch_dir dir("chromium");
    const fs::path www = dir / "www";
    ASSERT_EQ(run("python3 " + q(assets / "make_site.py") + " " + q(www)).status, 0);
    const fs::path log = dir / "access.log";
    tls_server t({"--docroot", www.string(), "--access-log", log.string(), "--workers", "2"});
    // The test CA's certificate is trusted by its key (Chromium has no CA file option).
    const std::string spki =
        run("openssl x509 -in " + q(cert("default.pem")) +
            " -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | "
            "base64")
            .output;
    ASSERT_EQ(spki.size(), 45U) << spki; // 44 characters and the newline
    const std::string chromium =
        "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--disable-dev-shm-usage --ignore-certificate-errors-spki-list=" +
        spki.substr(0, 44) + " --window-size=800,600 ";
    // Kept after the run, for a look.
    const fs::path shot = fs::temp_directory_path() / "tarry_tls_interop_chromium.png";
    fs::remove(shot);
    const command_result r = run(chromium + "--user-data-dir=" + q(dir / "profile") +
                                 " --screenshot=" + q(shot) + " " + t.url());
    ASSERT_TRUE(fs::exists(shot)) << r.output;
    const auto size = fs::file_size(shot);
    std::cout << "[ screenshot ] " << shot.string() << " (" << size << " bytes)" << std::endl;
    RecordProperty("screenshot", shot.string());
    EXPECT_EQ(slurp(shot).substr(0, 8), "\x89PNG\r\n\x1a\n");
    EXPECT_GT(size, 10000U) << "an empty 800x600 page compresses to a few hundred bytes";

    // The script ran (it requested data.json and wrote it into the page).
    const command_result dom =
        run(chromium + "--user-data-dir=" + q(dir / "profile2") + " --dump-dom " + t.url());
    EXPECT_TRUE(has(dom.output, "fetched over TLS by app.js")) << dom.output;

    for (const std::string asset :
         {"/", "/style.css", "/app.js", "/photo.png", "/logo.svg", "/pattern.png", "/data.json"}) {
        // Over HTTP/2: Chromium offers h2 first, and http2 is on by default.
        const std::string line = "\"GET " + asset + " HTTP/2.0\" 200 ";
        // The access log is flushed within a second.
        EXPECT_TRUE(eventually([&] { return has(slurp(log), line); }))
            << asset << " not answered 200:\n"
            << slurp(log);
    }
    const std::string m = t.metrics();
    EXPECT_GE(sample(m, full), 2) << m;
    EXPECT_EQ(sample(m, failures("no_alpn")), 0) << "Chromium offers h2 and http/1.1";
    EXPECT_EQ(sample(m, closes("tls")), 0) << m;
}

// --- 7. A stalled or trickled handshake ----------------------------------------------------------

TEST(TlsHandshakeTimeoutTest, SilentAndTrickledHandshakesAreClosedAtTheTimeout) {
    tls_server t({"--handshake-timeout", "1s", "--workers", "1"});
    const std::string hello = client_hello();
    ASSERT_GT(hello.size(), 100U);
    ASSERT_EQ(hello[0], '\x16');

    const auto start = steady::now();
    std::optional<steady::duration> silent_after;
    std::string silent_got;
    std::thread silent([&] {
        test_client c(t.port());
        if (const auto at = c.wait_closed(8s)) silent_after = *at - start;
        silent_got = c.pending();
    });
    // One byte of a real ClientHello every 100 ms: never complete, never quiet.
    test_client trickle(t.port());
    ASSERT_TRUE(trickle.connected());
    std::optional<steady::duration> trickle_after;
    // Waited for 8 s at most: well before the 10 s default.
    for (std::size_t i = 0; i < hello.size() && steady::now() - start < 8s; ++i) {
        if (!trickle.send(hello.substr(i, 1))) break;
        if (const auto at = trickle.wait_closed(100ms)) {
            trickle_after = *at - start;
            break;
        }
    }
    silent.join();
    ASSERT_TRUE(trickle_after.has_value()) << "the trickled handshake was never closed";
    ASSERT_TRUE(silent_after.has_value()) << "the silent handshake was never closed";
    for (const auto after : {*trickle_after, *silent_after}) {
        EXPECT_GE(after, 950ms) << "not before the handshake timeout";
    }
    EXPECT_EQ(trickle.pending(), "") << "closed silently";
    EXPECT_EQ(silent_got, "") << "closed silently";
    EXPECT_EQ(t.await(failures("timeout"), 2), 2) << t.metrics();
    EXPECT_EQ(t.await(closes("handshake"), 2), 2);
    EXPECT_EQ(t.await_equal(handshaking, 0), 0);
    EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' " + t.url())).output, "200");
}

TEST(TlsHandshakeTimeoutTest, OneByteOfAClientHelloThenAStallIsClosedAtTheHandshakeTimeout) {
    // The first byte makes the handshake's state (OpenSSL's object): a stall after it is still
    // a handshake, closed silently at its timeout, not at the longer header timeout.
    tls_server t({"--handshake-timeout", "1s", "--header-timeout", "30s", "--workers", "1"});
    const auto start = steady::now();
    test_client c(t.port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(client_hello().substr(0, 1)));
    const auto closed = c.wait_closed(8s);
    ASSERT_TRUE(closed.has_value()) << "never closed";
    EXPECT_GE(*closed - start, 950ms) << "not before the handshake timeout";
    EXPECT_EQ(c.pending(), "") << "closed silently";
    EXPECT_EQ(t.await(failures("timeout"), 1), 1) << t.metrics();
    EXPECT_EQ(t.await(closes("handshake"), 1), 1);
    EXPECT_EQ(t.await_equal(handshaking, 0), 0);
    EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' " + t.url())).output, "200");
}

// --- 7b. Connections that wait before they speak -------------------------------------------------
// A bare connection costs the connection alone until its first byte, and a connection whose
// handshake is done holds no buffer until its request: each must still be answered as soon as
// it speaks.

TEST(TlsPreconnectTest, APreconnectedSocketAndABareConnectionAreAnsweredWhenTheySpeak) {
    tls_server t({"--workers", "1"});
    int n = 0;
    for (const std::string version : {"1.3", "1.2"}) {
        SCOPED_TRACE("TLS " + version);
        const std::string out = python("preconnect " + t.port_text() + " " + q(cert("ca.pem")) +
                                       " " + version + " " + std::to_string(t.admin_port()));
        EXPECT_EQ(json_bool(out, "waiting"), 1)
            << "the server counted one silent and one handshaking connection\n"
            << out;
        EXPECT_EQ(json_number(out, "preconnected_status"), 200) << out;
        EXPECT_EQ(json_number(out, "bare_status"), 200) << out;
        EXPECT_TRUE(has(out, "\"bare_version\": \"TLSv" + version + "\"")) << out;
        n += 2;
        EXPECT_EQ(t.await(full, n), n) << t.metrics();
    }
    const std::string m = t.metrics();
    EXPECT_EQ(sample(m, closes("handshake")), 0) << m;
    EXPECT_EQ(sample(m, closes("tls")), 0) << m;
}

TEST(TlsPreconnectTest, OpensslSClientSendsItsRequestLongAfterItsHandshake) {
    tls_server t({"--workers", "1"});
    const fs::path dir =
        fs::temp_directory_path() / ("tarry_preconnect_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string fifo = q(dir / "in");
    const std::string metrics = "http://127.0.0.1:" + std::to_string(t.admin_port()) + "/metrics";
    // s_client shakes hands and waits on its input (a fifo held open); once the server counts the
    // connection silent (handshake done, nothing received), the request goes in.
    const command_result r = run(
        "mkfifo " + fifo + " && (timeout 30 openssl s_client -connect 127.0.0.1:" + t.port_text() +
        " -servername localhost -CAfile " + q(cert("ca.pem")) + " -tls1_3 -quiet -ign_eof < " +
        fifo + " > " + q(dir / "out") + " 2>&1 &) && exec 3> " + fifo +
        " && for i in $(seq 200); do curl -s " + metrics +
        " | grep -q '^tarry_connections_by_phase{phase=\"silent\"} 1$' && break; sleep 0.05; done"
        " && curl -s " +
        metrics +
        " | grep '^tarry_connections_by_phase{phase=\"silent\"}'"
        " && printf 'GET / HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3"
        " && exec 3>&- && for i in $(seq 200); do grep -q 'Hello, World!' " +
        q(dir / "out") + " && break; sleep 0.05; done; cat " + q(dir / "out"));
    EXPECT_TRUE(has(r.output, "tarry_connections_by_phase{phase=\"silent\"} 1")) << r.output;
    EXPECT_TRUE(has(r.output, "HTTP/1.1 200 OK")) << r.output;
    EXPECT_TRUE(has(r.output, "Hello, World!")) << r.output;
    EXPECT_EQ(t.await(full, 1), 1);
    fs::remove_all(dir);
}

// --- 8. Plain HTTP on the TLS port ---------------------------------------------------------------

TEST(TlsPlainHttpTest, AnHttpRequestGetsAReadable400AndAnOrderlyClose) {
    tls_server t;
    // Alone, and with a second request pipelined behind it (closing at once would make the
    // kernel answer the unread bytes with a reset, which can destroy the 400 in flight).
    int n = 0;
    for (const char* sent :
         {"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
          "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /more HTTP/1.1\r\nHost: x\r\n\r\n"}) {
        test_client c(t.port());
        ASSERT_TRUE(c.send(sent));
        const auto [got, fin] = read_to_end(c.fd());
        EXPECT_TRUE(got.starts_with("HTTP/1.1 400 Bad Request\r\n")) << got;
        EXPECT_TRUE(got.ends_with("\r\n\r\nThe plain HTTP request was sent to HTTPS port\n"))
            << "nginx's hint: " << got;
        EXPECT_TRUE(fin) << "an end, not a reset: " << got;
        EXPECT_EQ(count(got, "HTTP/1.1 "), 1U) << got;
        EXPECT_EQ(t.await(failures("plain_http"), ++n), n) << t.metrics();
    }
    // curl, told http:// by mistake, reads the answer too.
    const command_result r =
        run("timeout 20 curl -sS -w ' %{response_code}' http://127.0.0.1:" + t.port_text() + "/");
    EXPECT_TRUE(r.output.ends_with(" 400")) << r.output;
    // Bytes that are neither TLS nor a request are answered 400 too, as nginx's parser does,
    // without the hint.
    test_client junk(t.port());
    ASSERT_TRUE(junk.send(std::string("\x00\x01\x02\x03garbage\r\n\r\n", 15)));
    const auto [junk_got, junk_fin] = read_to_end(junk.fd());
    EXPECT_TRUE(junk_got.starts_with("HTTP/1.1 400 Bad Request\r\n")) << junk_got;
    EXPECT_TRUE(junk_got.ends_with("\r\n\r\nBad Request\n")) << junk_got;
    EXPECT_TRUE(junk_fin) << junk_got;
    EXPECT_EQ(t.await(failures("not_tls"), 1), 1) << t.metrics();
    // An SSLv2-style hello (the high bit) is closed unanswered.
    test_client v2(t.port());
    ASSERT_TRUE(v2.send(std::string("\x80\x2e\x01\x00\x02", 5)));
    const auto [v2_got, v2_fin] = read_to_end(v2.fd());
    // A reset is fine here: the bytes were never read, and no answer was due.
    EXPECT_TRUE(v2_got.empty() || v2_got.starts_with("[recv: ")) << v2_got;
    EXPECT_EQ(t.await(failures("not_tls"), 2), 2) << t.metrics();
    EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' " + t.url())).output, "200");
}

TEST(TlsAccessLogTest, LinesSayHttpsThePortAndTheTlsVersionAndAPlainRequestItsLine) {
    scratch_dir dir("access_log");
    const fs::path log = dir / "access.log";
    tls_server t({"--access-log", log.string(), "--access-log-format", "extended"});
    ASSERT_EQ(run(t.curl("--tlsv1.3 -o /dev/null " + t.url() + "v13")).status, 0);
    ASSERT_EQ(run(t.curl("--tlsv1.2 --tls-max 1.2 -o /dev/null " + t.url() + "v12")).status, 0);
    test_client plain(t.port()); // HTTP on the TLS port: 400, logged with its request line
    ASSERT_TRUE(plain.send("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(read_to_end(plain.fd()).first.starts_with("HTTP/1.1 400 "));
    const std::string port = " port=" + t.port_text() + " ";
    for (const auto& row :
         {std::pair{"\"GET /v13 HTTP/2.0\" 200 ", "scheme=https" + port + "tls=TLSv1.3\n"},
          std::pair{"\"GET /v12 HTTP/2.0\" 200 ", "scheme=https" + port + "tls=TLSv1.2\n"},
          std::pair{"\"GET /plain HTTP/1.1\" 400 ", "scheme=http" + port + "tls=-\n"}}) {
        // Named copies: clang 14 cannot capture a structured binding in a lambda (C++20 allows it).
        const std::string request = row.first;
        const std::string& end = row.second;
        std::string text;
        EXPECT_TRUE(eventually([&] {
            text = slurp(log);
            const auto at = text.find(request);
            return at != std::string::npos &&
                   text.find('\n', at) == text.find(end, at) + end.size() - 1;
        })) << request
            << " ... " << end << " not in:\n"
            << text;
    }
}

// --- 9. Resumption across a reload ---------------------------------------------------------------

/// A configuration file with the default certificate (`cert_name`.pem/.key) and `more`.
void write_config(const fs::path& file, const std::string& cert_name, const std::string& key_name,
                  const std::string& more = {}) {
    spit(file, "workers = 2\ntls_certificate = \"" + cert(cert_name + ".pem").string() +
                   "\"\ntls_certificate_key = \"" + cert(key_name + ".key").string() + "\"\n" +
                   more);
}

TEST(TlsReloadTest, ATicketFromBeforeAReloadResumesAfterIt) {
    scratch_dir dir("reload_resume");
    const fs::path cfg = dir / "tarry.toml";
    const fs::path log = dir / "out.log";
    // An expired certificate for one name: its warning says when a reload is done ("reload: ").
    write_config(cfg, "default", "default",
                 "[[tls]]\nserver_names = [\"old.test\"]\ncertificate = \"" +
                     cert("expired.pem").string() + "\"\ncertificate_key = \"" +
                     cert("expired.key").string() + "\"\n");
    tls_server t({"--config", cfg.string()}, false, log);
    int reloads = 0;
    for (const std::string version : {"1.3", "1.2"}) {
        SCOPED_TRACE("TLS " + version);
        ++reloads;
        const std::string between =
            "kill -HUP " + std::to_string(t.pid()) + "; for i in $(seq 100); do [ $(grep -c " +
            "'reload: tls\\[1\\]' " + q(log) + ") -ge " + std::to_string(reloads) +
            " ] && exit 0; sleep 0.05; done; exit 1";
        const std::string out = python("resume " + t.port_text() + " " + q(cert("ca.pem")) + " " +
                                       version + " " + q(between));
        EXPECT_EQ(json_number(out, "between_status"), 0) << "the reload was seen\n"
                                                         << out << slurp(log);
        EXPECT_EQ(json_number(out, "first_status"), 200) << out;
        EXPECT_EQ(json_number(out, "second_status"), 200) << out;
        EXPECT_EQ(json_bool(out, "reused"), 1) << "ticket keys survive the reload\n" << out;
        EXPECT_EQ(t.await(resumed, reloads), reloads) << t.metrics();
    }
    EXPECT_FALSE(has(slurp(log), "reload rejected")) << slurp(log);
}

TEST(TlsResumptionTest, EachResumedTls13ConnectionGetsFreshTicketsThatResumeAgain) {
    // A TLS 1.3 client uses a ticket once (RFC 8446, C.4; OpenSSL's client does): unless each
    // resumption brings new tickets, every other connection is a full handshake. A chain of
    // three: s1 from a full handshake resumes and gives s2, which resumes and gives s3.
    scratch_dir dir("ticket_chain");
    tls_server t({"--workers", "1"});
    const auto connect = [&](const std::string& in, const std::string& out) {
        return run("printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' | "
                   "timeout 10 openssl s_client -connect 127.0.0.1:" +
                   t.port_text() + " -tls1_3 -ign_eof -CAfile " + q(cert("ca.pem")) +
                   (in.empty() ? "" : " -sess_in " + q(dir / in)) + " -sess_out " + q(dir / out) +
                   " 2>&1")
            .output;
    };
    const std::string first = connect("", "s1");
    EXPECT_TRUE(has(first, "New, TLSv1.3")) << first;
    EXPECT_TRUE(has(first, "HTTP/1.1 200 OK")) << first;
    ASSERT_TRUE(fs::exists(dir / "s1")) << first;
    const std::string second = connect("s1", "s2");
    EXPECT_TRUE(has(second, "Reused, TLSv1.3")) << second;
    EXPECT_TRUE(has(second, "HTTP/1.1 200 OK")) << second;
    ASSERT_TRUE(fs::exists(dir / "s2")) << "no ticket came on the resumed connection\n" << second;
    const std::string third = connect("s2", "s3");
    EXPECT_TRUE(has(third, "Reused, TLSv1.3")) << third;
    EXPECT_TRUE(has(third, "HTTP/1.1 200 OK")) << third;
    EXPECT_EQ(t.await(resumed, 2), 2) << t.metrics();
    EXPECT_EQ(t.metric(full), 1) << t.metrics();
}

// --- 10. SNI -------------------------------------------------------------------------------------

TEST(TlsSniTest, EachNameGetsItsCertificateAndOthersTheDefault) {
    scratch_dir dir("sni");
    const fs::path cfg = dir / "tarry.toml";
    std::string tables;
    for (const auto& [names, file] : {std::pair<std::string, std::string>{"\"a.test\"", "a"},
                                      {"\"b.test\", \"*.b.test\"", "b"}})
        tables += "[[tls]]\nserver_names = [" + names + "]\ncertificate = \"" +
                  cert(file + ".pem").string() + "\"\ncertificate_key = \"" +
                  cert(file + ".key").string() + "\"\n";
    write_config(cfg, "default", "default", tables);
    tls_server t({"--config", cfg.string()}, false);
    for (const auto& [name, cn] : std::vector<std::pair<std::string, std::string>>{
             {"a.test", "a.test"},
             {"A.Test", "a.test"},  // names are case-insensitive
             {"a.test.", "a.test"}, // a trailing dot ignored, as nginx does
             {"x.b.test.", "b.test"},
             {"b.test", "b.test"},
             {"x.b.test", "b.test"},          // the wildcard, one label
             {"y.x.b.test", "tarry-default"}, // not two
             {"unknown.test", "tarry-default"},
             {"", "tarry-default"}}) { // no SNI
        EXPECT_EQ(served_cn(t, name), cn) << "server name '" << name << "'";
    }
    // A client that checks the name against the certificate is satisfied.
    for (const std::string host : {"a.test", "b.test", "localhost"})
        EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' https://" + host + ":" +
                                 t.port_text() + "/",
                             host))
                      .output,
                  "200")
            << host;
    EXPECT_EQ(t.metric(failures("peer_alert")), 0);
}

// --- 11. A reload with a bad key, then a good one ------------------------------------------------

TEST(TlsReloadTest, ABadKeyIsRejectedKeepingTheRunningCertificateThenAGoodOneSwitches) {
    scratch_dir dir("reload_bad");
    const fs::path cfg = dir / "tarry.toml";
    const fs::path log = dir / "out.log";
    write_config(cfg, "default", "default");
    tls_server t({"--config", cfg.string()}, false, log);
    ASSERT_EQ(served_cn(t, "localhost"), "tarry-default");
    const std::string rejected = "reload rejected, keeping the running configuration: ";
    std::size_t n = 0;
    for (const std::string bad_key : {"other", "garbage"}) {
        SCOPED_TRACE(bad_key);
        write_config(cfg, "renewed", bad_key);
        ::kill(t.pid(), SIGHUP);
        ++n;
        eventually([&] { return count(slurp(log), rejected) >= n; });
        const std::string out = slurp(log);
        EXPECT_EQ(count(out, rejected), n) << out;
        EXPECT_EQ(count(out, bad_key + ".key"), 1U) << "one line naming the key\n" << out;
        EXPECT_EQ(served_cn(t, "localhost"), "tarry-default") << "the running certificate";
        EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' " + t.url())).output, "200");
    }
    write_config(cfg, "renewed", "renewed");
    ::kill(t.pid(), SIGHUP);
    std::string cn;
    eventually([&] { return (cn = served_cn(t, "localhost")) == "tarry-renewed"; });
    EXPECT_EQ(cn, "tarry-renewed") << slurp(log);
    EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' " + t.url())).output, "200");
    EXPECT_EQ(count(slurp(log), rejected), 2U) << slurp(log);
    EXPECT_TRUE(t.alive());
}

// --- 12. --check-config --------------------------------------------------------------------------

TEST(TlsCheckConfigTest, AMismatchedKeyExitsTwoAndAnExpiredCertificateWarns) {
    const std::string listen = "--listen 127.0.0.1:" + std::to_string(free_port()) +
                               " --tls-listen 127.0.0.1:" + std::to_string(free_port());
    for (const std::string key : {"other", "garbage"}) {
        SCOPED_TRACE(key);
        const run_result r =
            run_tarry("--check-config " + listen + " --tls-certificate " + q(cert("default.pem")) +
                      " --tls-certificate-key " + q(cert(key + ".key")));
        EXPECT_EQ(r.status, 2) << r.output;
        EXPECT_EQ(count(r.output, "\n"), 1U) << r.output;
        EXPECT_TRUE(r.output.starts_with(
            "tarry: tls_certificate_key: " + cert(key + ".key").string() + ": "))
            << r.output;
    }
    const run_result expired =
        run_tarry("--check-config " + listen + " --tls-certificate " + q(cert("expired.pem")) +
                  " --tls-certificate-key " + q(cert("expired.key")));
    EXPECT_EQ(expired.status, 0) << expired.output;
    EXPECT_TRUE(has(expired.output, "tarry: warning: tls_certificate: the certificate " +
                                        cert("expired.pem").string() + " expired on Jan 31"))
        << expired.output;
    EXPECT_TRUE(has(expired.output, "configuration OK")) << expired.output;
    const run_result good =
        run_tarry("--check-config " + listen + " --tls-certificate " + q(cert("default.pem")) +
                  " --tls-certificate-key " + q(cert("default.key")));
    EXPECT_EQ(good.status, 0) << good.output;
    EXPECT_FALSE(has(good.output, "warning")) << good.output;
}

TEST(TlsCheckConfigTest, EachCertificateAndKeyErrorNamesTheSettingTheFileAndTheReason) {
    scratch_dir dir("cert_errors");
    const fs::path missing = dir / "missing.key";
    // Readable by root only, as certbot leaves its keys: tarry runs as nobody here.
    const fs::path root_only = dir / "root-only.key";
    fs::copy_file(cert("default.key"), root_only);
    fs::permissions(root_only, fs::perms::owner_read);
    fs::permissions(dir.path(),
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    const std::string as_nobody = ::geteuid() == 0 ? "setpriv --reuid=nobody --regid=nogroup "
                                                     "--clear-groups "
                                                   : "";
    const std::string user = ::geteuid() == 0 ? "nobody" : std::string(::getenv("USER"));
    const std::string listen = " --listen 127.0.0.1:" + std::to_string(free_port()) +
                               " --tls-listen 127.0.0.1:" + std::to_string(free_port());
    const auto check = [&](const fs::path& c, const fs::path& k, const std::string& runner = {}) {
        return run_shell(runner + TARRY_BINARY + " --check-config" + listen +
                         " --tls-certificate " + q(c) + " --tls-certificate-key " + q(k));
    };
    const std::string pem = cert("default.pem").string();
    const std::string key = cert("default.key").string();
    for (const auto& [r, line] : std::vector<std::pair<run_result, std::string>>{
             {check(cert("default.pem"), missing),
              "tls_certificate_key: " + missing.string() + ": missing (no such file)"},
             {check(missing, cert("default.key")),
              "tls_certificate: " + missing.string() + ": missing (no such file)"},
             {check(cert("default.pem"), root_only, as_nobody),
              "tls_certificate_key: " + root_only.string() + ": permission denied for user " +
                  user},
             {check(cert("default.pem"), cert("default.pem")),
              "tls_certificate_key: " + pem + ": not a private key (it holds a certificate)"},
             {check(cert("default.key"), cert("default.key")),
              "tls_certificate: " + key + ": not a certificate (it holds a private key)"},
             {check(cert("default.pem"), cert("other.key")),
              "tls_certificate_key: " + cert("other.key").string() +
                  ": the key does not match the certificate " + pem},
             {check(cert("default.pem"), dir.path()),
              "tls_certificate_key: " + dir.path().string() + ": a directory, not a file"}}) {
        EXPECT_EQ(r.status, 2) << r.output;
        EXPECT_EQ(r.output, "tarry: " + line + "\n");
    }
    const run_result garbage = check(cert("default.pem"), cert("garbage.key"));
    EXPECT_EQ(garbage.status, 2);
    EXPECT_TRUE(
        garbage.output.starts_with("tarry: tls_certificate_key: " + cert("garbage.key").string() +
                                   ": not a private key (no PEM PRIVATE KEY block"))
        << garbage.output;
    // A [[tls]] table's keys are named by the table.
    const fs::path cfg = dir / "tarry.toml";
    write_config(cfg, "default", "default",
                 "[[tls]]\nserver_names = [\"a.test\"]\ncertificate = \"" + cert("a.pem").string() +
                     "\"\ncertificate_key = \"" + missing.string() + "\"\n");
    const run_result table = run_tarry("--check-config" + listen + " --config " + q(cfg));
    EXPECT_EQ(table.status, 2);
    EXPECT_EQ(table.output,
              "tarry: tls[1].certificate_key: " + missing.string() + ": missing (no such file)\n");
}

// --- 13. Pressure: silent handshakes at the connection limit -------------------------------------

TEST(TlsPressureTest, SilentHandshakesAtTheLimitAreReclaimedForARealClient) {
    tls_server t({"--max-connections", "20", "--workers", "1"});
    // The start-up probe's connection is gone.
    EXPECT_EQ(t.await_equal("tarry_connections_open", 0), 0) << t.metrics();
    std::vector<std::unique_ptr<test_client>> silent;
    for (int i = 0; i < 20; ++i) {
        silent.push_back(std::make_unique<test_client>(t.port()));
        ASSERT_TRUE(silent.back()->connected());
    }
    EXPECT_EQ(t.await(handshaking, 20), 20) << t.metrics();
    std::this_thread::sleep_for(1100ms); // past the grace (keep_alive_min_timeout / 10)
    const command_result r = run(t.curl("-o /dev/null -w '%{response_code}' " + t.url()));
    EXPECT_EQ(r.output, "200");
    // Served because a silent handshake was closed for it, not after a handshake timeout.
    EXPECT_GE(t.await(closes("pressure"), 1), 1) << t.metrics();
    EXPECT_EQ(t.metric(failures("timeout")), 0) << t.metrics();
    int closed = 0;
    for (auto& c : silent)
        closed += c->wait_closed(10ms).has_value() ? 1 : 0;
    EXPECT_GE(closed, 1) << "a silent handshake gave its place";
    EXPECT_EQ(t.metric(failures("timeout")), 0);
}

// An explicit limit far below the open-file limit holds for TLS clients held mid-request (never
// reclaimed: a request is on its way): at most a sixteenth past it (one at 4). Newcomers wait in
// the backlog for their handshake, and get it as soon as held connections go.
TEST(TlsPressureTest, TheLimitHoldsForTlsClientsMidRequestAndNewcomersShakeHandsAsTheyGo) {
    tls_server t({"--max-connections", "4", "--workers", "1", "--header-timeout", "30s"});
    // The start-up probe's connection is gone.
    EXPECT_EQ(t.await_equal("tarry_connections_open", 0), 0) << t.metrics();
    std::vector<std::unique_ptr<ossl_client>> held;
    for (int i = 0; i < 5; ++i) {
        held.push_back(std::make_unique<ossl_client>(t.port(), TLS1_3_VERSION));
        ASSERT_TRUE(held.back()->connected()) << i << ": " << held.back()->error();
        ASSERT_TRUE(held.back()->write_records("GET / HTTP/1.1\r\nHost:", 64));
    }
    std::vector<std::unique_ptr<ossl_client>> late(3);
    std::vector<std::thread> comers;
    for (std::size_t i = 0; i < late.size(); ++i)
        comers.emplace_back(
            [&, i] { late[i] = std::make_unique<ossl_client>(t.port(), TLS1_3_VERSION); });
    std::this_thread::sleep_for(1500ms); // retries every 100 ms: many chances to go past
    EXPECT_EQ(t.metric("tarry_connections_open"), 5) << t.metrics();
    EXPECT_EQ(t.metric(closes("pressure")), 0);
    held.resize(1); // four go: the newcomers fit under the limit (past it, an idle one could be
                    // taken for a newcomer, as any idle connection is)
    for (auto& c : comers)
        c.join();
    for (auto& c : late) {
        ASSERT_TRUE(c->connected()) << c->error();
        EXPECT_TRUE(c->get("/").starts_with("HTTP/1.1 200")) << t.metrics();
    }
    EXPECT_EQ(t.metric(closes("pressure")), 0);
}

// --- 14. A reset mid-handshake -------------------------------------------------------------------

TEST(TlsResetTest, AResetMidHandshakeCostsNothingAndIsCountedAsClientClosed) {
    tls_server t({"--workers", "1"});
    const std::string hello = client_hello();
    for (int i = 1; i <= 10; ++i) {
        const int fd = raw_connect(t.port());
        ASSERT_GE(fd, 0);
        const std::string half = hello.substr(0, hello.size() / 2);
        ASSERT_EQ(::send(fd, half.data(), half.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(half.size()));
        // Accepted and waiting for the rest, then reset.
        const double waiting = t.await(handshaking, 1);
        reset(fd);
        ASSERT_EQ(waiting, 1) << t.metrics();
        ASSERT_EQ(t.await(failures("client_closed"), i), i) << t.metrics();
    }
    EXPECT_EQ(t.await(closes("handshake"), 10), 10);
    EXPECT_EQ(t.await_equal(handshaking, 0), 0);
    EXPECT_TRUE(t.alive());
    EXPECT_EQ(run(t.curl("-o /dev/null -w '%{response_code}' " + t.url())).output, "200");
}

// --- 15. Forged records after the handshake ------------------------------------------------------

struct forged {
    std::string name;
    std::string record;
    int alert; ///< what the server must answer with
};

std::vector<forged> forgeries() {
    return {
        // Application data whose tag cannot authenticate.
        {"bad MAC", std::string("\x17\x03\x03\x00\x20", 5) + std::string(32, '\x42'),
         SSL_AD_BAD_RECORD_MAC},
        // change_cipher_spec after the handshake.
        {"change_cipher_spec", std::string("\x14\x03\x03\x00\x01\x01", 6),
         SSL_AD_UNEXPECTED_MESSAGE},
        // A header announcing more than 2^14 + 256 bytes.
        {"oversized", std::string("\x17\x03\x03\x48\x00", 5) + std::string(64, '\x42'),
         SSL_AD_RECORD_OVERFLOW},
    };
}

TEST(TlsForgedRecordTest, ForgedRecordsAfterATls13HandshakeGetAnAlertAndAClose) {
    tls_server t({"--workers", "1"});
    int n = 0;
    for (const forged& f : forgeries()) {
        SCOPED_TRACE(f.name);
        ossl_client c(t.port(), TLS1_3_VERSION);
        ASSERT_TRUE(c.connected()) << c.error();
        const std::string r = c.get("/before");
        ASSERT_TRUE(r.starts_with("HTTP/1.1 200 OK")) << r;
        ASSERT_EQ(::send(c.fd(), f.record.data(), f.record.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(f.record.size()));
        int reason = 0;
        const std::string failure = c.read_failure(reason);
        EXPECT_EQ(reason, SSL_AD_REASON_OFFSET + f.alert) << "the client read: " << failure;
        EXPECT_TRUE(c.socket_ends()) << "then the TCP end";
        EXPECT_EQ(t.await(closes("tls"), ++n), n) << t.metrics();
    }
    EXPECT_EQ(t.await_equal("tarry_tls_own_record_connections", 0), 0);
    EXPECT_TRUE(t.alive());
}

TEST(TlsForgedRecordTest, ABadMacAfterATls12HandshakeGetsAnAlertAndAClose) {
    tls_server t({"--workers", "1"});
    ossl_client c(t.port(), TLS1_2_VERSION);
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_EQ(c.version(), "TLSv1.2");
    ASSERT_TRUE(c.get("/before").starts_with("HTTP/1.1 200 OK"));
    const forged f = forgeries().front();
    ASSERT_EQ(::send(c.fd(), f.record.data(), f.record.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(f.record.size()));
    int reason = 0;
    const std::string failure = c.read_failure(reason);
    EXPECT_EQ(reason, SSL_AD_REASON_OFFSET + SSL_AD_BAD_RECORD_MAC) << failure;
    EXPECT_TRUE(c.socket_ends());
    EXPECT_EQ(t.await(closes("tls"), 1), 1) << t.metrics();
}

// --- 15b. Floods of records that carry nothing ---------------------------------------------------

std::string noop_closes(const std::string& kind) {
    return "tarry_tls_noop_record_closes_total{kind=\"" + kind + "\"}";
}

TEST(TlsNoopRecordTest, EachFloodIsClosedWithUnexpectedMessageAndAnotherClientIsServed) {
    // A client pours records that carry no data (empty application data, user_canceled
    // alerts, KeyUpdates) right after its handshake; another client on the same worker sends
    // an ordinary request behind the flood. The flood ends with unexpected_message and is
    // counted by kind; the other client is answered.
    tls_server t({"--workers", "1"});
    const tls::test::bytes key_update{24, 0, 0, 1, 0};
    struct flood {
        std::string kind;
        std::uint8_t type;
        tls::test::bytes body;
    };
    int n = 0;
    for (const flood& f : {flood{"empty_data", tls::application_data, {}},
                           flood{"warning_alert", tls::alert, {1, 90}},
                           flood{"key_update", tls::handshake_record, key_update}}) {
        SCOPED_TRACE(f.kind);
        ossl_client other(t.port(), TLS1_3_VERSION);
        ASSERT_TRUE(other.connected()) << other.error();
        ossl_client c(t.port(), TLS1_3_VERSION);
        ASSERT_TRUE(c.connected()) << c.error();
        auto w = c.own_writer();
        ASSERT_TRUE(w);
        std::string wire;
        for (int i = 0; i < 20000; ++i) {
            std::string rec(f.body.size() + tls::record_overhead, '\0');
            rec.resize(w->seal(f.type, f.body.data(), f.body.size(),
                               reinterpret_cast<std::uint8_t*>(rec.data())));
            wire += rec;
            if (f.type == tls::handshake_record) {
                ASSERT_TRUE(w->update());
            }
        }
        // The server closes partway: the rest of the flood meets a reset.
        [[maybe_unused]] const ssize_t sent =
            ::send(c.fd(), wire.data(), wire.size(), MSG_NOSIGNAL);
        EXPECT_TRUE(other.get("/behind").starts_with("HTTP/1.1 200 OK"));
        int reason = 0;
        std::string failure;
        for (int i = 0; i < 10 && reason == 0; ++i) // the session tickets come first
            failure = c.read_failure(reason);
        EXPECT_EQ(reason, SSL_AD_REASON_OFFSET + SSL_AD_UNEXPECTED_MESSAGE)
            << "the client read: " << failure;
        EXPECT_EQ(t.await(noop_closes(f.kind), 1), 1) << t.metrics();
        EXPECT_EQ(t.await(closes("tls"), ++n), n);
    }
    const std::string m = t.metrics();
    for (const std::string kind : {"empty_data", "warning_alert", "key_update"})
        EXPECT_EQ(sample(m, noop_closes(kind)), 1) << m;
    EXPECT_TRUE(t.alive());
}

TEST(TlsNoopRecordTest, AKeyUpdateSplitOverTwoRecordsIsTaken) {
    // RFC 8446, 5.1 (OpenSSL's client does not split it, so the records are made here).
    tls_server t({"--workers", "1"});
    ossl_client c(t.port(), TLS1_3_VERSION);
    ASSERT_TRUE(c.connected()) << c.error();
    auto w = c.own_writer();
    ASSERT_TRUE(w);
    const auto seal = [&](std::uint8_t type, const std::string& body) {
        std::string rec(body.size() + tls::record_overhead, '\0');
        rec.resize(w->seal(type, reinterpret_cast<const std::uint8_t*>(body.data()), body.size(),
                           reinterpret_cast<std::uint8_t*>(rec.data())));
        return rec;
    };
    std::string wire = seal(tls::handshake_record, std::string("\x18\x00", 2));
    wire += seal(tls::handshake_record, std::string("\x00\x01\x00", 3));
    ASSERT_TRUE(w->update());
    wire += seal(tls::application_data,
                 "GET /after HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(::send(c.fd(), wire.data(), wire.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(wire.size()));
    std::string got;
    int reason = 0;
    for (int i = 0; i < 10 && reason == 0 && !got.ends_with("close_notify"); ++i)
        got += c.read_failure(reason);
    EXPECT_TRUE(has(got, "HTTP/1.1 200 OK")) << got;
    EXPECT_EQ(reason, 0) << "an orderly end (close_notify) after the response: " << got;
    EXPECT_EQ(t.metric(closes("tls")), 0) << t.metrics();
}

// --- 15c. close_notify at the header and body timeouts -------------------------------------------

TEST(TlsRecordsTest, HeaderAndBodyTimeoutsEndWithCloseNotify) {
    // RFC 8446, 6.1: a close that is not an error alert says so, timeouts included: a silent
    // connection, a request head cut short (408 first), a body that stalls (408 first).
    tls_server t({"--header-timeout", "1s", "--body-timeout", "1s", "--workers", "1"});
    struct step {
        std::string name;
        std::string sent;
        std::string answer; ///< how the response before the end starts ("": none)
    };
    int header = 0;
    int body = 0;
    for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
        // (The default site refuses a POST at once, then discards the body it waits for.)
        for (const step& s :
             {step{"silent", "", ""},
              step{"part of a head", "GET / HTTP/1.1\r\nHost:", "HTTP/1.1 408 "},
              step{"part of a body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab",
                   "HTTP/1.1 405 "}}) {
            SCOPED_TRACE(s.name + (version == TLS1_3_VERSION ? " TLS 1.3" : " TLS 1.2"));
            ossl_client c(t.port(), version);
            ASSERT_TRUE(c.connected()) << c.error();
            if (!s.sent.empty()) {
                ASSERT_TRUE(c.write_records(s.sent, s.sent.size()));
            }
            std::string got;
            std::string end;
            int reason = 0;
            for (int i = 0; i < 10; ++i) {
                end = c.read_failure(reason);
                if (reason != 0 || end == "close_notify" || end.starts_with("EOF")) break;
                got += end;
            }
            EXPECT_EQ(end, "close_notify") << "got: " << got;
            EXPECT_TRUE(s.answer.empty() ? got.empty() : got.starts_with(s.answer)) << got;
            EXPECT_TRUE(c.socket_ends());
            ++(s.name == "part of a body" ? body : header);
        }
    }
    EXPECT_EQ(t.await(closes("header_timeout"), header), header) << t.metrics();
    EXPECT_EQ(t.await(closes("body_timeout"), body), body) << t.metrics();
}

TEST(TlsRecordsTest, AnIdleConnectionIsClosedWithCloseNotifyAtTheKeepAliveTimeout) {
    // The orderly end from tarry's own records (TLS 1.3) and from OpenSSL's (TLS 1.2).
    tls_server t({"--keep-alive-timeout", "1s", "--workers", "1"});
    for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
        SCOPED_TRACE(version);
        ossl_client c(t.port(), version);
        ASSERT_TRUE(c.connected()) << c.error();
        ASSERT_TRUE(c.get("/").starts_with("HTTP/1.1 200 OK"));
        int reason = 0;
        EXPECT_EQ(c.read_failure(reason), "close_notify");
        EXPECT_TRUE(c.socket_ends());
    }
    EXPECT_EQ(t.await(closes("keep_alive_timeout"), 2), 2) << t.metrics();
}

TEST(TlsRecordsTest, AGracefulStopEndsIdleConnectionsWithCloseNotifyAndHandshakesAtOnce) {
    // SIGTERM with two TLS connections idle after a response (TLS 1.3 on tarry's own records,
    // TLS 1.2 on OpenSSL's) and one accepted that never sent a ClientHello: the stop ends each
    // at once, the idle ones with close_notify, the handshake silently; the server exits 0.
    tls_server t({"--workers", "1", "--close-spread-time", "0s", "--keep-alive-min-timeout", "0s",
                  "--drain-timeout", "1h"});
    ossl_client c13(t.port(), TLS1_3_VERSION);
    ossl_client c12(t.port(), TLS1_2_VERSION);
    ASSERT_TRUE(c13.connected()) << c13.error();
    ASSERT_TRUE(c12.connected()) << c12.error();
    ASSERT_TRUE(c13.get("/").starts_with("HTTP/1.1 200 OK"));
    ASSERT_TRUE(c12.get("/").starts_with("HTTP/1.1 200 OK"));
    const int silent = raw_connect(t.port());
    ASSERT_GE(silent, 0);
    EXPECT_EQ(t.await_equal("tarry_connections_by_phase{phase=\"handshake\"}", 1), 1)
        << t.metrics();
    ASSERT_EQ(::kill(t.pid(), SIGTERM), 0);
    ASSERT_TRUE(t.ends_within(60s)) << "it waited for the hour of drain_timeout";
    EXPECT_EQ(t.stop(), 0);
    for (ossl_client* c : {&c13, &c12}) {
        int reason = 0;
        EXPECT_EQ(c->read_failure(reason), "close_notify");
        EXPECT_TRUE(c->socket_ends());
    }
    const auto [got, ended] = read_to_end(silent);
    EXPECT_TRUE(ended) << got;
    EXPECT_TRUE(got.empty()) << "a handshake is closed silently: " << got;
    ::close(silent);
}

TEST(TlsRecordsTest, APipelineAndCloseNotifyInOneSegmentDuringAGracefulStop) {
    // A keep-alive connection spared by the stop for a while (keep_alive_min_timeout) sends
    // three pipelined requests and its close_notify in one segment after SIGTERM: it gets
    // complete answers, the last saying Connection: close, then close_notify and an orderly end;
    // the server exits 0 without waiting for drain_timeout.
    for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
        SCOPED_TRACE(version == TLS1_3_VERSION ? "TLS 1.3" : "TLS 1.2");
        tls_server t({"--workers", "1", "--close-spread-time", "1s", "--keep-alive-min-timeout",
                      "3s", "--drain-timeout", "1h"});
        ossl_client c(t.port(), version);
        ASSERT_TRUE(c.connected()) << c.error();
        ASSERT_TRUE(c.get("/").starts_with("HTTP/1.1 200 OK"));
        ASSERT_EQ(::kill(t.pid(), SIGTERM), 0);
        std::this_thread::sleep_for(300ms); // the stop is under way, the connection spared
        ASSERT_TRUE(t.alive());
        const std::string one = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
        c.cork(true);
        ASSERT_TRUE(c.write_records(one + one + one, 1 << 14));
        ASSERT_TRUE(c.send_close_notify());
        c.cork(false);
        const std::string got = c.read_until("Hello, World!", 3);
        ASSERT_TRUE(got.starts_with("HTTP/1.1 200 OK")) << got;
        const std::size_t answered = count(got, "HTTP/1.1 200 OK");
        EXPECT_GE(answered, 1u) << got;
        EXPECT_EQ(count(got, "Hello, World!"), answered) << "every answer whole: " << got;
        EXPECT_EQ(count(got, "Connection: close"), 1u) << got;
        EXPECT_TRUE(got.rfind("Connection: close") > got.rfind("HTTP/1.1 200 OK")) << got;
        int reason = 0;
        EXPECT_EQ(c.read_failure(reason), "close_notify");
        EXPECT_TRUE(c.socket_ends());
        // Ended by the one SIGTERM above (a second would stop it at once, whatever it held).
        ASSERT_TRUE(t.ends_within(60s)) << "it waited for the hour of drain_timeout";
        EXPECT_EQ(t.stop(), 0);
    }
}

// --- KeyUpdates while a tunnel streams down ------------------------------------------------------

/// tests/upstream/ws_backend.js as a child process (the WebSocket and raw-upgrade application
/// of the proxy tests); killed when destroyed.
class ws_backend {
public:
    ws_backend() : child_(command(), child_options::backend()) {
        // It prints its port once it listens.
        const auto line = child_.read_line();
        output_ = line ? *line : child_.unread_output();
        if (line) port_ = static_cast<std::uint16_t>(std::stoi(*line));
    }
    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] const std::string& output() const { return output_; }

private:
    static std::vector<std::string> command() {
        return {"node", (assets / ".." / ".." / "upstream" / "ws_backend.js").string(), "5000"};
    }

    child_process child_;
    std::uint16_t port_ = 0;
    std::string output_;
};

TEST(TlsTunnelTest, KeyUpdatesWhileATunnelStreamsDownLoseAndRepeatNothing) {
    // A tunnel reads its client while its output waits for the client to read: a KeyUpdate
    // may come in with sealed records still unsent, and the server's KeyUpdate in answer must
    // go out behind them, each byte once, under the right keys.
    ws_backend app;
    ASSERT_NE(app.port(), 0) << "node ws_backend.js did not start: " << app.output();
    tls_server t({"--proxy", "127.0.0.1:" + std::to_string(app.port()), "--workers", "1"});
    constexpr std::size_t total = 24 << 20;
    for (const bool requested : {true, false}) {
        SCOPED_TRACE(requested ? "update_requested" : "update_not_requested");
        ossl_client c(t.port(), TLS1_3_VERSION);
        ASSERT_TRUE(c.connected()) << c.error();
        ASSERT_TRUE(c.write_records("GET /flood?n=" + std::to_string(total) +
                                        " HTTP/1.1\r\nHost: t\r\nUpgrade: tarry-raw\r\n"
                                        "Connection: Upgrade\r\n\r\n",
                                    1 << 14));
        std::string head;
        char buf[16384];
        std::size_t end;
        while ((end = head.find("\r\n\r\n")) == std::string::npos) {
            const std::size_t n = c.read_some(buf, sizeof buf);
            if (n == 0) {
                int reason = 0;
                FAIL() << "no 101 (" << c.read_failure(reason) << "), got: " << head;
            }
            head.append(buf, n);
        }
        ASSERT_TRUE(head.starts_with("HTTP/1.1 101 ")) << head;
        std::size_t got = head.size() - end - 4;
        std::size_t wrong = head.find_first_not_of('d', end + 4) == std::string::npos ? 0 : 1;
        std::size_t updates = 0;
        std::size_t next_update = 64 << 10;
        while (got < total) {
            const std::size_t n = c.read_some(buf, sizeof buf);
            if (n == 0) break;
            got += n;
            wrong += static_cast<std::size_t>(
                std::count_if(buf, buf + n, [](char ch) { return ch != 'd'; }));
            if (got >= next_update && got < total - (1 << 20)) {
                // A byte up between KeyUpdates, as a client that rotates its keys as it writes
                // sends them (more than a few in a row with no data is a flood, closed).
                ASSERT_TRUE(c.write_records("u", 1));
                ASSERT_TRUE(c.key_update(requested)) << "after " << got << " bytes";
                ++updates;
                next_update += 64 << 10;
            }
        }
        EXPECT_EQ(got, total) << "after " << updates << " KeyUpdates";
        EXPECT_EQ(wrong, 0U);
        // No more application data comes until the client half-closes (a byte now was sent
        // twice); the server's KeyUpdates may (answers read late, after the last byte).
        c.set_timeout(300ms);
        const std::size_t extra = c.read_some(buf, sizeof buf);
        EXPECT_EQ(extra, 0U) << "more bytes than the application sent: "
                             << std::string(buf, std::min<std::size_t>(extra, 40));
        EXPECT_GT(updates, 300U);
    }
    EXPECT_EQ(t.metric(closes("tls")), 0) << t.metrics();
}

/// The proxy on a TLS listener in front of tests/upstream/ws_backend.js, for the ends of
/// connections and tunnels through it; no connection may end in a TLS error.
class TlsEndsTest : public ::testing::Test {
protected:
    ws_backend app;
    std::unique_ptr<tls_server> t;

    void SetUp() override {
        ASSERT_NE(app.port(), 0) << "node ws_backend.js did not start: " << app.output();
        t = std::make_unique<tls_server>(std::vector<std::string>{
            "--proxy", "127.0.0.1:" + std::to_string(app.port()), "--workers", "1"});
    }
    void TearDown() override {
        if (t) {
            EXPECT_EQ(t->metric(closes("tls")), 0) << t->metrics();
        }
    }

    static std::string upgrade(const std::string& path) {
        return "GET " + path +
               " HTTP/1.1\r\nHost: t\r\nUpgrade: tarry-raw\r\nConnection: Upgrade\r\n\r\n";
    }
    /// The server's close_notify, then an orderly TCP end.
    static void expect_orderly_end(ossl_client& c) {
        int reason = 0;
        EXPECT_EQ(c.read_failure(reason), "close_notify");
        EXPECT_TRUE(c.socket_ends()) << "a reset, or no end within 5 s";
    }
    static constexpr int versions[] = {TLS1_3_VERSION, TLS1_2_VERSION};
    static const char* name(int version) {
        return version == TLS1_3_VERSION ? "TLS 1.3" : "TLS 1.2";
    }
};

TEST_F(TlsEndsTest, HalfClosesPassBothWaysAsCloseNotifyThenTheEnd) {
    // A client that half-closes a tunnel over TLS says so with close_notify: the application
    // hears the end, answers, and half-closes in turn, which reaches the client as every byte,
    // then the server's close_notify, then an orderly TCP end (not a reset), for either record
    // layer (tarry's own under TLS 1.3, OpenSSL's under 1.2).
    for (const int version : versions) {
        SCOPED_TRACE(name(version));
        ossl_client c(t->port(), version);
        ASSERT_TRUE(c.connected()) << c.error();
        ASSERT_TRUE(c.write_records(upgrade("/raw"), 1 << 14));
        const std::string head = c.read_until("\r\n\r\n", 1);
        ASSERT_TRUE(head.starts_with("HTTP/1.1 101 ")) << head;
        ASSERT_TRUE(c.write_records("hello", 5));
        EXPECT_EQ(c.read_until("hello", 1), "hello");
        ASSERT_TRUE(c.send_close_notify());
        EXPECT_EQ(c.read_until("bye:5", 1), "bye:5");
        expect_orderly_end(c);
    }
}

TEST_F(TlsEndsTest, TheApplicationsHalfCloseComesFirstAndTheClientStillSends) {
    // The application ends its side first: the client gets every byte, the server's
    // close_notify, then the TCP end (the alert must not wait for anything else to go out), and
    // what it sends after all that still reaches the application.
    const std::string stats =
        "timeout 10 curl -sS --max-time 5 http://127.0.0.1:" + std::to_string(app.port()) +
        "/stats";
    for (const int version : versions) {
        SCOPED_TRACE(name(version));
        ossl_client c(t->port(), version);
        ASSERT_TRUE(c.connected()) << c.error();
        ASSERT_TRUE(c.write_records(upgrade("/first"), 1 << 14));
        const std::string got = c.read_until("first", 1);
        ASSERT_TRUE(got.starts_with("HTTP/1.1 101 ")) << got;
        ASSERT_TRUE(got.ends_with("\r\n\r\nfirst")) << got;
        expect_orderly_end(c);
        // (A size per version: the application's count is the last connection's.)
        const std::string late = version == TLS1_3_VERSION ? "late" : "later!";
        ASSERT_TRUE(c.write_records(late, late.size()));
        ASSERT_TRUE(c.send_close_notify());
        const std::string counted = "\"after_end\":" + std::to_string(late.size());
        std::string s;
        EXPECT_TRUE(eventually([&] {
            s = run(stats).output;
            return s.find(counted) != std::string::npos;
        })) << s;
    }
}

TEST_F(TlsEndsTest, ACloseNotifyInTheSegmentOfTheRequestEndsAtOnce) {
    // The client's close_notify comes in the same segment as its last request (or as an upgrade
    // and the tunnel's first bytes): one read of the socket takes both. The end it carries must
    // be acted on then; no edge of the socket will come for it (it once waited for the
    // keep-alive timeout, and a tunnel hung for good).
    for (const int version : versions) {
        SCOPED_TRACE(name(version));
        for (const bool tunnel : {false, true}) {
            SCOPED_TRACE(tunnel ? "an upgrade" : "a request");
            ossl_client c(t->port(), version);
            ASSERT_TRUE(c.connected()) << c.error();
            c.cork(true); // what follows leaves in one segment
            ASSERT_TRUE(c.write_records(tunnel ? upgrade("/raw") + "abc"
                                               : "GET /plain HTTP/1.1\r\nHost: t\r\n\r\n",
                                        1 << 14));
            ASSERT_TRUE(c.send_close_notify());
            c.cork(false);
            const std::string got = c.read_until(tunnel ? "bye:3" : "upgrade=none", 1);
            EXPECT_TRUE(got.starts_with(tunnel ? "HTTP/1.1 101 " : "HTTP/1.1 200 ")) << got;
            if (tunnel) {
                EXPECT_TRUE(got.ends_with("\r\n\r\nabcbye:3")) << got;
            }
            expect_orderly_end(c);
        }
    }
}

TEST_F(TlsEndsTest, APipelineAndItsCloseNotifyInOneSegmentAreAllAnswered) {
    // Three pipelined requests and the client's close_notify in one segment (in one record, or
    // a record each): one read of the socket takes them all. Each is answered, in order, then
    // the end is acted on at once (not at the keep-alive timeout).
    for (const int version : versions) {
        SCOPED_TRACE(name(version));
        for (const bool one_record : {true, false}) {
            SCOPED_TRACE(one_record ? "one record" : "a record each");
            ossl_client c(t->port(), version);
            ASSERT_TRUE(c.connected()) << c.error();
            std::string pipeline;
            for (const char* path : {"/p1", "/p2", "/p3"})
                pipeline += std::string("GET ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n";
            c.cork(true);
            ASSERT_TRUE(c.write_records(pipeline, one_record ? 1 << 14 : pipeline.size() / 3));
            ASSERT_TRUE(c.send_close_notify());
            c.cork(false);
            const std::string got = c.read_until("upgrade=none", 3);
            EXPECT_EQ(count(got, "HTTP/1.1 200 "), 3u) << got;
            const auto p1 = got.find("GET /p1 ");
            const auto p2 = got.find("GET /p2 ");
            const auto p3 = got.find("GET /p3 ");
            EXPECT_TRUE(p1 < p2 && p2 < p3 && p3 != std::string::npos) << got;
            // Within the client's bounded read: long before the 65 s keep-alive timeout.
            expect_orderly_end(c);
        }
    }
}

TEST(TlsProxyTest, AnApplicationBehindTheProxyIsToldItsClientUsedHttps) {
    // Applications build their redirects and cookies' Secure flag from X-Forwarded-Proto: a
    // request that came over TLS must not be announced as plain http (a redirect loop behind
    // "force HTTPS" middleware). The same proxy on a plain listener says http.
    ws_backend app;
    ASSERT_NE(app.port(), 0) << "node ws_backend.js did not start: " << app.output();
    const std::uint16_t plain = free_port();
    tls_server t({"--proxy", "127.0.0.1:" + std::to_string(app.port()), "--workers", "1",
                  "--listen", "127.0.0.1:" + std::to_string(plain)});
    EXPECT_EQ(run(t.curl(q(t.url() + "forwarded"))).output,
              "proto=https host=localhost:" + t.port_text());
    EXPECT_EQ(run("timeout 30 curl -sS --max-time 20 http://127.0.0.1:" + std::to_string(plain) +
                  "/forwarded")
                  .output,
              "proto=http host=127.0.0.1:" + std::to_string(plain));
    // Two requests on one keep-alive connection (curl reuses it): both say https.
    const std::string one = "proto=https host=localhost:" + t.port_text();
    EXPECT_EQ(run(t.curl(q(t.url() + "forwarded") + " " + q(t.url() + "forwarded"))).output,
              one + one);
}

// --- 16. testssl.sh ------------------------------------------------------------------------------

TEST(TlsTestsslTest, NoVulnerabilityNoOldProtocolNoWeakCipher) {
    scratch_dir dir("testssl");
    tls_server t({"--workers", "2"});
    const fs::path json = dir / "testssl.json";
    const auto start = steady::now();
    // Protocols, cipher categories, forward secrecy, server defaults, preference, vulnerabilities
    // (client simulation and HTTP headers left out: they say nothing of the TLS stack). It
    // takes 70-95 s alone; on a machine busy with other tests (ctest -j2, the sanitizers) it
    // took 110 s and was cut short, its last checks missing: 240 s, under ctest's 300.
    const command_result r =
        run("cd " + q(dir.path()) + " && timeout 240 testssl --quiet --color 0 --warnings off " +
            "--add-ca " + q(cert("ca.pem")) + " -p -s -f -S -P -U --jsonfile " + q(json) +
            " 127.0.0.1:" + t.port_text());
    const auto took = std::chrono::duration_cast<std::chrono::seconds>(steady::now() - start);
    std::cout << "[ testssl  ] " << took.count() << " s" << std::endl;
    ASSERT_TRUE(fs::exists(json)) << r.output;
    const command_result findings =
        run("python3 -c 'import json, sys\nfor f in json.load(open(sys.argv[1])):\n"
            "    print(f[\"id\"] + \"\\t\" + f[\"severity\"] + \"\\t\" + f[\"finding\"])' " +
            q(json));
    ASSERT_EQ(findings.status, 0) << findings.output;
    std::map<std::string, std::string> finding;
    std::istringstream lines(findings.output);
    std::string line;
    while (std::getline(lines, line)) {
        const auto a = line.find('\t');
        const auto b = line.find('\t', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        const std::string id = line.substr(0, a);
        const std::string severity = line.substr(a + 1, b - a - 1);
        const std::string text = line.substr(b + 1);
        finding[id] = text;
        EXPECT_FALSE(has(text, "VULNERABLE")) << line;
        // Not the server's: the test certificate has no CRL or OCSP address. And the Mozilla
        // intermediate profile lets the client choose among its ciphers, all strong (checked
        // below), which testssl rates HIGH.
        if (id == "cert_revocation" || id == "cipher_order") continue;
        EXPECT_TRUE(severity != "HIGH" && severity != "CRITICAL") << line;
    }
    for (const std::string old : {"SSLv2", "SSLv3", "TLS1", "TLS1_1"})
        EXPECT_EQ(finding[old], "not offered") << old;
    EXPECT_EQ(finding["TLS1_2"], "offered");
    EXPECT_TRUE(finding["TLS1_3"].starts_with("offered")) << finding["TLS1_3"];
    for (const std::string weak : {"cipherlist_NULL", "cipherlist_aNULL", "cipherlist_EXPORT",
                                   "cipherlist_LOW", "cipherlist_3DES_IDEA", "cipherlist_AVERAGE"})
        EXPECT_EQ(finding[weak], "not offered") << weak;
    // Every cipher offered is an AEAD with forward secrecy (no CBC, no RSA key transport).
    std::istringstream ciphers(finding["PFS_ciphers"]);
    std::string c;
    int n = 0;
    while (ciphers >> c) {
        ++n;
        EXPECT_TRUE(has(c, "GCM") || has(c, "CHACHA20")) << c;
        EXPECT_TRUE(c.starts_with("TLS_") || c.starts_with("ECDHE-")) << c;
    }
    EXPECT_GE(n, 4) << finding["PFS_ciphers"];
    EXPECT_EQ(finding["ALPN"], "http/1.1");
    // testssl saw HTTP: its request through s_client got a response it could decrypt.
    EXPECT_EQ(finding["service"], "HTTP");
    // Its resumption check closes (stdin at its end) right after the handshake, often before
    // TLS 1.3's tickets arrive, with any server (openssl s_server too): then it reports a
    // "connect problem". Resumption itself is TlsPythonTest's; here only a "no" fails.
    EXPECT_NE(finding["sessionresumption_ticket"], "not supported");
    EXPECT_EQ(finding["secure_client_renego"], "not vulnerable");
    EXPECT_TRUE(t.alive());
}

} // namespace
} // namespace tarry::test

// Listeners as operators set them up: Unix sockets (curl --unix-socket), sockets handed over by
// systemd (systemd-socket-activate, and a restart on a kept socket), and the PROXY protocol
// behind a real HAProxy (send-proxy, send-proxy-v2), all on the tarry binary.
#include "tarry_process.hpp"
#include "upstream/proxy_fixture.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;

/// Waits (the access log flushes within a second) until `file` has `text`.
bool appears(const fs::path& file, const std::string& text) {
    return eventually([&] { return slurp(file).find(text) != std::string::npos; });
}

/// Output of a shell command (its stderr too).
std::string shell(const std::string& cmd) {
    return run_shell(cmd).output;
}

/// Started on the addresses its arguments name (not on a free port of the fixture's choosing);
/// `socket`: handed over as systemd does.
launch_options own_listen(int socket = -1, std::string output = {},
                          std::vector<std::string> wrapper = {}) {
    launch_options o;
    o.listen = false;
    o.pass_socket = socket;
    o.output = std::move(output);
    o.wrapper = std::move(wrapper);
    return o;
}

std::optional<response> get_over(test_client& c, const std::string& target = "/") {
    if (!c.connected() || !c.send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n"))
        return std::nullopt;
    return c.read_response();
}

/// Waits until something listens on the Unix socket at `path`.
bool listening(const fs::path& path) {
    return eventually([&] { return test_client(unix_path{path.string()}).connected(); }, 10s);
}

/// A Unix socket of `type` bound at `path` (not listening), or -1.
int bound_unix(const fs::path& path, int type) {
    const int fd = ::socket(AF_UNIX, type, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    return -1;
}

// --- Unix sockets ----------------------------------------------------------------------------

TEST(UnixListenerTest, CurlGetsAnAnswerWithTheModeAndOwnerSetAndTheFileGoesAtStop) {
    scratch_dir dir("unix");
    const fs::path sock = dir / "tarry.sock";
    const fs::path log = dir / "access.log";
    const std::string me = shell("id -un | tr -d '\\n'") + ":" + shell("id -gn | tr -d '\\n'");
    tarry_process t({"--listen", "unix:" + sock.string() + " mode=0660 owner=" + me, "--workers",
                     "2", "--access-log", log.string()});
    ASSERT_TRUE(listening(sock));
    struct stat st {};
    ASSERT_EQ(::stat(sock.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0660U);
    EXPECT_EQ(st.st_uid, ::getuid());
    EXPECT_EQ(st.st_gid, ::getgid());

    const std::string body =
        shell("curl -s --max-time 5 --unix-socket " + sock.string() + " http://localhost/");
    EXPECT_EQ(body, "Hello, World!");
    // Keep-alive over the socket, as a local balancer uses it.
    test_client c(unix_path{sock.string()});
    for (int i = 0; i < 3; ++i) {
        const auto r = get_over(c, "/again");
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_TRUE(appears(log, "unix: - - [")) << slurp(log); // nginx's $remote_addr for these
    EXPECT_EQ(t.stop(), 0);
    EXPECT_FALSE(fs::exists(sock)) << "the socket file is removed at stop";
}

TEST(UnixListenerTest, AStaleSocketFileIsReplacedALiveOneRefusedAndAFileLeftAlone) {
    scratch_dir dir("unix_busy");
    const fs::path sock = dir / "tarry.sock";
    // A socket file whose process is gone: bound, then closed without unlinking.
    const int gone = bound_unix(sock, SOCK_STREAM);
    ASSERT_GE(gone, 0);
    ::close(gone);
    tarry_process first({"--listen", "unix:" + sock.string(), "--workers", "1"});
    ASSERT_TRUE(listening(sock)) << "a stale socket file does not stop a start";

    const run_result second = run_tarry("--listen unix:" + sock.string());
    EXPECT_EQ(second.status, 2) << second.output;
    EXPECT_EQ(second.output,
              "tarry: listen: unix:" + sock.string() + " is already in use by another process\n");
    test_client c(unix_path{sock.string()});
    const auto r = get_over(c);
    ASSERT_TRUE(r.has_value()) << "the first one serves on";
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(first.stop(), 0);

    const fs::path file = dir / "not-a-socket";
    std::ofstream(file) << "data";
    const run_result refused = run_tarry("--listen unix:" + file.string());
    EXPECT_EQ(refused.status, 2) << refused.output;
    EXPECT_NE(refused.output.find("exists and is not a socket"), std::string::npos);
    EXPECT_EQ(slurp(file), "data") << "never removed";
}

TEST(UnixListenerTest, AnotherProgramsDatagramSocketIsNeverReplaced) {
    // A typo such as unix:/dev/log must not take a live socket of another kind away.
    scratch_dir dir("unix_dgram");
    const fs::path sock = dir / "log.sock";
    const int fd = bound_unix(sock, SOCK_DGRAM);
    ASSERT_GE(fd, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
    const run_result r = run_tarry("--listen unix:" + sock.string());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("is already in use by another process"), std::string::npos) << r.output;
    const int client = ::socket(AF_UNIX, SOCK_DGRAM, 0);
    EXPECT_EQ(::sendto(client, "x", 1, 0, reinterpret_cast<sockaddr*>(&a), sizeof a), 1)
        << "the owner still receives";
    ::close(client);
    ::close(fd);
}

TEST(UnixListenerTest, BadParametersAreOneLineAndExitTwo) {
    for (const char* bad :
         {"'127.0.0.1:0 mode=0660'", "'unix:/tmp/x.sock mode=999'", "'unix:/tmp/x.sock owner='",
          "'unix:/tmp/x.sock fast'", "'unix:/tmp/x.sock owner=no-such-user-here'"}) {
        const run_result r = run_tarry(std::string("--check-config --listen ") + bad);
        const run_result s = run_tarry(std::string("--listen ") + bad);
        EXPECT_EQ(s.status, 2) << bad << ": " << s.output;
        EXPECT_EQ(std::count(s.output.begin(), s.output.end(), '\n'), 1) << s.output;
        EXPECT_NE(s.output.find("listen"), std::string::npos) << s.output;
        EXPECT_EQ(r.status, 2) << "--check-config tells it too: " << bad << ": " << r.output;
    }
}

// --- Sockets from systemd --------------------------------------------------------------------

TEST(SocketActivationTest, SystemdSocketActivateHandsOverATcpAndAUnixSocket) {
    scratch_dir dir("activate");
    const fs::path sock = dir / "tarry.sock";
    const std::uint16_t port = free_port();
    const std::string tcp = "127.0.0.1:" + std::to_string(port);
    tarry_process t(
        {"--listen", tcp, "--listen", "unix:" + sock.string(), "--workers", "2"},
        own_listen(-1, {}, {"systemd-socket-activate", "-l", tcp, "-l", sock.string()}));
    ASSERT_TRUE(listening(sock));
    // systemd-socket-activate execs tarry at the first connection: this one waits for it.
    test_client first(port);
    const auto r = get_over(first);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    for (int i = 0; i < 8; ++i) { // both workers take connections from the one socket
        test_client c(unix_path{sock.string()});
        const auto u = get_over(c);
        ASSERT_TRUE(u.has_value());
        EXPECT_EQ(u->status, 200);
    }
    EXPECT_EQ(t.stop(), 0);
}

/// A listening TCP socket on a free loopback port, as systemd holds it for tarry.socket.
int held_socket(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::listen(fd, 1024);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}

TEST(SocketActivationTest, ARestartOnTheKeptSocketRefusesNoConnection) {
    std::uint16_t port = 0;
    const int sock = held_socket(port);
    const std::vector<std::string> args{"--listen", "127.0.0.1:" + std::to_string(port),
                                        "--workers", "2"};
    auto first = std::make_unique<tarry_process>(args, own_listen(sock));
    // Clients connect all the time, each a new connection, across the restart.
    std::atomic<bool> go{true};
    std::atomic<int> answered{0}, failed{0};
    std::thread clients([&] {
        while (go) {
            test_client c(port);
            const auto r = get_over(c);
            (r && r->status == 200 ? answered : failed)++;
        }
    });
    const auto until = [&](int n) { eventually([&] { return answered >= n; }, 10s); };
    until(50);
    EXPECT_EQ(first->stop(), 0);
    // Meanwhile connections queue in the kept socket's backlog, as in systemd's.
    std::this_thread::sleep_for(200ms); // by design: nothing serves for a while
    const int before = answered;
    tarry_process second(args, own_listen(sock));
    until(before + 50);
    go = false;
    clients.join();
    EXPECT_GT(answered.load(), before) << "the second one serves the same socket";
    EXPECT_EQ(failed.load(), 0) << "no connection refused or dropped across the restart";
    EXPECT_EQ(second.stop(), 0);
    ::close(sock);
}

TEST(SocketActivationTest, ASocketNoListenAddressNamesIsRefused) {
    std::uint16_t port = 0;
    const int sock = held_socket(port);
    scratch_dir dir("activate_refused");
    const fs::path out = dir / "out";
    tarry_process t({"--listen", "127.0.0.1:" + std::to_string(free_port())},
                    own_listen(sock, out.string()));
    EXPECT_EQ(t.wait(), 2);
    EXPECT_EQ(slurp(out), "tarry: listen: systemd passed a socket on 127.0.0.1:" +
                              std::to_string(port) + ", which no listen address names\n");
    ::close(sock);
}

TEST(SocketActivationTest, ABrokenListenFdsIsRefusedNotGuessed) {
    std::uint16_t port = 0;
    const int sock = held_socket(port);
    for (const char* count : {"2147483647", "1x", "99999999999999", "-1"}) {
        scratch_dir dir("activate_count");
        const fs::path out = dir / "out";
        const std::string cmd = "LISTEN_PID=$$ LISTEN_FDS=" + std::string(count) + " exec " +
                                TARRY_BINARY + " --listen 127.0.0.1:" + std::to_string(port) +
                                " 3<&" + std::to_string(sock) + " >" + out.string() + " 2>&1";
        const int st = std::system(("sh -c '" + cmd + "'").c_str());
        EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 2) << count << ": " << slurp(out);
        EXPECT_EQ(slurp(out), "tarry: systemd passed LISTEN_FDS=" + std::string(count) +
                                  ", which is not a count of descriptors\n");
    }
    ::close(sock);
}

// --- The PROXY protocol ----------------------------------------------------------------------

/// HAProxy in TCP mode, as in front of a pool of servers: one frontend per entry of
/// `server_lines` ("send-proxy", "send-proxy-v2"), each on a port of its own, to `to`.
class haproxy_process {
public:
    haproxy_process(const fs::path& dir, std::uint16_t to, const std::vector<std::string>& how,
                    const std::string& bind_host = "127.0.0.1") {
        std::ofstream cfg(dir / "haproxy.cfg");
        cfg << "global\n  maxconn 1000\n"
               "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n"
               "  timeout server 30s\n";
        for (std::size_t i = 0; i < how.size(); ++i) {
            ports_.push_back(free_port());
            const std::string host =
                bind_host.find(':') != std::string::npos ? "[" + bind_host + "]" : bind_host;
            cfg << "frontend f" << i << "\n  bind " << host << ":" << ports_.back()
                << "\n  default_backend b" << i << "\nbackend b" << i
                << "\n  server tarry 127.0.0.1:" << to << " " << how[i] << "\n";
        }
        cfg.close();
        child_.emplace(
            std::vector<std::string>{"haproxy", "-db", "-q", "-f", (dir / "haproxy.cfg").string()});
        eventually([&] { return up(bind_host); }, 10s);
    }
    [[nodiscard]] std::uint16_t port(std::size_t i) const { return ports_.at(i); }

private:
    bool up(const std::string& host) const {
        for (const auto p : ports_) {
            const std::string probe = "exec 3<>/dev/tcp/" + host + "/" + std::to_string(p);
            if (std::system(("bash -c '" + probe + "' 2>/dev/null").c_str()) != 0) return false;
        }
        return true;
    }
    std::vector<std::uint16_t> ports_;
    std::optional<child_process> child_; ///< started once the ports are chosen
};

TEST(ProxyProtocolTest, BehindHaproxyTheClientAddressIsTheOneHaproxySaw) {
    scratch_dir dir("haproxy");
    node_backend app;
    ASSERT_TRUE(app.started());
    const fs::path log = dir / "access.log";
    const std::uint16_t port = free_port();
    tarry_process t({"--listen", "127.0.0.1:" + std::to_string(port) + " proxy_protocol", "--proxy",
                     "127.0.0.1:" + std::to_string(app.port()), "--workers", "2", "--access-log",
                     log.string()},
                    own_listen());
    haproxy_process lb(dir / "", port, {"send-proxy", "send-proxy-v2"});
    for (std::size_t i = 0; i < 2; ++i) {
        // From 127.0.0.5 to HAProxy; HAProxy connects to tarry from 127.0.0.1.
        test_client c(lb.port(i), 0, "127.0.0.5");
        ASSERT_TRUE(c.connected());
        for (int n = 0; n < 2; ++n) { // the header comes once, then keep-alive requests
            const auto r = get_over(c, "/headers?via=" + std::to_string(i));
            ASSERT_TRUE(r.has_value()) << "frontend " << i;
            EXPECT_EQ(r->status, 200);
            EXPECT_NE(r->body.find("x-forwarded-for: 127.0.0.5\n"), std::string::npos) << r->body;
        }
        EXPECT_TRUE(appears(log, "127.0.0.5 - - [")) << slurp(log);
    }
    EXPECT_EQ(slurp(log).find("127.0.0.1 - - ["), std::string::npos)
        << "the balancer's address is never the client's:\n"
        << slurp(log);
}

TEST(ProxyProtocolTest, AnIpv6ClientBehindHaproxyKeepsItsAddress) {
    const int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
    sockaddr_in6 six{};
    six.sin6_family = AF_INET6;
    six.sin6_addr = in6addr_loopback;
    const bool has_v6 = ::bind(probe, reinterpret_cast<sockaddr*>(&six), sizeof six) == 0;
    ::close(probe);
    if (!has_v6) GTEST_SKIP() << "no IPv6 loopback here";
    scratch_dir dir("haproxy6");
    const fs::path log = dir / "access.log";
    const std::uint16_t port = free_port();
    tarry_process t({"--listen", "127.0.0.1:" + std::to_string(port) + " proxy_protocol",
                     "--workers", "1", "--access-log", log.string()},
                    own_listen());
    haproxy_process lb(dir / "", port, {"send-proxy-v2", "send-proxy"}, "::1");
    for (std::size_t i = 0; i < 2; ++i) {
        const std::string out =
            shell("curl -s -g --max-time 5 http://[::1]:" + std::to_string(lb.port(i)) + "/v6-" +
                  std::to_string(i));
        EXPECT_EQ(out, "Hello, World!");
        EXPECT_TRUE(appears(log, "::1 - - [") && appears(log, "/v6-" + std::to_string(i)))
            << slurp(log);
    }
}

class RawProxyProtocolTest : public ::testing::Test {
protected:
    RawProxyProtocolTest()
        : dir_("pp_raw"), log_(dir_ / "access.log"), port_(free_port()), admin_(free_port()),
          t_({"--listen", "127.0.0.1:" + std::to_string(port_) + " proxy_protocol",
              "--header-timeout", "500ms", "--workers", "1", "--access-log", log_.string(),
              "--admin-listen", "127.0.0.1:" + std::to_string(admin_)}) {}

    std::string metrics() {
        return shell("curl -s --max-time 5 http://127.0.0.1:" + std::to_string(admin_) +
                     "/metrics");
    }

    scratch_dir dir_;
    fs::path log_;
    std::uint16_t port_;
    std::uint16_t admin_;
    tarry_process t_;
};

TEST_F(RawProxyProtocolTest, AHeaderInPiecesThenRequestsIsServedAsTheNamedClient) {
    test_client c(port_);
    const std::string header = "PROXY TCP4 192.0.2.7 127.0.0.1 40000 80\r\n";
    for (const char ch : header) { // byte by byte, as a slow network delivers it
        ASSERT_TRUE(c.send(std::string(1, ch)));
        std::this_thread::sleep_for(1ms);
    }
    for (int i = 0; i < 2; ++i) {
        const auto r = get_over(c, "/piecewise");
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_TRUE(appears(log_, "192.0.2.7 - - [")) << slurp(log_);
}

TEST_F(RawProxyProtocolTest, IPv4ClientsOfEveryDigitCountAreLoggedInDottedDecimal) {
    // The client's address is written by tarry's own formatter: every octet width, 0 and 255.
    for (const std::string addr : {"10.0.255.100", "255.99.9.0", "1.20.200.254"}) {
        test_client c(port_);
        ASSERT_TRUE(c.send("PROXY TCP4 " + addr +
                           " 127.0.0.1 1111 80\r\n"
                           "GET /octets HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_EQ(c.read_response()->status, 200);
        EXPECT_TRUE(appears(log_, addr + " - - [")) << slurp(log_);
    }
}

TEST_F(RawProxyProtocolTest, AnUnspecifiedSourceAddressIsLoggedAsTheHeaderSaysIt) {
    test_client c(port_);
    ASSERT_TRUE(
        c.send("PROXY TCP4 0.0.0.0 127.0.0.1 1111 80\r\nGET /any HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_EQ(c.read_response()->status, 200);
    EXPECT_TRUE(appears(log_, "0.0.0.0 - - [")) << "not the balancer's address:\n" << slurp(log_);
}

TEST_F(RawProxyProtocolTest, AVersionTwoLocalHeaderKeepsTheSocketsOwnAddress) {
    // HAProxy's own health checks: the LOCAL command, no addresses.
    test_client c(port_);
    const std::string local("\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00", 16);
    ASSERT_TRUE(c.send(local + "GET /local HTTP/1.1\r\nHost: t\r\n\r\n"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(appears(log_, "127.0.0.1 - - [")) << slurp(log_);
}

TEST_F(RawProxyProtocolTest, ARequestWithoutAHeaderIsClosedUnanswered) {
    for (const std::string& bad :
         std::vector<std::string>{"GET / HTTP/1.1\r\nHost: t\r\n\r\n",
                                  "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\nGET / HTTP/1.1\r\n\r\n",
                                  "PROXY TCP4 300.1.1.1 5.6.7.8 1 2\r\n",
                                  std::string("\r\n\r\n\0\r\nQUIT\n\x21\x12\x00\x0c", 16)}) {
        test_client c(port_);
        ASSERT_TRUE(c.send(bad));
        ASSERT_TRUE(c.wait_closed(2s).has_value()) << bad;
        EXPECT_EQ(c.pending(), "") << "no answer to a balancer speaking something else";
    }
    EXPECT_NE(metrics().find("tarry_connection_closes_total{reason=\"proxy_header\"} 4"),
              std::string::npos)
        << metrics();
}

TEST_F(RawProxyProtocolTest, AHeaderCutShortIsClosedSilentlyAtTheHeaderTimeout) {
    test_client c(port_);
    ASSERT_TRUE(c.send("PROXY TCP4 192.0.2.7 127.0.0.1 4"));
    const auto sent = steady::now();
    const auto closed = c.wait_closed(5s);
    ASSERT_TRUE(closed.has_value());
    EXPECT_GE(*closed - sent, 450ms) << "not before the header timeout";
    EXPECT_EQ(c.pending(), "") << "no 408 to a balancer that sent half a header";
}

TEST(ProxyProtocolTest, HalfHeadersAtTheConnectionLimitDelayRealClientsNoLongerThanTheTimeout) {
    // An attacker holds the limit with headers it never finishes: they are not idle (bytes
    // came), so pressure cannot reclaim them, but header_timeout ends each, and the clients the
    // balancer sends meanwhile wait in the backlog, then get their answers.
    const std::uint16_t port = free_port();
    tarry_process t({"--listen", "127.0.0.1:" + std::to_string(port) + " proxy_protocol",
                     "--max-connections", "20", "--header-timeout", "1s", "--workers", "1"},
                    own_listen());
    ASSERT_TRUE(eventually([&] { return test_client(port).connected(); }, 10s));
    std::vector<std::unique_ptr<test_client>> attackers;
    for (int i = 0; i < 60; ++i) {
        attackers.push_back(std::make_unique<test_client>(port));
        attackers.back()->send("PROXY TCP4 10.0.0.");
    }
    // Each waits a few header timeouts at most, never for good.
    for (int i = 0; i < 10; ++i) {
        test_client c(port);
        ASSERT_TRUE(c.send("PROXY TCP4 192.0.2.9 127.0.0.1 1000 80\r\n"
                           "GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
        const auto r = c.read_response(10s);
        ASSERT_TRUE(r.has_value()) << "client " << i;
        EXPECT_EQ(r->status, 200);
    }
    for (auto& a : attackers)
        EXPECT_TRUE(a->wait_closed(5s).has_value()) << "every half header is closed";
}

TEST(ProxyProtocolTest, AHeaderToAListenerWithoutProxyProtocolIsABadRequest) {
    tarry_process t({"--workers", "1"});
    test_client c(t.port());
    ASSERT_TRUE(c.send("PROXY TCP4 192.0.2.7 127.0.0.1 40000 80\r\nGET / HTTP/1.1\r\n\r\n"));
    const auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 400) << "a client cannot name its own address";
}

TEST(ProxyProtocolTest, AReloadTurnsItOnForNewConnectionsOnTheSameSocket) {
    scratch_dir dir("pp_reload");
    const fs::path cfg = dir / "tarry.toml";
    const fs::path log = dir / "access.log";
    const std::uint16_t port = free_port();
    const std::string addr = "127.0.0.1:" + std::to_string(port);
    std::ofstream(cfg) << "listen = [\"" << addr << "\"]\nworkers = 2\naccess_log = \""
                       << log.string() << "\"\n";
    tarry_process t({"--config", cfg.string()}, own_listen());
    ASSERT_TRUE(eventually([&] { return test_client(port).connected(); }, 10s));
    test_client before(port);
    ASSERT_EQ(get_over(before)->status, 200);
    std::ofstream(cfg) << "listen = [\"" << addr << " proxy_protocol\"]\nworkers = 2\n"
                       << "access_log = \"" << log.string() << "\"\n";
    ::kill(t.pid(), SIGHUP);
    // Until every worker has applied the reload, a header is a bad request.
    EXPECT_TRUE(eventually([&] {
        test_client after(port);
        if (!after.send("PROXY TCP4 198.51.100.3 127.0.0.1 1000 80\r\n")) return false;
        const auto r = get_over(after, "/after");
        return r && r->status == 200;
    }));
    EXPECT_TRUE(appears(log, "198.51.100.3 - - [")) << slurp(log);
    EXPECT_EQ(get_over(before)->status, 200) << "an open connection is not asked for a header";
}

} // namespace
} // namespace tarry::test

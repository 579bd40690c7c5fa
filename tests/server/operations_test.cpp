// What an operator relies on: live reload, the metrics endpoint, and staying up when file
// descriptors run out.
#include "child_process.hpp"
#include "server_fixture.hpp"

#include <tarry/server/server.hpp>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

namespace tarry::test {
namespace {

using ReloadTest = ServerFromFileTest;

TEST_F(ReloadTest, IdleConnectionsMoveToTheNewTimeoutKeepingTheTimeWaited) {
    const auto port = free_port();
    write("listen = \"127.0.0.1:" + std::to_string(port) + "\"\nkeep_alive_timeout = \"20s\"\n");
    start();
    test_client idle(port);
    const auto answered = steady::now(); // no later than the server's answer
    ASSERT_TRUE(idle.send(get));
    ASSERT_TRUE(idle.read_response());
    std::this_thread::sleep_for(400ms); // time waited under the old timeout, by design

    write("listen = \"127.0.0.1:" + std::to_string(port) + "\"\nkeep_alive_timeout = \"600ms\"\n");
    ASSERT_TRUE(srv->request_reload().get());

    // 400 ms already waited count against the new 600 ms: the close comes about 200 ms after
    // the reload, and within the 10 s waited here, far short of the old 20 s; never before
    // the 600 ms since the response.
    const auto closed = idle.wait_closed(10s);
    ASSERT_TRUE(closed) << "still open: the old 20 s would apply";
    EXPECT_GE(*closed - answered, 600ms);

    // New connections get the new value from their first idle phase, and say so.
    test_client fresh(port);
    ASSERT_TRUE(fresh.send(get));
    auto r = fresh.read_response();
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->has("Keep-Alive: timeout=19"));
    EXPECT_TRUE(fresh.wait_closed(5s));
}

TEST_F(ReloadTest, AnInvalidFileIsRejectedAndTheOldSettingsStay) {
    const auto port = free_port();
    write("listen = \"127.0.0.1:" + std::to_string(port) + "\"\nkeep_alive_timeout = \"20s\"\n");
    start();
    test_client busy(port);
    ASSERT_TRUE(busy.send(get));
    ASSERT_TRUE(busy.read_response());

    write("listen = \"127.0.0.1:" + std::to_string(port) + "\"\nkeep_alive_timeout = \"soon\"\n");
    EXPECT_FALSE(srv->request_reload().get());

    ASSERT_TRUE(busy.send(get)); // nothing was dropped
    auto r = busy.read_response();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->has("Keep-Alive: timeout=19"));
}

TEST_F(ReloadTest, AReloadToAMissingDocrootIsRejectedThenAGoodOneApplies) {
    const auto port = free_port();
    const auto www =
        std::filesystem::temp_directory_path() / ("tarry_reload_www_" + std::to_string(::getpid()));
    std::filesystem::create_directories(www);
    std::ofstream(www / "index.html") << "new";
    const std::string listen = "listen = \"127.0.0.1:" + std::to_string(port) + "\"\n";
    write(listen);
    start();
    write(listen + "docroot = \"" + www.string() + "-missing\"\n");
    EXPECT_FALSE(srv->request_reload().get()) << "a docroot that does not exist";
    test_client c(port);
    ASSERT_TRUE(c.send(get));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "Hello, World!") << "the old configuration stays";
    write(listen + "docroot = \"" + www.string() + "\"\n");
    EXPECT_TRUE(srv->request_reload().get());
    test_client d(port);
    ASSERT_TRUE(d.send("GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n"));
    r = d.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "new");
    std::filesystem::remove_all(www);
}

TEST_F(ReloadTest, ASymlinkFlipDeployThenSighupServesTheNewRelease) {
    namespace fs = std::filesystem;
    const auto base = fs::temp_directory_path() / ("tarry_deploy_" + std::to_string(::getpid()));
    fs::remove_all(base);
    for (const std::string v : {"v1", "v2"}) {
        fs::create_directories(base / "releases" / v / "assets");
        std::ofstream(base / "releases" / v / "index.html") << v;
    }
    // Links inside a release (an asset under its versioned name) are served; a link to the
    // shared directory beside the releases leaves the docroot and is not.
    std::ofstream(base / "releases" / "v1" / "assets" / "logo.3f2a.txt") << "logo";
    fs::create_symlink("logo.3f2a.txt", base / "releases" / "v1" / "assets" / "logo.txt");
    fs::create_directories(base / "shared");
    std::ofstream(base / "shared" / "secret.txt") << "secret";
    fs::create_symlink("../../../shared/secret.txt",
                       base / "releases" / "v1" / "assets" / "secret.txt");
    fs::create_directory_symlink("releases/v1", base / "current");
    const auto port = free_port();
    const std::string listen = "listen = \"127.0.0.1:" + std::to_string(port) + "\"\n";
    write(listen + "docroot = \"" + (base / "current").string() + "\"\n");
    start();
    const auto get_body = [&](const std::string& path) {
        test_client c(port);
        c.send("GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto r = c.read_response();
        return r ? std::to_string(r->status) + " " + r->body : std::string("none");
    };
    EXPECT_EQ(get_body("/index.html"), "200 v1");
    EXPECT_EQ(get_body("/assets/logo.txt"), "200 logo");
    EXPECT_EQ(get_body("/assets/secret.txt").substr(0, 3), "404");
    // The flip: a new link renamed over the old one (atomic), then SIGHUP.
    fs::create_directory_symlink("releases/v2", base / "current.new");
    fs::rename(base / "current.new", base / "current");
    ASSERT_TRUE(srv->request_reload().get());
    EXPECT_EQ(get_body("/index.html"), "200 v2");
    fs::remove_all(base);
}

TEST_F(ReloadTest, ListenersAddedAndRemovedFollowTheFile) {
    const auto p1 = free_port();
    const auto p2 = free_port();
    const auto addr = [](std::uint16_t p) { return "\"127.0.0.1:" + std::to_string(p) + "\""; };
    write("listen = [" + addr(p1) + "]\n");
    start();
    test_client before(p1);
    ASSERT_TRUE(before.send(get));
    ASSERT_TRUE(before.read_response());

    write("listen = [" + addr(p1) + ", " + addr(p2) + "]\n");
    ASSERT_TRUE(srv->request_reload().get()); // every worker has applied it
    test_client added(p2);
    ASSERT_TRUE(added.connected());
    ASSERT_TRUE(added.send(get));
    EXPECT_TRUE(added.read_response());

    write("listen = [" + addr(p2) + "]\n");
    ASSERT_TRUE(srv->request_reload().get());
    test_client removed(p1);
    EXPECT_FALSE(removed.connected());
    ASSERT_TRUE(before.send(get)); // connections accepted on a removed listener stay
    EXPECT_TRUE(before.read_response());
}

TEST_F(ReloadTest, AUnixSocketInAMissingDirectoryIsRejectedThenAddedThenRemovedWithItsFile) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("tarry_reload_unix_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    const auto sock = dir / "t.sock";
    const auto p1 = free_port();
    const std::string tcp = "\"127.0.0.1:" + std::to_string(p1) + "\"";
    write("listen = [" + tcp + "]\n");
    start();
    const std::string with_unix =
        "listen = [" + tcp + ", \"unix:" + sock.string() + " mode=0600\"]\n";
    write(with_unix);
    EXPECT_FALSE(srv->request_reload().get()) << "its directory does not exist";
    EXPECT_FALSE(std::filesystem::exists(dir));
    test_client still(p1);
    ASSERT_TRUE(still.send(get));
    EXPECT_TRUE(still.read_response()) << "the running listeners are untouched";

    std::filesystem::create_directories(dir);
    ASSERT_TRUE(srv->request_reload().get());
    test_client over_unix(unix_path{sock.string()});
    ASSERT_TRUE(over_unix.send(get));
    EXPECT_TRUE(over_unix.read_response());
    EXPECT_EQ(std::filesystem::status(sock).permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    ASSERT_TRUE(srv->request_reload().get()) << "the same file again keeps the socket";
    ASSERT_TRUE(over_unix.send(get));
    EXPECT_TRUE(over_unix.read_response());

    write("listen = [" + tcp + "]\n");
    ASSERT_TRUE(srv->request_reload().get());
    EXPECT_FALSE(std::filesystem::exists(sock)) << "a socket the file no longer names goes";
    ASSERT_TRUE(over_unix.send(get)); // a connection accepted on it stays
    EXPECT_TRUE(over_unix.read_response());
    std::filesystem::remove_all(dir);
}

std::string http_get(std::uint16_t port, const std::string& path) {
    test_client c(port);
    c.send("GET " + path + " HTTP/1.1\r\nHost: admin\r\n\r\n");
    auto r = c.read_response();
    return r ? std::to_string(r->status) + "\n" + r->body : "";
}

TEST(AdminTest, MetricsAndHealthOnTheAdminAddressOnly) {
    server::config cfg;
    cfg.listen = {{"127.0.0.1", 0}};
    cfg.admin_listen = server::listen_address{"127.0.0.1", 0};
    cfg.workers = 2;
    cfg.keep_alive_timeout = 200ms;
    server::server srv(cfg);
    std::thread runner([&] { srv.run(); });
    const auto port = srv.endpoints().at(0).port();
    const auto admin_port = srv.admin_endpoint()->port();
    {
        test_client c(port);
        ASSERT_TRUE(c.send(get));
        ASSERT_TRUE(c.read_response());
        ASSERT_TRUE(c.wait_closed(5s));
    }
    const std::string m = http_get(admin_port, "/metrics");
    EXPECT_EQ(m.substr(0, 4), "200\n");
    EXPECT_NE(m.find("tarry_connections_accepted_total 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("tarry_requests_total 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("tarry_connection_closes_total{reason=\"keep_alive_timeout\"} 1\n"),
              std::string::npos)
        << m;
    // Timeout lists and lateness by kind: the keep-alive expiry, nothing else.
    EXPECT_NE(m.find("tarry_timeout_lateness_seconds_count{kind=\"keep_alive\"} 1\n"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("tarry_timeout_lateness_seconds_count{kind=\"silent\"} 0\n"),
              std::string::npos)
        << m;
    EXPECT_NE(
        m.find("tarry_timeout_list_length{kind=\"keep_alive\",duration_seconds=\"0.202\"} 0\n"),
        std::string::npos)
        << m;
    EXPECT_NE(m.find("tarry_timeout_list_length{kind=\"silent\",duration_seconds=\"60\"} 0\n"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("tarry_date_refreshes_total"), std::string::npos);
    EXPECT_EQ(http_get(admin_port, "/healthz"), "200\nok\n");
    EXPECT_EQ(http_get(admin_port, "/nope").substr(0, 4), "404\n");
    EXPECT_NE(m.find("tarry_build_info{version=\""), std::string::npos) << m;
    // The four a dashboard starts from: rate, errors, duration, and bytes.
    EXPECT_NE(m.find("tarry_responses_total{code=\"2xx\"} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("tarry_responses_total{code=\"4xx\"} 0\n"), std::string::npos) << m;
    EXPECT_NE(m.find("tarry_request_duration_seconds_count 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("tarry_request_duration_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos)
        << m;
    EXPECT_NE(m.find("tarry_received_bytes_total " + std::to_string(get.size()) + "\n"),
              std::string::npos)
        << m;
    EXPECT_EQ(m.find("tarry_sent_bytes_total 0\n"), std::string::npos) << m;
    // HEAD, as balancers' health checks send it: 200 and the length, no body.
    for (const std::string path : {"/healthz", "/metrics"}) {
        test_client c(admin_port);
        ASSERT_TRUE(c.send("HEAD " + path + " HTTP/1.1\r\nHost: admin\r\n\r\n"));
        ASSERT_TRUE(c.wait_closed(5s).has_value());
        const std::string& bytes = c.pending();
        EXPECT_EQ(bytes.substr(0, 15), "HTTP/1.1 200 OK") << path << ": " << bytes;
        EXPECT_NE(bytes.find("Content-Length: "), std::string::npos) << bytes;
        EXPECT_TRUE(bytes.ends_with("\r\n\r\n")) << path << ": no body after the head: " << bytes;
    }
    // The main listener never serves them.
    EXPECT_EQ(http_get(port, "/metrics"), "200\nHello, World!");
    srv.stop();
    runner.join();
}

TEST(AdminTest, ResponsesAreCountedPerRouteAndAReloadDoesNotResetThem) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("tarry_routes_" + std::to_string(::getpid()));
    // Targets map under the docroot whole, as nginx's `root`: /static/a.txt is www/static/a.txt.
    for (const char* sub : {"static", "more"}) {
        std::filesystem::create_directories(dir / "www" / sub);
        std::ofstream(dir / "www" / sub / "a.txt") << "a";
    }
    const auto file = dir / "tarry.toml";
    const std::string routes = "listen = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n"
                               "workers = 2\n[[route]]\nprefix = \"/static/\"\ndocroot = \"" +
                               (dir / "www").string() + "\"\n";
    std::ofstream(file) << routes;
    server::config cfg = server::load_config_file(file);
    cfg.config_file = file;
    server::server srv(cfg);
    std::thread runner([&] { srv.run(); });
    const auto port = srv.endpoints().at(0).port();
    const auto admin_port = srv.admin_endpoint()->port();
    const auto ask = [&](const std::string& target) {
        test_client c(port);
        c.send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n");
        return c.read_response();
    };
    ASSERT_EQ(ask("/static/a.txt")->status, 200);
    ASSERT_EQ(ask("/static/a.txt")->status, 200);
    ASSERT_EQ(ask("/static/missing")->status, 404);
    ASSERT_EQ(ask("/hello")->status, 200);
    {
        test_client c(port); // a malformed request: the server's own answer, no route's
        c.send("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n");
        ASSERT_EQ(c.read_response()->status, 400);
    }
    const auto has = [&](const std::string& line) {
        const std::string m = http_get(admin_port, "/metrics");
        EXPECT_NE(m.find(line + "\n"), std::string::npos) << line << "\n" << m;
    };
    has(R"(tarry_route_responses_total{route="/static/",code="2xx"} 2)");
    has(R"(tarry_route_responses_total{route="/static/",code="4xx"} 1)");
    has(R"(tarry_route_responses_total{route="/",code="2xx"} 1)");
    has(R"(tarry_route_responses_total{route="/",code="4xx"} 0)");
    has(R"(tarry_responses_total{code="4xx"} 2)");
    // A reload (a route added) keeps the counts: a reset would read as one to Prometheus.
    std::ofstream(file) << routes << "[[route]]\nprefix = \"/more/\"\ndocroot = \""
                        << (dir / "www").string() << "\"\n";
    ASSERT_TRUE(srv.request_reload().get());
    ASSERT_EQ(ask("/static/a.txt")->status, 200);
    ASSERT_EQ(ask("/more/a.txt")->status, 200);
    has(R"(tarry_route_responses_total{route="/static/",code="2xx"} 3)");
    has(R"(tarry_route_responses_total{route="/more/",code="2xx"} 1)");
    srv.stop();
    runner.join();
    std::filesystem::remove_all(dir);
}

/// The binary under `ulimit -n`, as a child process; killed when destroyed.
std::unique_ptr<child_process> spawn_limited(rlim_t nofile, std::vector<std::string> args) {
    args.insert(args.begin(), TARRY_BINARY);
    child_options o;
    o.nofile = nofile;
    o.stop_signal = SIGKILL;
    return std::make_unique<child_process>(std::move(args), o);
}

/// How many descriptors `pid` has open.
std::size_t descriptors_of(pid_t pid) {
    std::error_code ec;
    const std::filesystem::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", ec);
    return ec ? 0 : static_cast<std::size_t>(std::distance(fds, {}));
}

double cpu_seconds(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(stat)), {});
    // Fields 14 and 15 (utime, stime) come after the ")" that ends the command name.
    std::istringstream rest(s.substr(s.rfind(')') + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i)
        if (i >= 14) ticks += std::stod(field);
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

class PressureTest : public ::testing::Test {
protected:
    std::unique_ptr<child_process> child;
    pid_t pid = -1;
    std::uint16_t port = free_port();

    void start(std::vector<std::string> extra) {
        std::vector<std::string> args{"--listen",    "127.0.0.1:" + std::to_string(port),
                                      "--workers",   "1",
                                      "--log-level", "error"};
        args.insert(args.end(), extra.begin(), extra.end());
        child = spawn_limited(64, args);
        pid = child->pid();
        ASSERT_TRUE(eventually([&] { return test_client(port).connected(); }, 10s))
            << "the server did not start";
    }
};

void keeps_answering(std::uint16_t port) {
    // Far more keep-alive connections than descriptors: each new one gets an answer, because
    // the longest-idle ones are closed to make room.
    std::vector<std::unique_ptr<test_client>> clients;
    for (int i = 0; i < 150; ++i) {
        auto c = std::make_unique<test_client>(port);
        ASSERT_TRUE(c->connected()) << i;
        ASSERT_TRUE(c->send(get)) << i;
        auto r = c->read_response(5s);
        ASSERT_TRUE(r) << "connection " << i << " got no answer";
        EXPECT_EQ(r->status, 200);
        clients.push_back(std::move(c));
    }
    std::size_t reclaimed = 0;
    for (auto& c : clients)
        reclaimed += c->wait_closed(20ms) ? 1 : 0;
    EXPECT_GT(reclaimed, 0U);
    EXPECT_FALSE(clients.back()->closed()); // the newest stay
}

TEST_F(PressureTest, DerivedLimitReclaimsOldestIdleConnections) {
    start({"--keep-alive-min-timeout", "0s"}); // reclaim even a connection just used
    keeps_answering(port);
}

TEST_F(PressureTest, EmfileReclaimsOldestIdleConnections) {
    // No limit of its own: accept meets EMFILE.
    start({"--max-connections", "100000", "--keep-alive-min-timeout", "0s"});
    keeps_answering(port);
}

/// Holds the server at its descriptor limit with connections mid-request (never reclaimed),
/// checks it burns no CPU there, then lets them go and expects it to serve again.
/// A connection to `knock` waits through it too (the admin endpoint's, say).
void waits_at_the_limit(pid_t pid, std::uint16_t port, std::uint16_t knock = 0) {
    std::vector<std::unique_ptr<test_client>> held;
    for (int i = 0; i < 100; ++i) {
        held.push_back(std::make_unique<test_client>(port));
        (void)held.back()->send("GET / HTTP/1.1\r\n");
    }
    // The server has taken what it could: it is at its limit of 64 descriptors.
    EXPECT_TRUE(eventually([&] { return descriptors_of(pid) >= 60; })) << descriptors_of(pid);
    if (knock != 0) held.push_back(std::make_unique<test_client>(knock));
    const double before = cpu_seconds(pid);
    std::this_thread::sleep_for(1s); // a spin would burn this second whole
    const double used = cpu_seconds(pid) - before;
    EXPECT_LT(used, 0.3) << "the server burned CPU retrying accept";
    held.clear(); // descriptors come back; the server serves again
    EXPECT_TRUE(eventually([&] {
        test_client c(port);
        return c.send(get) && c.read_response(1s).has_value();
    }));
}

TEST_F(PressureTest, NothingToReclaimPausesInsteadOfSpinning) {
    start({"--max-connections", "100000", "--header-timeout", "30s"});
    waits_at_the_limit(pid, port);
}

TEST_F(PressureTest, AtTheDescriptorLimitTheAdminEndpointWaitsInsteadOfSpinning) {
    // A health check arrives while the process is out of descriptors: its accept fails with
    // EMFILE, and would again at once if retried at once.
    const std::uint16_t admin = free_port();
    start({"--max-connections", "100000", "--header-timeout", "30s", "--admin-listen",
           "127.0.0.1:" + std::to_string(admin)});
    waits_at_the_limit(pid, port, admin);
    EXPECT_TRUE(eventually([&] {
        test_client c(admin);
        const auto r =
            c.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n") ? c.read_response(1s) : std::nullopt;
        return r && r->status == 200;
    }));
}

} // namespace
} // namespace tarry::test

namespace tarry::test {
namespace {

TEST(AccessLogTest, OneCommonLogFormatLinePerResponse) {
    const auto file = std::filesystem::temp_directory_path() /
                      ("tarry_access_" + std::to_string(::getpid()) + ".log");
    server::config cfg;
    cfg.listen = {{"127.0.0.1", 0}};
    cfg.workers = 1;
    cfg.access_log = file;
    {
        server::server srv(cfg);
        std::thread runner([&] { srv.run(); });
        test_client c(srv.endpoints().at(0).port());
        EXPECT_TRUE(c.send("GET /a?b HTTP/1.1\r\nHost: t\r\n\r\nHEAD / HTTP/1.0\r\n\r\n"));
        EXPECT_TRUE(c.read_response());
        EXPECT_TRUE(c.wait_closed()); // the HEAD response (no body), then HTTP/1.0 closes
        srv.stop();
        runner.join();
    }
    std::ifstream in(file);
    std::string first;
    std::string second;
    std::getline(in, first);
    std::getline(in, second);
    EXPECT_EQ(first.rfind("127.0.0.1 - - [", 0), 0U) << first;
    EXPECT_NE(first.find("+0000] \"GET /a?b HTTP/1.1\" 200 13"), std::string::npos) << first;
    EXPECT_NE(second.find("\"HEAD / HTTP/1.0\" 200 0"), std::string::npos) << second;
    std::filesystem::remove(file);
}

// ---- Reload is all or nothing ----

std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n;
}

class ReloadAllOrNothingTest : public ReloadTest {
protected:
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("tarry_roots_" + std::to_string(::getpid()));
    std::uint16_t port = free_port();

    void SetUp() override {
        std::filesystem::create_directories(dir / "a");
        std::filesystem::create_directories(dir / "b");
        std::ofstream(dir / "a" / "which.txt") << "a";
        std::ofstream(dir / "b" / "which.txt") << "b";
    }
    void TearDown() override {
        ReloadTest::TearDown();
        std::filesystem::remove_all(dir);
    }
    std::string listen_line() const {
        return "listen = \"127.0.0.1:" + std::to_string(port) + "\"\n";
    }
    std::string body_of(const std::string& path) const {
        test_client c(port);
        c.send("GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
        auto r = c.read_response();
        return r ? r->body : "(no response)";
    }
};

TEST_F(ReloadAllOrNothingTest, ARejectedDocrootLeavesTheOldOneAndALaterReloadWorks) {
    write(listen_line() + "docroot = \"" + (dir / "a").string() + "\"\n");
    start();
    EXPECT_EQ(body_of("/which.txt"), "a");

    write(listen_line() + "docroot = \"" + (dir / "missing").string() + "\"\n");
    EXPECT_FALSE(srv->request_reload().get());
    EXPECT_EQ(body_of("/which.txt"), "a"); // still the files, not Hello, World!

    // The next good reload starts from the running state, not from a half-applied one.
    write(listen_line() + "docroot = \"" + (dir / "a").string() +
          "\"\nkeep_alive_timeout = \"9s\"\n");
    ASSERT_TRUE(srv->request_reload().get());
    EXPECT_EQ(body_of("/which.txt"), "a");

    write(listen_line() + "docroot = \"" + (dir / "b").string() + "\"\n");
    ASSERT_TRUE(srv->request_reload().get());
    EXPECT_EQ(body_of("/which.txt"), "b");
}

TEST_F(ReloadAllOrNothingTest, AnUnbindableAddressIsRejectedAndNothingChanges) {
    // Another socket holds this port without SO_REUSEPORT: binding it must fail.
    const int blocker = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(blocker, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(blocker, 1), 0);
    socklen_t len = sizeof a;
    ::getsockname(blocker, reinterpret_cast<sockaddr*>(&a), &len);
    const auto taken = ntohs(a.sin_port);

    write(listen_line() + "docroot = \"" + (dir / "a").string() + "\"\n");
    start();
    write("listen = \"127.0.0.1:" + std::to_string(taken) + "\"\ndocroot = \"" +
          (dir / "b").string() + "\"\n");
    EXPECT_FALSE(srv->request_reload().get());
    EXPECT_EQ(body_of("/which.txt"), "a"); // still listening where it was, with the old root
    EXPECT_EQ(srv->current_config().docroot, dir / "a");
    ::close(blocker);
}

TEST_F(ReloadAllOrNothingTest, DocrootChangesReleaseTheOldRoot) {
    write(listen_line() + "docroot = \"" + (dir / "a").string() + "\"\n");
    start();
    EXPECT_EQ(body_of("/which.txt"), "a");
    const std::size_t before = open_fds();
    for (int i = 0; i < 6; ++i) {
        write(listen_line() + "docroot = \"" + (dir / (i % 2 == 0 ? "b" : "a")).string() + "\"\n");
        ASSERT_TRUE(srv->request_reload().get());
    }
    EXPECT_EQ(body_of("/which.txt"), "a");
    // The test client may still be closing.
    EXPECT_TRUE(eventually([&] { return open_fds() <= before + 1; })) << open_fds();
}

TEST_F(ReloadAllOrNothingTest, TimeoutsTurnedOffLeaveTheOldDeadlines) {
    write(listen_line() + "keep_alive_timeout = \"400ms\"\n");
    start();
    test_client c(port);
    ASSERT_TRUE(c.send(get));
    ASSERT_TRUE(c.read_response());
    write(listen_line() + "keep_alive_timeout = \"400ms\"\ntimeouts = false\n");
    ASSERT_TRUE(srv->request_reload().get());
    EXPECT_FALSE(c.wait_closed(1200ms)); // past the old deadline, still open
    ASSERT_TRUE(c.send(get));
    EXPECT_TRUE(c.read_response());

    // And on again: the idle connection is bounded again, from now.
    write(listen_line() + "keep_alive_timeout = \"400ms\"\n");
    ASSERT_TRUE(srv->request_reload().get());
    EXPECT_TRUE(c.wait_closed(5s));
}

TEST_F(ReloadAllOrNothingTest, AccessLogAndAdminAddressFollowTheFile) {
    const auto log = dir / "access.log";
    const auto admin_port = free_port();
    write(listen_line());
    start();
    EXPECT_FALSE(srv->admin_endpoint());
    write(listen_line() + "access_log = \"" + log.string() + "\"\nadmin_listen = \"127.0.0.1:" +
          std::to_string(admin_port) + "\"\nlog_level = \"warn\"\n");
    ASSERT_TRUE(srv->request_reload().get());
    EXPECT_EQ(body_of("/logged"), "Hello, World!");
    ASSERT_TRUE(srv->admin_endpoint());
    EXPECT_EQ(srv->admin_endpoint()->port(), admin_port);
    EXPECT_EQ(http_get(admin_port, "/healthz").substr(0, 3), "200");
    EXPECT_EQ(spdlog::get_level(), spdlog::level::warn);
    spdlog::set_level(spdlog::level::info);
    srv->stop();
    runner.join();
    srv.reset();
    std::ifstream in(log);
    std::string line;
    std::getline(in, line);
    EXPECT_NE(line.find("\"GET /logged HTTP/1.1\" 200 13"), std::string::npos) << line;
}

TEST(NoTimeoutsTest, StopStillFindsEveryConnection) {
    const std::size_t before = open_fds();
    {
        server::config cfg;
        cfg.listen = {{"127.0.0.1", 0}};
        cfg.workers = 1;
        cfg.timeouts = false;
        cfg.drain_timeout = 200ms;
        server::server srv(cfg);
        std::thread runner([&] { srv.run(); });
        test_client idle(srv.endpoints().at(0).port());
        ASSERT_TRUE(idle.send(get));
        ASSERT_TRUE(idle.read_response());
        test_client partial(srv.endpoints().at(0).port());
        ASSERT_TRUE(partial.send("GET / HTTP/1.1\r\n"));
        ASSERT_TRUE(eventually([&] { return srv.workers()[0]->connections() == 2; }));
        srv.stop();
        runner.join(); // returns: nothing was left behind unfound
        EXPECT_TRUE(idle.wait_closed(2s));
        EXPECT_TRUE(partial.wait_closed(2s));
    }
    EXPECT_EQ(open_fds(), before);
}

} // namespace
} // namespace tarry::test

// Upstream servers by DNS name, against a DNS server the test runs on loopback
// (dns_server.py) whose answers it changes while requests run, and Node.js applications on
// loopback addresses of their own (named_backend.js). Nothing here asks any other DNS server:
// every configuration names the test's as its resolver.
#include "child_process.hpp"
#include "server/server_fixture.hpp"

#include <tarry/resolve/dns_resolver.hpp>
#include <tarry/resolve/name_watch.hpp>
#include <tarry/server/config.hpp>
#include <tarry/server/server.hpp>

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tarry::test {
namespace {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// test_client.hpp's eventually(), with room for a name's re-resolution by its TTL.
template <typename F> bool names_eventually(F done, steady::duration limit = 30s) {
    return eventually(done, limit);
}

/// tests/upstream/dns_server.py on 127.0.0.1, answering from a zone file the test rewrites.
class dns_server {
public:
    explicit dns_server(const std::string& zone_json)
        : zone_(fs::temp_directory_path() /
                ("tarry_zone_" + std::to_string(::getpid()) + "_" + std::to_string(next_++))) {
        set(zone_json);
        child_ = std::make_unique<child_process>(
            std::vector<std::string>{"/usr/bin/python3", TARRY_DNS_SERVER_PY, zone_.string()},
            child_options::backend());
        if (const auto line = child_->read_line()) port_ = std::stoi(*line);
    }
    dns_server(const dns_server&) = delete;
    dns_server& operator=(const dns_server&) = delete;
    ~dns_server() {
        child_.reset();
        std::error_code ec;
        fs::remove(zone_, ec);
        fs::remove(zone_.string() + ".queries", ec);
    }

    /// Its answers from now on: written whole, then renamed into place.
    void set(const std::string& zone_json) {
        const fs::path tmp = zone_.string() + ".tmp";
        std::ofstream(tmp) << zone_json;
        fs::rename(tmp, zone_);
    }
    [[nodiscard]] int queries() const {
        std::ifstream in(zone_.string() + ".queries");
        int n = 0;
        in >> n;
        return n;
    }
    [[nodiscard]] int port() const noexcept { return port_; }
    [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

private:
    static inline int next_ = 0;
    fs::path zone_;
    std::unique_ptr<child_process> child_;
    int port_ = 0;
};

/// "{"mode": "answer", "ttl": 0, "names": {"app.test": ["127.0.0.2"]}}".
std::string zone(const std::vector<std::string>& addresses, const std::string& mode = "answer",
                 const std::string& name = "app.test") {
    std::string list;
    for (const auto& a : addresses)
        list += (list.empty() ? "\"" : ", \"") + a + "\"";
    return R"({"mode": ")" + mode + R"(", "ttl": 0, "names": {")" + name + R"(": [)" + list + "]}}";
}

/// named_backend.js on `host`:`port` (0: any), answering `label`.
class named_backend {
public:
    named_backend(const std::string& host, std::uint16_t port, const std::string& label)
        : child_({"node", TARRY_NAMED_BACKEND_JS, host, std::to_string(port), label},
                 child_options::backend()) {
        if (const auto line = child_.read_line())
            port_ = static_cast<std::uint16_t>(std::stoi(*line));
    }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

private:
    child_process child_;
    std::uint16_t port_ = 0;
};

/// The value of one sample line of the exposition ("name{labels}"), or -1.
long long sample(const std::string& metrics, const std::string& line_start) {
    std::istringstream in(metrics);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(line_start + " "))
            return std::stoll(line.substr(line_start.size() + 1));
    return -1;
}

class UpstreamNamesTest : public ServerFromFileTest {
protected:
    std::uint16_t port = 0;

    void start_with(const std::string& text) {
        write(text);
        start();
        port = srv->endpoints().at(0).port();
    }
    std::string config(const dns_server& dns, std::uint16_t app_port,
                       const std::string& extra = "") {
        return "listen = [\"127.0.0.1:0\"]\nresolver = [\"" + dns.address() +
               "\"]\nresolve_interval_min = \"100ms\"\n" + extra +
               "\n[upstream.app]\nservers = [\"app.test:" + std::to_string(app_port) +
               "\"]\n[[route]]\nprefix = \"/\"\nupstream = \"app\"\n";
    }
    std::optional<response> get(const std::string& target = "/") {
        test_client c(port);
        if (!c.send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n")) return std::nullopt;
        return c.read_response(10s);
    }
    std::string metric(const std::string& line_start) {
        return std::to_string(sample(srv->metrics(), line_start));
    }
};

TEST_F(UpstreamNamesTest, AnAnswerThatChangesUnderLoadLosesNoRequestAndDrainsTheOldAddress) {
    named_backend a("127.0.0.2", 0, "A");
    ASSERT_NE(a.port(), 0);
    named_backend b("127.0.0.3", a.port(), "B"); // the same port: only the address changes
    ASSERT_NE(b.port(), 0);
    dns_server dns(zone({"127.0.0.2"}));
    ASSERT_NE(dns.port(), 0);
    start_with(config(dns, a.port()));

    // A request in flight on A when the answer changes: drained, not cut.
    std::optional<response> slow;
    std::thread slow_client([&] { slow = get("/slow?ms=1500"); });

    std::atomic<bool> stop{false};
    std::atomic<int> from_a{0}, from_b{0}, lost{0};
    std::vector<std::thread> load;
    for (int i = 0; i < 4; ++i)
        load.emplace_back([&] {
            while (!stop) {
                test_client c(port);
                for (int n = 0; n < 50 && !stop; ++n) {
                    if (!c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")) {
                        ++lost;
                        return;
                    }
                    const auto r = c.read_response(10s);
                    if (!r || r->status != 200)
                        ++lost;
                    else
                        ++(r->body == "B" ? from_b : from_a);
                    if (!r) return;
                }
            }
        });
    ASSERT_TRUE(names_eventually([&] { return from_a > 200; }));
    dns.set(zone({"127.0.0.3"}));
    EXPECT_TRUE(names_eventually([&] { return from_b > 200; }));
    const int a_after = from_a;
    EXPECT_TRUE(names_eventually([&] { return from_b > 400; })); // and nothing goes to A any more
    stop = true;
    for (auto& t : load)
        t.join();
    slow_client.join();
    EXPECT_EQ(lost, 0);
    EXPECT_EQ(from_a, a_after);
    ASSERT_TRUE(slow.has_value());
    EXPECT_EQ(slow->status, 200);
    EXPECT_EQ(slow->body, "A");
    const std::string m = srv->metrics();
    EXPECT_EQ(sample(m, R"(tarry_upstream_dns_addresses{name="app.test"})"), 1);
    EXPECT_GE(sample(m, R"(tarry_upstream_dns_changes_total{name="app.test"})"), 1);
    // A's pooled connections were closed as its address left, not cut under a request.
    const std::string server = "app.test:" + std::to_string(a.port());
    EXPECT_GE(
        sample(m, "tarry_upstream_closes_total{server=\"" + server + "\",reason=\"removed\"}"), 1);
    EXPECT_EQ(sample(m, "tarry_upstream_errors_total{server=\"" + server + "\",kind=\"reset\"}"),
              0);
}

TEST_F(UpstreamNamesTest, EveryAddressOfANameIsAServer) {
    named_backend a("127.0.0.2", 0, "A");
    named_backend b("127.0.0.3", a.port(), "B");
    dns_server dns(zone({"127.0.0.2", "127.0.0.3"}));
    start_with(config(dns, a.port()));
    int seen_a = 0, seen_b = 0;
    for (int i = 0; i < 20; ++i) {
        const auto r = get();
        ASSERT_TRUE(r.has_value());
        ++(r->body == "A" ? seen_a : seen_b);
    }
    EXPECT_EQ(seen_a, 10); // round robin over the two addresses
    EXPECT_EQ(seen_b, 10);
    EXPECT_EQ(sample(srv->metrics(), R"(tarry_upstream_dns_addresses{name="app.test"})"), 2);
}

TEST_F(UpstreamNamesTest, ADnsServerThatStopsAnsweringLeavesTheLastAnswerInUse) {
    named_backend a("127.0.0.2", 0, "A");
    named_backend b("127.0.0.3", a.port(), "B");
    dns_server dns(zone({"127.0.0.2"}));
    // The server's log lines, to count them (attached before any thread logs, taken off once
    // the server has stopped).
    const auto lines = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
    spdlog::default_logger()->sinks().push_back(lines);
    start_with(config(dns, a.port()));
    dns.set(zone({}, "silent"));
    const std::string stale = R"(tarry_upstream_dns_stale{name="app.test"})";
    ASSERT_TRUE(names_eventually([&] { return metric(stale) == "1"; }));
    for (int i = 0; i < 5; ++i) {
        const auto r = get();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, "A");
    }
    // An answer with no address (SERVFAIL, then NXDOMAIN) is no better than none.
    dns.set(zone({}, "servfail"));
    const int asked = dns.queries();
    ASSERT_TRUE(names_eventually([&] { return dns.queries() > asked + 2; }));
    dns.set(zone({}, "answer", "other.test"));
    const int asked_again = dns.queries();
    ASSERT_TRUE(names_eventually([&] { return dns.queries() > asked_again + 2; }));
    EXPECT_EQ(get()->body, "A");
    EXPECT_EQ(metric(stale), "1");
    // Answering again, with another address: in use at once.
    dns.set(zone({"127.0.0.3"}));
    ASSERT_TRUE(names_eventually([&] { return metric(stale) == "0"; }));
    ASSERT_TRUE(names_eventually([&] {
        const auto r = get();
        return r && r->body == "B";
    }));
    EXPECT_GE(std::stoll(metric(R"(tarry_upstream_dns_failures_total{name="app.test"})")), 3);
    srv->stop();
    runner.join();
    srv.reset();
    spdlog::default_logger()->sinks().pop_back();
    // Logged once for the whole failure, whatever the number of lookups; once more when the
    // name resolved again.
    int failed = 0, again = 0;
    for (const std::string& line : lines->last_formatted()) {
        failed += line.find("resolving app.test failed") != std::string::npos ? 1 : 0;
        again += line.find("app.test resolves again: 127.0.0.3") != std::string::npos ? 1 : 0;
    }
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(again, 1);
}

TEST_F(UpstreamNamesTest, ANameThatStopsResolvingDuringAReloadKeepsItsLastAnswer) {
    named_backend a("127.0.0.2", 0, "A");
    dns_server dns(zone({"127.0.0.2"}));
    const std::string both = zone({"127.0.0.2"});
    start_with(config(dns, a.port()));
    ASSERT_EQ(get()->body, "A");

    dns.set(zone({}, "answer", "other.test")); // app.test: NXDOMAIN from now on
    write(config(dns, a.port(), "keep_alive_timeout = \"30s\""));
    EXPECT_TRUE(srv->request_reload().get()); // the reload goes through on the last answer
    EXPECT_EQ(srv->current_config().keep_alive_timeout, 30s);
    for (int i = 0; i < 5; ++i) {
        const auto r = get();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->body, "A");
    }

    // A name the running configuration never resolved has no last answer: the reload is
    // refused, and everything stays as it was.
    write(config(dns, a.port(), "keep_alive_timeout = \"20s\"") +
          "[upstream.more]\nservers = [\"new.test:80\"]\n");
    EXPECT_FALSE(srv->request_reload().get());
    EXPECT_EQ(srv->current_config().keep_alive_timeout, 30s);
    EXPECT_EQ(get()->body, "A");
}

TEST_F(UpstreamNamesTest, ANameThatDoesNotResolveRefusesTheStartNamingIt) {
    dns_server dns(zone({}, "answer", "other.test"));
    write(config(dns, 3000));
    std::vector<std::string> args{"tarry", "--config", file.string(), "--workers", "1"};
    std::vector<const char*> argv;
    for (const auto& s : args)
        argv.push_back(s.c_str());
    const auto cl = server::parse_command_line(static_cast<int>(argv.size()), argv.data());
    try {
        server::server s(cl.cfg, args);
        ADD_FAILURE() << "started";
    } catch (const server::config_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("upstream.app.servers: cannot resolve \"app.test\""), std::string::npos)
            << what;
        EXPECT_EQ(what.find('\n'), std::string::npos);
    }
}

TEST_F(UpstreamNamesTest, LocalhostReachesAnApplicationListeningOnIpv6Only) {
    named_backend app("::1", 0, "six"); // what Node.js 17+ does for "localhost" on many systems
    ASSERT_NE(app.port(), 0);
    start_with("listen = [\"127.0.0.1:0\"]\n[upstream.app]\nservers = [\"localhost:" +
               std::to_string(app.port()) + "\"]\n[[route]]\nprefix = \"/\"\nupstream = \"app\"\n");
    for (int i = 0; i < 10; ++i) {
        const auto r = get();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, "six");
    }
}

// --- The resolver on its own --------------------------------------------------------------------

TEST(DnsResolverTest, AnswersEveryAddressAndTheTtl) {
    dns_server dns(
        R"({"mode": "answer", "ttl": 42, "names": {"app.test": ["127.0.0.3", "127.0.0.2", "::1"]}})");
    const auto answers = resolve::resolve_now({{dns.address()}}, {"app.test", "none.test"});
    const auto& a = answers.at("app.test");
    ASSERT_TRUE(a.ok()) << a.error;
    EXPECT_EQ(resolve::to_string(a.addresses), "127.0.0.2, 127.0.0.3, ::1");
    EXPECT_EQ(a.ttl, 42s);
    EXPECT_FALSE(answers.at("none.test").ok());
    EXPECT_FALSE(answers.at("none.test").error.empty());
}

TEST(DnsResolverTest, ASilentServerFailsWithinItsTimeouts) {
    dns_server dns(zone({}, "silent"));
    resolve::dns_resolver::options o{{dns.address()}, 200ms, 2};
    const auto answers = resolve::resolve_now(o, {"app.test"});
    EXPECT_FALSE(answers.at("app.test").ok());
}

TEST(DnsResolverTest, RefreshIsTheTtlWithinTheBounds) {
    const resolve::refresh_bounds b{5s, 60s};
    EXPECT_EQ(b.after(0s), 5s);
    EXPECT_EQ(b.after(30s), 30s);
    EXPECT_EQ(b.after(600s), 60s);
}

// --- The configuration ---------------------------------------------------------------------------

server::config from(const std::string& text) {
    const fs::path f =
        fs::temp_directory_path() / ("tarry_names_" + std::to_string(::getpid()) + ".toml");
    std::ofstream(f) << text;
    try {
        auto c = server::load_config_file(f);
        fs::remove(f);
        return c;
    } catch (...) {
        fs::remove(f);
        throw;
    }
}

std::string error_of(const std::string& text) {
    try {
        from(text);
    } catch (const server::config_error& e) {
        return e.what();
    }
    return "";
}

TEST(UpstreamNamesConfigTest, NamesAndResolverKeys) {
    const auto c = from("resolver = [\"127.0.0.53\", \"[::1]:5353\", \"10.0.0.2:54\"]\n"
                        "resolve_interval_min = \"1s\"\nresolve_interval_max = \"5m\"\n"
                        "[upstream.app]\nservers = [\"app.internal:3000\", \"db-1.svc.local.:80\", "
                        "\"localhost:3001\", \"10.0.0.1:3000\"]\n");
    EXPECT_EQ(c.resolver, (std::vector<std::string>{"127.0.0.53:53", "[::1]:5353", "10.0.0.2:54"}));
    EXPECT_EQ(c.resolve_interval_min, 1s);
    EXPECT_EQ(c.resolve_interval_max, 300s);
    EXPECT_EQ(server::upstream_dns_names(c),
              (std::vector<std::string>{"app.internal", "db-1.svc.local."}));
    EXPECT_NE(error_of("[upstream.app]\nservers = [\"app_x:3000\"]\n").find("upstream.app.servers"),
              std::string::npos);
    EXPECT_NE(error_of("[upstream.app]\nservers = [\"10.0.0:3000\"]\n").find("numeric"),
              std::string::npos);
    EXPECT_NE(error_of("[upstream.app]\nservers = [\"app.internal:0\"]\n").find("port"),
              std::string::npos);
    EXPECT_NE(error_of("resolver = [\"dns.example:53\"]\n").find("resolver"), std::string::npos);
    EXPECT_NE(error_of("resolver = [\"localhost:53\"]\n").find("numeric"), std::string::npos);
    EXPECT_NE(error_of("resolve_interval_min = \"2m\"\nresolve_interval_max = \"1m\"\n")
                  .find("resolve_interval_min: 120s is more than resolve_interval_max (60s)"),
              std::string::npos);
}

} // namespace
} // namespace tarry::test

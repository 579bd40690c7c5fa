// Sequences an operator meets with HTTP/2 clients, on the binary (`http2 = true`) in front of a
// real Node.js application (tests/server/h2_app.js), with python3-h2 clients
// (tests/server/h2_sequences.py) that say what they see line by line as it happens:
//   a reset storm while proxying (the held upstream requests cancelled, the connection ended with
//   GOAWAY(ENHANCE_YOUR_CALM), another client served throughout);
//   a graceful stop (SIGTERM) with streams mid-response: they finish, the client sees both
//   GOAWAYs, the process exits 0;
//   a reload (SIGHUP) changing the HTTP/2 settings mid-stream: the stream finishes, new
//   connections get the new SETTINGS;
//   pressure (max_connections) on idle h2 connections: newcomers served, the idle ones GOAWAY
//   and FIN;
//   a rolling restart of two tarrys behind HAProxy under h2 load (HAProxy speaking HTTP/1.1 or
//   HTTP/2 to them): no request lost.
// Built with the sanitizers, the binary runs under them (its exit status says so).
#include "h2_binary.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>

namespace tarry::test {
namespace {

/// tests/server/h2_sequences.py as a child process whose lines the test reads as they come.
class h2_script {
public:
    h2_script(std::uint16_t port, const std::vector<std::string>& args)
        : child_(argv(port, args), options()) {}

    /// The next line (nullopt at its end or after `limit`).
    std::optional<std::string> line(steady::duration limit = 60s) {
        auto l = child_.read_line(limit);
        if (l) seen_ += *l + "\n";
        return l;
    }
    /// Every line to its end.
    std::vector<std::string> rest(steady::duration limit = 60s) {
        std::vector<std::string> all;
        while (auto l = line(limit))
            all.push_back(*l);
        return all;
    }
    /// What it printed so far, for a failure's message.
    [[nodiscard]] const std::string& seen() const noexcept { return seen_; }
    int wait() { return child_.wait(); }

private:
    static std::vector<std::string> argv(std::uint16_t port, const std::vector<std::string>& args) {
        std::vector<std::string> v{"/usr/bin/python3", TARRY_H2_SEQUENCES, std::to_string(port)};
        v.insert(v.end(), args.begin(), args.end());
        return v;
    }
    static child_options options() {
        child_options o;
        o.pipe_stdout = true;
        return o;
    }

    child_process child_;
    std::string seen_;
};

class H2SequencesTest : public ::testing::Test {
protected:
    scratch_dir dir{"h2_sequences"};
    node_app app;

    void SetUp() override { ASSERT_NE(app.port(), 0) << "the application did not start"; }
};

TEST_F(H2SequencesTest, ResetStormWhileProxyingEndsInEnhanceYourCalmAndCancelsUpstream) {
    h2_tarry t(dir.path(), "workers = 1\n" + app_routes(app));
    ASSERT_TRUE(t.ready()) << t.log();

    // Another client on the same server, one h2c request after the other from before the storm
    // to after it: every one answered.
    std::atomic<bool> storm_over{false};
    std::atomic<int> served_after{0};
    std::atomic<int> served{0};
    std::string failures;
    std::thread bystander([&] {
        while (served_after.load() < 3) {
            const bool after = storm_over.load();
            const run_result r =
                run_shell("curl -sS --max-time 20 --http2-prior-knowledge -w ' %{http_version}' " +
                          t.url("/app/ok"));
            if (r.output == "ok 2") {
                ++served;
                if (after) ++served_after;
            } else {
                failures += r.output + "\n";
                if (after) break;
            }
        }
    });
    ASSERT_TRUE(eventually([&] { return served.load() >= 1; }, 20s));

    // Ten requests held upstream, then the storm on the same connection.
    h2_script storm(t.port, {"storm", "/app/hold", "10"});
    EXPECT_EQ(storm.line(), "held 10") << storm.seen();
    EXPECT_TRUE(eventually([&] { return app.stat("held") >= 10; }, 20s)) << app.stats();
    const auto goaway = storm.line();
    ASSERT_TRUE(goaway) << storm.seen();
    EXPECT_TRUE(goaway->starts_with("goaway 11 ")) << storm.seen(); // ENHANCE_YOUR_CALM
    const auto resets = storm.line();
    ASSERT_TRUE(resets && resets->starts_with("reset-streams ")) << storm.seen();
    EXPECT_GE(std::stol(resets->substr(14)), 80) << storm.seen(); // not the first reset's
    EXPECT_EQ(storm.line(), "eof") << storm.seen();
    EXPECT_EQ(storm.wait(), 0) << storm.seen();
    storm_over = true;

    // Every request the application saw held was given up by the proxy: its socket closed, not
    // left to be answered, and none is left open.
    EXPECT_TRUE(eventually(
        [&] {
            const std::string s = app.stats();
            return json_number(s, "aborted") == json_number(s, "held") &&
                   json_number(s, "released") == 0;
        },
        20s))
        << app.stats();
    bystander.join();
    EXPECT_EQ(failures, "");
    EXPECT_EQ(served_after.load(), 3);

    const std::string m = t.metrics();
    EXPECT_EQ(sample(m, "tarry_h2_goaways_sent_total{code=\"ENHANCE_YOUR_CALM\"}"), 1) << m;
    EXPECT_GE(sample(m, "tarry_h2_resets_received_total{code=\"CANCEL\"}"), 80) << m;
    EXPECT_TRUE(eventually([&] { return sample(t.metrics(), "tarry_h2_streams") == 0; }, 20s));
    EXPECT_EQ(t.process().stop(), 0) << t.log();
}

TEST_F(H2SequencesTest, GracefulStopLetsStreamsInFlightFinishAndExitsZero) {
    h2_tarry t(dir.path(), "workers = 1\ndrain_timeout = \"60s\"\n" + app_routes(app));
    ASSERT_TRUE(t.ready()) << t.log();
    h2_script client(t.port, {"inflight", "/app/hold", "3"});
    EXPECT_EQ(client.line(), "mid-response") << client.seen();
    EXPECT_EQ(app.stat("held"), 3) << app.stats();

    t.process().process().signal(SIGTERM);
    // RFC 9113 6.8: GOAWAY(2^31-1) and a PING first; the client answers the PING, and the final
    // GOAWAY names the last stream it opened (5: streams 1, 3, 5).
    EXPECT_EQ(client.line(), "goaway 0 2147483647") << client.seen();
    EXPECT_EQ(client.line(), "goaway 0 5") << client.seen();
    // No new connection is taken any more; the streams in flight still finish.
    EXPECT_TRUE(eventually([&] { return !test_client(t.port).connected(); }, 20s));
    app.release();
    std::vector<std::string> rest = client.rest();
    const std::set<std::string> got(rest.begin(), rest.end());
    EXPECT_EQ(got, (std::set<std::string>{"ended 1 8", "ended 3 8", "ended 5 8", "eof"}))
        << client.seen();
    EXPECT_TRUE(!rest.empty() && rest.back() == "eof") << client.seen();
    EXPECT_EQ(client.wait(), 0);
    EXPECT_EQ(t.process().wait(), 0) << t.log();
    EXPECT_EQ(app.stat("aborted"), 0) << app.stats();
}

TEST_F(H2SequencesTest, ReloadMidStreamFinishesItAndNewConnectionsGetTheNewSettings) {
    const std::string routes = app_routes(app);
    h2_tarry t(dir.path(), "workers = 2\n" + routes);
    ASSERT_TRUE(t.ready()) << t.log();
    {
        h2_script before(t.port, {"settings"});
        const std::vector<std::string> s = before.rest();
        // SETTINGS_ENABLE_CONNECT_PROTOCOL (8): WebSockets over HTTP/2 (RFC 8441).
        EXPECT_EQ(s, (std::vector<std::string>{"setting 3 128", "setting 6 16384", "setting 8 1",
                                               "acked"}));
    }
    h2_script client(t.port, {"inflight", "/app/hold", "1"});
    EXPECT_EQ(client.line(), "mid-response") << client.seen();

    t.reload("workers = 2\nhttp2_max_concurrent_streams = 7\n"
             "http2_initial_window_size = 1048576\n" +
             routes);
    // Each new connection's SETTINGS, until one carries the new values (every worker applies a
    // reload on its own thread).
    std::vector<std::string> after;
    EXPECT_TRUE(eventually(
        [&] {
            h2_script probe(t.port, {"settings"});
            after = probe.rest();
            return after == std::vector<std::string>{"setting 3 7", "setting 4 1048576",
                                                     "setting 6 16384", "setting 8 1", "acked"};
        },
        20s))
        << ::testing::PrintToString(after);

    // The stream opened before the reload is answered to its end on its connection.
    app.release();
    EXPECT_EQ(client.line(), "ended 1 8") << client.seen();
    EXPECT_EQ(app.stat("aborted"), 0) << app.stats();
    EXPECT_TRUE(eventually([&] { return sample(t.metrics(), "tarry_h2_streams") == 0; }, 20s));
    EXPECT_EQ(t.process().stop(), 0) << t.log();
    const std::vector<std::string> rest = client.rest();
    EXPECT_TRUE(!rest.empty() && rest.back() == "eof") << client.seen();
}

TEST_F(H2SequencesTest, PressureTakesIdleH2ConnectionsWithAGoawayThenTheFin) {
    // One worker: max_connections is the worker's own limit then.
    h2_tarry t(dir.path(), "workers = 1\nmax_connections = 8\nkeep_alive_min_timeout = \"0s\"\n" +
                               app_routes(app));
    ASSERT_TRUE(t.ready()) << t.log();
    h2_script idle(t.port, {"idle", "8", "/app/x"});
    EXPECT_EQ(idle.line(), "idle 8") << idle.seen();
    EXPECT_TRUE(eventually([&] { return sample(t.metrics(), "tarry_h2_connections") == 8; }, 20s))
        << t.metrics();

    // Eight newcomers at the limit, each kept open once answered: each takes an idle h2
    // connection's place.
    std::vector<std::unique_ptr<test_client>> newcomers;
    for (int i = 0; i < 8; ++i) {
        auto c = std::make_unique<test_client>(t.port);
        ASSERT_TRUE(c->send("GET /app/x HTTP/1.1\r\nHost: a\r\n\r\n"));
        const auto answer = c->read_response(20s);
        ASSERT_TRUE(answer) << "newcomer " << i;
        EXPECT_EQ(answer->status, 200);
        EXPECT_EQ(answer->body, "ok");
        newcomers.push_back(std::move(c));
    }
    // Each idle connection: GOAWAY(NO_ERROR, its one stream), then the close.
    std::set<std::string> closes;
    for (int i = 0; i < 8; ++i)
        if (const auto l = idle.line()) closes.insert(l->substr(l->find(' ') + 1));
    EXPECT_EQ(closes, std::set<std::string>{"goaway 0 1 eof"}) << idle.seen();
    EXPECT_EQ(idle.wait(), 0) << idle.seen();
    const std::string m = t.metrics();
    EXPECT_EQ(sample(m, "tarry_connection_closes_total{reason=\"pressure\"}"), 8) << m;
    EXPECT_EQ(sample(m, "tarry_h2_goaways_sent_total{code=\"NO_ERROR\"}"), 8) << m;
    EXPECT_EQ(t.process().stop(), 0) << t.log();
}

/// HAProxy in HTTP mode in front of two tarrys: h2c with prior knowledge to the clients, and to
/// the servers HTTP/1.1 (`h2`: HTTP/2, `proto h2`), checked every 100 ms; a request that found
/// a server gone (refused, or its idle connection closed as it was sent) is retried on the other.
class haproxy_h2 {
public:
    std::uint16_t port = free_port();

    haproxy_h2(const fs::path& dir, std::uint16_t a, std::uint16_t b, bool h2) {
        const std::string server =
            " check inter 100ms fall 1 rise 1" + std::string(h2 ? " proto h2" : "") + "\n";
        write_file(dir / "haproxy.cfg",
                   "global\n  maxconn 1000\n"
                   "defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n"
                   "  timeout server 30s\n  retries 3\n  option redispatch 1\n"
                   "  retry-on conn-failure empty-response response-timeout\n"
                   "frontend fe\n  bind 127.0.0.1:" +
                       std::to_string(port) +
                       " proto h2\n  default_backend be\n"
                       "backend be\n  balance roundrobin\n"
                       "  server a 127.0.0.1:" +
                       std::to_string(a) + server + "  server b 127.0.0.1:" + std::to_string(b) +
                       server);
        child_.emplace(
            std::vector<std::string>{"haproxy", "-db", "-q", "-f", (dir / "haproxy.cfg").string()});
        ready_ = eventually([&] { return test_client(port).connected(); }, 10s);
    }
    [[nodiscard]] bool ready() const noexcept { return ready_; }

private:
    std::optional<child_process> child_;
    bool ready_ = false;
};

/// The requests tarry has answered, from its metrics.
double answered(const h2_tarry& t) {
    return sample(t.metrics(), "tarry_requests_total");
}

class H2RollingRestartTest : public ::testing::TestWithParam<bool> {};

TEST_P(H2RollingRestartTest, BehindHaproxyWithH2ClientsNoRequestIsLost) {
    scratch_dir dir("h2_rolling");
    for (const char* d : {"a", "b", "a2"})
        fs::create_directories(dir / d);
    write_file(dir / "page.txt", std::string(5000, 'p'));
    const std::string config = "workers = 2\ndocroot = \"" + dir.path().string() + "\"\n";
    std::optional<h2_tarry> a;
    a.emplace(dir / "a", config);
    h2_tarry b(dir / "b", config);
    ASSERT_TRUE(a->ready() && b.ready()) << a->log() << b.log();
    const std::uint16_t a_port = a->port;
    haproxy_h2 lb(dir.path(), a_port, b.port, GetParam());
    ASSERT_TRUE(lb.ready());

    // h2 load through HAProxy, round after round until the restarts are over: every request of
    // every round answered 200.
    std::atomic<bool> done{false};
    std::atomic<int> rounds{0};
    std::string failures;
    std::thread load([&] {
        while (!done.load()) {
            const run_result r = run_shell(
                "timeout 120 h2load -n 2000 -c 4 -m 8 http://127.0.0.1:" + std::to_string(lb.port) +
                "/page.txt");
            if (!has(r.output, "2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout") ||
                !has(r.output, "status codes: 2000 2xx, 0 3xx, 0 4xx, 0 5xx"))
                failures += r.output;
            ++rounds;
        }
    });
    // a is stopped while it serves, and started again on its port; then b.
    EXPECT_TRUE(eventually([&] { return answered(*a) >= 500; }, 60s));
    EXPECT_EQ(a->process().stop(), 0) << a->log();
    a.reset();
    a.emplace(dir / "a2", config, a_port);
    ASSERT_TRUE(a->ready()) << a->log();
    EXPECT_TRUE(eventually([&] { return answered(*a) >= 500; }, 60s)); // back in HAProxy's pool
    EXPECT_TRUE(eventually([&] { return answered(b) >= 500; }, 60s));
    EXPECT_EQ(b.process().stop(), 0) << b.log();
    const int after = rounds.load();
    EXPECT_TRUE(eventually([&] { return rounds.load() > after; }, 120s)); // a round on a alone
    done = true;
    load.join();
    EXPECT_EQ(failures, "");
    EXPECT_GE(rounds.load(), 2);
}

INSTANTIATE_TEST_SUITE_P(ToTarry, H2RollingRestartTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                             return p.param ? "Http2" : "Http11";
                         });

} // namespace
} // namespace tarry::test

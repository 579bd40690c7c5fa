// What the error log tells an operator: what a reload changed, why the process ended and what
// its drain did. The binary runs as a child process and its log is read from its output file.
#include "tarry_process.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <string>

namespace tarry::test {
namespace {

using namespace std::chrono_literals;

class OperatorLogTest : public ::testing::Test {
protected:
    scratch_dir dir{"operator_log"};
    std::filesystem::path log = dir / "tarry.log";
    std::filesystem::path conf = dir / "tarry.toml";

    void write(const std::string& text) { std::ofstream(conf) << text; }
    std::uint16_t port = free_port();

    /// The binary at log level info (tarry_process runs it at warn), once it listens.
    std::unique_ptr<child_process> start() {
        child_options o;
        o.output = log.string();
        auto p = std::make_unique<child_process>(
            std::vector<std::string>{TARRY_BINARY, "--config", conf.string(), "--listen",
                                     "127.0.0.1:" + std::to_string(port), "--workers", "1"},
            o);
        EXPECT_TRUE(eventually([&] { return test_client(port).connected(); }, 10s));
        return p;
    }
    /// Whether the server has exactly one client connection open (the probes are gone).
    static bool one_open(std::uint16_t admin) {
        test_client c(admin);
        if (!c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")) return false;
        const auto r = c.read_response();
        return r && r->body.find("\ntarry_connections_open 1\n") != std::string::npos;
    }
    bool logged(const std::string& text) {
        return eventually([&] { return slurp(log).find(text) != std::string::npos; });
    }
};

TEST_F(OperatorLogTest, AReloadNamesWhatChangedOrSaysNoChange) {
    write("[[route]]\nprefix = \"/a/\"\nrespond = \"hello\"\n");
    auto t = start();
    t->signal(SIGHUP);
    ASSERT_TRUE(logged("reloaded configuration: no change\n")) << slurp(log);

    write("keep_alive_timeout = \"10s\"\naccess_log_format = \"json\"\n"
          "[[route]]\nprefix = \"/b/\"\nrespond = \"hello\"\n");
    t->signal(SIGHUP);
    EXPECT_TRUE(logged("reloaded configuration: keep_alive_timeout 65s -> 10s; "
                       "access_log_format \"common\" -> \"json\"; route \"/a/\" removed; "
                       "route \"/b/\" added\n"))
        << slurp(log);
    EXPECT_EQ(t->stop(), 0);
}

TEST_F(OperatorLogTest, ExitSaysTheSignalAndThatIdleConnectionsFinished) {
    const std::uint16_t admin = free_port();
    write("close_spread_time = \"0s\"\nkeep_alive_min_timeout = \"0s\"\nadmin_listen = "
          "\"127.0.0.1:" +
          std::to_string(admin) + "\"\n");
    auto t = start();
    test_client idle(port);
    ASSERT_TRUE(idle.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(idle.read_response());
    ASSERT_TRUE(eventually([&] { return one_open(admin); }));
    EXPECT_EQ(t->stop(), 0);
    EXPECT_NE(slurp(log).find("exit (SIGTERM): 1 connection(s) open at the stop: 1 finished; "
                              "drained in "),
              std::string::npos)
        << slurp(log);
}

TEST_F(OperatorLogTest, ExitCountsTheConnectionsClosedAtDrainTimeout) {
    const std::uint16_t admin = free_port();
    write("drain_timeout = \"300ms\"\nadmin_listen = \"127.0.0.1:" + std::to_string(admin) +
          "\"\n");
    auto t = start();
    test_client slow(port);
    ASSERT_TRUE(slow.send("GET / HTTP/1.1\r\nHost: t\r\n")); // and never the end of the head
    // Accepted and reading: the stop finds it open.
    ASSERT_TRUE(eventually([&] { return one_open(admin); }));
    t->signal(SIGINT);
    EXPECT_EQ(t->wait(), 0);
    EXPECT_NE(slurp(log).find("exit (SIGINT): 1 connection(s) open at the stop: 0 finished, 1 "
                              "closed at drain_timeout (300ms)"),
              std::string::npos)
        << slurp(log);
}

} // namespace
} // namespace tarry::test

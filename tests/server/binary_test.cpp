// The tarry binary as users run it: exit statuses, one-line config errors, signals.
#include "test_client.hpp"

#include <tarry/server/config.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <thread>

namespace tarry::test {
namespace {

struct result {
    int status = -1;
    std::string output;
};

/// Runs the binary with `args`, capturing stdout and stderr.
result run_tarry(const std::string& args) {
    const std::string cmd = std::string(TARRY_BINARY) + " " + args + " 2>&1";
    result r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        r.output.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

std::filesystem::path write_file(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("tarry_bin_" + std::to_string(::getpid()) + "_" + name);
    std::ofstream(path) << text;
    return path;
}

TEST(BinaryTest, VersionAndHelp) {
    auto v = run_tarry("--version");
    EXPECT_EQ(v.status, 0);
    EXPECT_NE(v.output.find("tarry "), std::string::npos);
    auto h = run_tarry("--help");
    EXPECT_EQ(h.status, 0);
    EXPECT_NE(h.output.find("--keep-alive-timeout"), std::string::npos);
}

// Roff writes a dash as "\-".
std::string unescape_roff(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 2, "\\-") == 0) {
            out += '-';
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

TEST(BinaryTest, ManPrintsTheManualNamingEveryKeyAndFlag) {
    auto r = run_tarry("--man");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.output.rfind(".TH TARRY 8 ", 0), 0U) << r.output.substr(0, 80);
    const std::string text = unescape_roff(r.output);
    for (const server::setting& s : server::settings()) {
        if (!s.flag.empty()) {
            EXPECT_NE(text.find("\\fB" + std::string(s.flag) + "\\fR"), std::string::npos)
                << s.flag;
        }
        if (!s.key.empty()) {
            EXPECT_NE(text.find("\\fB" + std::string(s.key) + "\\fR"), std::string::npos) << s.key;
        }
    }
    for (const server::route_setting& s : server::route_settings())
        EXPECT_NE(text.find("\\fB" + std::string(s.key) + "\\fR"), std::string::npos) << s.key;
    for (const server::upstream_setting& s : server::upstream_settings())
        EXPECT_NE(text.find("\\fB" + std::string(s.key) + "\\fR"), std::string::npos) << s.key;
    // Hidden from --help, which is for running the server.
    EXPECT_EQ(run_tarry("--help").output.find("--man"), std::string::npos);
}

TEST(BinaryTest, ManPageIsCleanRoff) {
    if (!std::filesystem::exists("/usr/bin/groff")) GTEST_SKIP() << "groff is not installed";
    // -ww: every warning; -z: no output. Anything printed is a roff problem.
    const std::string cmd = std::string(TARRY_BINARY) + " --man | /usr/bin/groff -man -ww -z 2>&1";
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    EXPECT_EQ(::pclose(p), 0);
    EXPECT_EQ(out, "");
}

TEST(BinaryTest, ProxyConflictExitsTwo) {
    auto r = run_tarry("--check-config --proxy 127.0.0.1:3000 --docroot /srv");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.output, "tarry: --proxy: conflicts with docroot, which also answers \"/\"\n");
    EXPECT_EQ(run_tarry("--check-config --proxy 127.0.0.1:3000").status, 0);
}

TEST(BinaryTest, BadFlagValueExitsTwoNamingTheFlag) {
    auto r = run_tarry("--keep-alive-timeout 65");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("--keep-alive-timeout"), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(BinaryTest, UnknownFlagExitsTwo) {
    auto r = run_tarry("--keepalive 5s");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("--keepalive"), std::string::npos) << r.output;
}

TEST(BinaryTest, BadConfigFileNamesKeyAndLine) {
    const auto f = write_file("bad.toml", "# tarry\nworkers = 1\nheader_timeout = \"sixty\"\n");
    auto r = run_tarry("--check-config --config " + f.string());
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find(":3:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("header_timeout"), std::string::npos) << r.output;
    std::filesystem::remove(f);
}

TEST(BinaryTest, UnknownKeyInConfigFile) {
    const auto f = write_file("unknown.toml", "keepalive_timeout = \"5s\"\n");
    auto r = run_tarry("--config " + f.string());
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.output.find("keepalive_timeout"), std::string::npos) << r.output;
    std::filesystem::remove(f);
}

TEST(BinaryTest, CheckConfigAcceptsTheExample) {
    auto r = run_tarry("--check-config --config " + std::string(TARRY_EXAMPLE_CONFIG));
    EXPECT_EQ(r.status, 0) << r.output;
}

TEST(BinaryTest, SigtermWithARequestInFlightAnswersItAndExitsZero) {
    const std::uint16_t port = free_port();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const std::string listen = "127.0.0.1:" + std::to_string(port);
        ::execl(TARRY_BINARY, TARRY_BINARY, "--listen", listen.c_str(), "--workers", "1",
                "--log-level", "warn", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    std::unique_ptr<test_client> c;
    for (int i = 0; i < 200; ++i) { // up to 10 s for the child to listen
        c = std::make_unique<test_client>(port);
        if (c->connected()) break;
        std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(c && c->connected());
    ASSERT_TRUE(c->send("GET / HTTP/1.1\r\nHost: t\r\n"));
    std::this_thread::sleep_for(100ms);
    ::kill(pid, SIGTERM);
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(c->send("\r\n"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has("Connection: close"));
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);
}

} // namespace
} // namespace tarry::test

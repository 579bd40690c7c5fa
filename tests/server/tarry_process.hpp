#pragma once

// The tarry binary as a child process, for tests of what users do with it: exit statuses,
// signals, sockets handed over by systemd.
#include "child_process.hpp"
#include "log_file.hpp"
#include "test_client.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

namespace tarry::test {

/// A fresh directory for one test's files, removed after it.
class scratch_dir {
public:
    explicit scratch_dir(const std::string& name)
        : path_(std::filesystem::temp_directory_path() /
                ("tarry_" + name + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;
    ~scratch_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    [[nodiscard]] std::filesystem::path operator/(const std::string& name) const {
        return path_ / name;
    }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

/// Runs the binary with `args` (through the shell), capturing stdout and stderr.
inline run_result run_tarry(const std::string& args) {
    return run_shell(std::string(TARRY_BINARY) + " " + args);
}

/// How to start it besides its arguments.
struct launch_options {
    bool listen = true;   ///< add --listen 127.0.0.1:PORT (last) on a free port, and wait for it
    int pass_socket = -1; ///< hand this listening socket over as systemd does (fd 3, LISTEN_FDS)
    std::vector<std::string> wrapper; ///< run tarry through this program (argv before tarry's)
    std::string output;               ///< file for stdout and stderr; empty: inherited
};

/// tarry as a child process (on a free port unless told otherwise), stopped with SIGTERM and
/// waited for when destroyed.
class tarry_process {
public:
    explicit tarry_process(std::vector<std::string> args, launch_options opts = {})
        : port_(opts.listen ? free_port() : 0),
          child_(command(std::move(args), opts, port_), child_options_of(opts)) {
        if (opts.listen) eventually([&] { return test_client(port_).connected(); }, 10s);
    }

    /// SIGTERM, then the exit status (-1 if it did not exit normally).
    int stop() { return child_.stop(); }
    /// Waits for it to exit by itself: the exit status (-1 if it did not exit normally).
    int wait() { return child_.wait(); }
    [[nodiscard]] pid_t pid() const noexcept { return child_.pid(); }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] child_process& process() noexcept { return child_; }

private:
    static std::vector<std::string> command(std::vector<std::string> args,
                                            const launch_options& opts, std::uint16_t port) {
        // After the caller's: the listeners open in order, so once this one takes a connection
        // every address the caller gave listens too (a test connects to its own at once).
        if (opts.listen) {
            args.emplace_back("--listen");
            args.push_back("127.0.0.1:" + std::to_string(port));
        }
        args.insert(args.begin(), {"--log-level", "warn"});
        args.insert(args.begin(), TARRY_BINARY);
        args.insert(args.begin(), opts.wrapper.begin(), opts.wrapper.end());
        return args;
    }

    static child_options child_options_of(const launch_options& opts) {
        child_options o;
        o.output = opts.output;
        o.pass_socket = opts.pass_socket;
        return o;
    }

    std::uint16_t port_;
    child_process child_;
};

} // namespace tarry::test

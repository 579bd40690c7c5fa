#pragma once

// A program as a child process of a test: the tarry binary, a Node.js backend, HAProxy, an
// example. One fork and exec for all of them, so that every test starts, signals and reaps its
// children the same way, and none outlives its test.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tarry::test {

/// How to start a child besides its argv.
struct child_options {
    /// File for its stdout and stderr (appended to); empty: inherited (stdout piped below).
    std::string output;
    /// Its stdout into a pipe that read_line() reads (a backend that prints its port).
    bool pipe_stdout = false;
    /// A listening socket handed over as systemd does (descriptor 3, LISTEN_FDS=1).
    int pass_socket = -1;
    /// Its RLIMIT_NOFILE, soft and hard; 0 keeps the test's.
    rlim_t nofile = 0;
    /// What stop() and the destructor send.
    int stop_signal = SIGTERM;

    /// A test's backend application: prints its port on stdout, killed when the test ends.
    static child_options backend() {
        child_options o;
        o.pipe_stdout = true;
        o.stop_signal = SIGKILL;
        return o;
    }
};

/// A child process running argv (argv[0] looked up in PATH), stopped with its stop signal and
/// reaped when destroyed. An exec that fails ends the child with status 127.
class child_process {
public:
    using steady = std::chrono::steady_clock;

    explicit child_process(std::vector<std::string> argv, child_options opts = {})
        : stop_signal_(opts.stop_signal) {
        // Everything the child needs is built here: between fork and exec a process with
        // threads may only make async-signal-safe calls (no allocation).
        std::vector<char*> args;
        for (auto& a : argv)
            args.push_back(a.data());
        args.push_back(nullptr);
        std::vector<std::string> env_extra;
        std::string listen_pid;
        if (opts.pass_socket >= 0) {
            env_extra.emplace_back("LISTEN_FDS=1");
            listen_pid = "LISTEN_PID=" + std::string(20, '\0');
        }
        std::vector<char*> env;
        for (char** e = environ; *e != nullptr; ++e)
            if (opts.pass_socket < 0 || (std::strncmp(*e, "LISTEN_FDS=", 11) != 0 &&
                                         std::strncmp(*e, "LISTEN_PID=", 11) != 0))
                env.push_back(*e);
        for (auto& e : env_extra)
            env.push_back(e.data());
        if (!listen_pid.empty()) env.push_back(listen_pid.data());
        env.push_back(nullptr);
        int out[2] = {-1, -1};
        if (opts.pipe_stdout && ::pipe2(out, O_CLOEXEC) != 0) return;

        pid_ = ::fork();
        if (pid_ == 0) {
            if (opts.pipe_stdout) ::dup2(out[1], STDOUT_FILENO);
            if (!opts.output.empty()) {
                const int f = ::open(opts.output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
                if (f >= 0) {
                    ::dup2(f, STDOUT_FILENO);
                    ::dup2(f, STDERR_FILENO);
                }
            }
            if (opts.pass_socket >= 0) {
                // sd_listen_fds(3): the sockets from descriptor 3 on, for this very process.
                if (opts.pass_socket != 3) {
                    ::dup2(opts.pass_socket, 3);
                    ::close(opts.pass_socket);
                } else {
                    ::fcntl(3, F_SETFD, 0);
                }
                write_decimal(listen_pid.data() + 11, ::getpid());
            }
            if (opts.nofile != 0) {
                const rlimit rl{opts.nofile, opts.nofile};
                ::setrlimit(RLIMIT_NOFILE, &rl);
            }
            ::execvpe(args.front(), args.data(), env.data());
            ::_exit(127);
        }
        if (opts.pipe_stdout) {
            ::close(out[1]);
            if (pid_ > 0)
                stdout_ = out[0];
            else
                ::close(out[0]);
        }
    }
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    ~child_process() {
        stop();
        if (stdout_ >= 0) ::close(stdout_);
    }

    [[nodiscard]] bool started() const noexcept { return pid_ > 0 || status_ != no_status; }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }

    /// Sends `sig`, if it still runs.
    void signal(int sig) const {
        if (pid_ > 0) ::kill(pid_, sig);
    }
    /// Its stop signal, then its exit code (-1 if it did not exit normally).
    int stop() {
        signal(stop_signal_);
        return wait();
    }
    /// Waits for it to end: its exit code (-1 if it did not exit normally).
    int wait() {
        if (pid_ > 0) {
            int st = 0;
            if (::waitpid(pid_, &st, 0) == pid_) status_ = st;
            pid_ = -1;
        }
        return exit_code();
    }
    /// Whether it ended within `limit` (polled: no signal handler of the test's is needed).
    bool wait_for(steady::duration limit) {
        const auto deadline = steady::now() + limit;
        for (;;) {
            if (!running()) return true;
            if (steady::now() > deadline) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
    /// Whether it still runs (reaping it if it has ended).
    bool running() {
        if (pid_ <= 0) return false;
        int st = 0;
        if (::waitpid(pid_, &st, WNOHANG) != pid_) return true;
        status_ = st;
        pid_ = -1;
        return false;
    }
    /// Once it has ended: its exit code, -1 if a signal ended it.
    [[nodiscard]] int exit_code() const noexcept {
        return status_ != no_status && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
    }
    /// Once it has ended: the signal that ended it, 0 if none did.
    [[nodiscard]] int end_signal() const noexcept {
        return status_ != no_status && WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
    }

    /// The next line of its piped stdout, without the newline; nullopt at the end of its
    /// output or after `timeout`.
    std::optional<std::string> read_line(steady::duration timeout = std::chrono::seconds(10)) {
        const auto deadline = steady::now() + timeout;
        std::size_t eol;
        while ((eol = out_.find('\n')) == std::string::npos) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
            if (stdout_ < 0 || left.count() <= 0) return std::nullopt;
            pollfd p{stdout_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
            char buf[256];
            const ssize_t n = ::read(stdout_, buf, sizeof buf);
            if (n <= 0) return std::nullopt;
            out_.append(buf, static_cast<std::size_t>(n));
        }
        std::string line = out_.substr(0, eol);
        out_.erase(0, eol + 1);
        return line;
    }
    /// What it printed that read_line() has not returned (for a failure's message).
    [[nodiscard]] const std::string& unread_output() const noexcept { return out_; }

private:
    static constexpr int no_status = -1;

    static void write_decimal(char* to, pid_t v) noexcept {
        char digits[20];
        int n = 0;
        do {
            digits[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v > 0);
        while (n > 0)
            *to++ = digits[--n];
        *to = '\0';
    }

    pid_t pid_ = -1;
    int status_ = no_status;
    int stop_signal_;
    int stdout_ = -1;
    std::string out_;
};

struct run_result {
    int status = -1;
    std::string output;
};

/// Runs a shell command and waits for it, capturing its stdout and stderr and its exit status
/// (-1: it did not exit normally): a client (curl, a Python script) whose whole output the test
/// reads once it is done.
inline run_result run_shell(const std::string& command) {
    const std::string cmd = "(" + command + ") 2>&1";
    run_result r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        r.output.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

} // namespace tarry::test

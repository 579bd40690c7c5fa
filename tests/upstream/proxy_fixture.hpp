#pragma once

// The server in-process on 127.0.0.1:0 with the proxy mounted at "/", in front of a backend
// (a Node.js child process or a thread of the test). Every wait is bounded.
#include "server/memory.hpp"
#include "server/server_fixture.hpp"

#include <tarry/server/server.hpp>
#include <tarry/upstream/proxy_handler.hpp>

#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <memory>
#include <string>
#include <thread>

namespace tarry::test {

/// A Node.js backend (tests/upstream/backend.js) as a child process; killed when destroyed.
class node_backend {
public:
    /// `script`: the application (backend.js, or ws_backend.js for WebSocket tests).
    explicit node_backend(int keep_alive_ms = 5000, const std::string& unix_path = {},
                          const char* script = TARRY_BACKEND_JS) {
        int out[2];
        if (::pipe(out) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(out[1], 1);
            ::close(out[0]);
            ::close(out[1]);
            const std::string ka = std::to_string(keep_alive_ms);
            if (unix_path.empty())
                ::execlp("node", "node", script, ka.c_str(), static_cast<char*>(nullptr));
            else
                ::execlp("node", "node", script, ka.c_str(), unix_path.c_str(),
                         static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(out[1]);
        std::string line;
        const auto deadline = steady::now() + 10s;
        while (line.find('\n') == std::string::npos && steady::now() < deadline) {
            pollfd p{out[0], POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            char buf[64];
            const ssize_t n = ::read(out[0], buf, sizeof buf);
            if (n <= 0) break;
            line.append(buf, static_cast<std::size_t>(n));
        }
        ::close(out[0]);
        if (line.find('\n') != std::string::npos) {
            port_ = static_cast<std::uint16_t>(std::stoi(line));
            started_ = true;
        }
    }
    node_backend(const node_backend&) = delete;
    node_backend& operator=(const node_backend&) = delete;
    ~node_backend() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] bool started() const noexcept { return started_; }

private:
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
    bool started_ = false;
};

/// The server in-process (tests/server/server_fixture.hpp) with every request proxied to `ups`.
class ProxyTest : public ServerTest {
protected:
    upstream::upstream_settings ups;
    std::shared_ptr<upstream::proxy_handler> proxy; ///< the one worker's

    ProxyTest() { cfg.max_body_bytes = std::size_t{1} << 30; }

    void start() {
        custom.push_back({"/", [this](server::handler_context& h) {
                              proxy = upstream::make_proxy_handler(h.io, h.poll, h.registry, ups,
                                                                   h.upstreams);
                              return proxy;
                          }});
        ServerTest::start();
    }

    upstream::upstream_metrics& metrics(std::size_t server = 0) {
        return proxy->pools().at(server)->metrics();
    }

    /// One GET on a fresh connection.
    std::optional<response> get_once(const std::string& target, steady::duration t = 5s) {
        test_client c(port);
        if (!c.send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n")) return std::nullopt;
        return c.read_response(t);
    }
};

} // namespace tarry::test

#pragma once

// The server in-process on 127.0.0.1:0 with the proxy mounted at "/", in front of a backend
// (a Node.js child process or a thread of the test). Every wait is bounded.
#include "child_process.hpp"
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
                          const char* script = TARRY_BACKEND_JS)
        : child_(command(keep_alive_ms, unix_path, script), child_options::backend()) {
        // It prints its port once it listens.
        if (const auto line = child_.read_line()) {
            port_ = static_cast<std::uint16_t>(std::stoi(*line));
            started_ = true;
        }
    }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] bool started() const noexcept { return started_; }

private:
    static std::vector<std::string> command(int keep_alive_ms, const std::string& unix_path,
                                            const char* script) {
        std::vector<std::string> argv{"node", script, std::to_string(keep_alive_ms)};
        if (!unix_path.empty()) argv.push_back(unix_path);
        return argv;
    }

    child_process child_;
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

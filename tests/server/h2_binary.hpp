#pragma once

// The tarry binary with HTTP/2 on, from a configuration file, and the Node.js application
// behind it (tests/server/h2_app.js), for the tests that drive both with real HTTP/2 clients
// (h2_interop_test, h2_sequences_test).
#include "child_process.hpp"
#include "log_file.hpp"
#include "tarry_process.hpp"
#include "test_certs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace tarry::test {

namespace fs = std::filesystem;

inline void write_file(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

inline bool has(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

/// The number after `"key":` in a line of JSON, -1 when absent.
inline long json_number(const std::string& json, const std::string& key) {
    const std::string at = "\"" + key + "\":";
    const auto p = json.find(at);
    if (p == std::string::npos) return -1;
    return std::stol(json.substr(p + at.size()));
}

/// How many times `what` occurs in `text`.
inline std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size()))
        ++n;
    return n;
}

/// tests/server/h2_app.js as a child process: holds /hold answers until release(), counts how
/// its requests ended and its sockets.
class node_app {
public:
    node_app() : child_({"node", TARRY_H2_APP_JS}, child_options::backend()) {
        if (const auto line = child_.read_line())
            port_ = static_cast<std::uint16_t>(std::stoi(*line));
    }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// Its counters as JSON, asked directly (not through tarry).
    [[nodiscard]] std::string stats() const { return ask("/stats"); }
    [[nodiscard]] long stat(const std::string& key) const { return json_number(stats(), key); }
    /// Ends every held answer.
    void release() const { (void)ask("/release"); }

private:
    [[nodiscard]] std::string ask(const std::string& path) const {
        return run_shell("curl -sS --max-time 10 http://127.0.0.1:" + std::to_string(port_) + path)
            .output;
    }

    child_process child_;
    std::uint16_t port_ = 0;
};

/// tarry from a configuration file: a plain listener, a TLS one and the admin listener on free
/// ports, `http2 = true` and the caller's lines after them. reload() rewrites the file and sends
/// SIGHUP; the destructor stops it and expects exit status 0.
class h2_tarry {
public:
    std::uint16_t port = free_port();
    std::uint16_t tls_port = free_port();
    std::uint16_t admin_port = free_port();

    /// `plain_port`: the plain listener's port when it must be that one (a restart in place).
    h2_tarry(const fs::path& dir, const std::string& config, std::uint16_t plain_port = 0)
        : config_(dir / "tarry.toml"), log_(dir / "tarry.log") {
        if (plain_port != 0) port = plain_port;
        write_file(config_, head() + config);
        launch_options o;
        o.listen = false;
        o.output = log_.string();
        process_.emplace(std::vector<std::string>{"--config", config_.string()}, o);
        ready_ = eventually([&] { return test_client(port).connected(); }, 20s) &&
                 eventually([&] { return test_client(tls_port).connected(); }, 20s);
    }
    h2_tarry(const h2_tarry&) = delete;
    h2_tarry& operator=(const h2_tarry&) = delete;
    /// Stops it (if the test has not) and expects a clean exit: under the sanitizers a report
    /// makes it non-zero.
    ~h2_tarry() { EXPECT_EQ(process_->stop(), 0) << log(); }

    [[nodiscard]] bool ready() const noexcept { return ready_; }
    [[nodiscard]] tarry_process& process() { return *process_; }
    /// What it wrote to stdout and stderr (warnings, sanitizer reports).
    [[nodiscard]] std::string log() const { return slurp(log_); }

    /// The configuration replaced, then SIGHUP.
    void reload(const std::string& config) {
        write_file(config_, head() + config);
        process_->process().signal(SIGHUP);
    }

    [[nodiscard]] std::string metrics() const {
        return run_shell("curl -sS --max-time 10 http://127.0.0.1:" + std::to_string(admin_port) +
                         "/metrics")
            .output;
    }

    [[nodiscard]] std::string url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(port) + path;
    }
    [[nodiscard]] std::string tls_url(const std::string& path) const {
        return "https://localhost:" + std::to_string(tls_port) + path;
    }

private:
    [[nodiscard]] std::string head() const {
        return "listen = [\"127.0.0.1:" + std::to_string(port) + "\"]\n" +
               "tls_listen = [\"127.0.0.1:" + std::to_string(tls_port) + "\"]\n" +
               "admin_listen = \"127.0.0.1:" + std::to_string(admin_port) + "\"\n" +
               "tls_certificate = \"" + (test_certs() / "default.pem").string() + "\"\n" +
               "tls_certificate_key = \"" + (test_certs() / "default.key").string() + "\"\n" +
               "http2 = true\n";
    }

    fs::path config_;
    fs::path log_;
    std::optional<tarry_process> process_;
    bool ready_ = false;
};

/// A route table for the application: "/app/" proxied to it (the prefix taken off), the rest
/// `rest` (a docroot, or the built-in answer when empty).
inline std::string app_routes(const node_app& app, const fs::path& docroot = {}) {
    std::string routes = "[upstream.app]\nservers = [\"127.0.0.1:" + std::to_string(app.port()) +
                         "\"]\n"
                         "[[route]]\nprefix = \"/app/\"\nupstream = \"app\"\nstrip_prefix = true\n";
    if (docroot.empty())
        routes += "[[route]]\nprefix = \"/\"\nrespond = \"hello\"\n";
    else
        routes += "[[route]]\nprefix = \"/\"\ndocroot = \"" + docroot.string() + "\"\n";
    return routes;
}

} // namespace tarry::test

#pragma once

// The server in-process on 127.0.0.1:0, one worker, with test handlers mountable by route.
#include "test_client.hpp"
#include "test_handlers.hpp"

#include <tarry/server/server.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tarry::test {

inline std::int64_t closes(server::server& s, server::close_reason r) {
    std::int64_t n = 0;
    for (auto& w : s.workers())
        n += w->metrics().closes[static_cast<std::size_t>(r)].get();
    return n;
}

/// Connections in phase `p` now, over every worker (a request's head half read: `header`).
inline std::int64_t in_phase(server::server& s, server::conn_phase p) {
    std::int64_t n = 0;
    for (auto& w : s.workers())
        n += w->metrics().phases[static_cast<std::size_t>(p)].get();
    return n;
}

/// The process at its open-file limit but for `spare` descriptors, until destroyed: every
/// number up to the limit is taken (holes filled with /dev/null) but the last `spare`. The
/// test's next sockets take those; the server's next accept then finds none (EMFILE).
class descriptor_limit {
public:
    explicit descriptor_limit(int spare = 1) {
        int highest = 0;
        for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
            highest = std::max(highest, std::stoi(e.path().filename().string()));
        for (;;) {
            const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (fd < 0) return;
            fillers_.push_back(fd);
            if (fd > highest) break;
        }
        ::getrlimit(RLIMIT_NOFILE, &old_);
        rlimit low = old_;
        low.rlim_cur = static_cast<rlim_t>(fillers_.back()) + 1;
        ::setrlimit(RLIMIT_NOFILE, &low);
        for (int i = 0; i < spare && !fillers_.empty(); ++i) {
            ::close(fillers_.back());
            fillers_.pop_back();
        }
    }
    descriptor_limit(const descriptor_limit&) = delete;
    descriptor_limit& operator=(const descriptor_limit&) = delete;
    ~descriptor_limit() {
        ::setrlimit(RLIMIT_NOFILE, &old_);
        for (const int fd : fillers_)
            ::close(fd);
    }

private:
    std::vector<int> fillers_;
    rlimit old_{};
};

class ServerTest : public ::testing::Test {
protected:
    server::config cfg;
    std::vector<server::custom_route> custom; ///< routes to test handlers, added to cfg's
    handler_counts counts;
    std::unique_ptr<server::server> srv;
    std::thread runner;
    std::uint16_t port = 0;

    ServerTest() {
        cfg.listen = {{"127.0.0.1", 0}};
        cfg.workers = 1;
        cfg.drain_timeout = 5s;
    }

    void start() {
        srv = std::make_unique<server::server>(cfg, std::vector<std::string>{}, custom);
        port = srv->endpoints().at(0).port();
        runner = std::thread([this] { srv->run(); });
    }

    void TearDown() override {
        if (!srv) return;
        srv->stop();
        runner.join();
    }
};

/// The server started from a configuration file (`tarry --config FILE --workers 1`), the file a
/// reload re-reads.
class ServerFromFileTest : public ::testing::Test {
protected:
    std::filesystem::path file = std::filesystem::temp_directory_path() /
                                 ("tarry_config_" + std::to_string(::getpid()) + ".toml");
    std::unique_ptr<server::server> srv;
    std::thread runner;

    void write(const std::string& text) { std::ofstream(file) << text; }

    void start() {
        std::vector<std::string> args{"tarry", "--config", file.string(), "--workers", "1"};
        std::vector<const char*> argv;
        for (const auto& a : args)
            argv.push_back(a.c_str());
        auto cl = server::parse_command_line(static_cast<int>(argv.size()), argv.data());
        srv = std::make_unique<server::server>(cl.cfg, args);
        runner = std::thread([this] { srv->run(); });
    }

    void TearDown() override {
        if (srv) {
            srv->stop();
            runner.join();
        }
        std::filesystem::remove(file);
    }
};

} // namespace tarry::test

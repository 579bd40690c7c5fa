#pragma once

// The server in-process on 127.0.0.1:0, one worker, with test handlers mountable by route.
#include "test_client.hpp"
#include "test_handlers.hpp"

#include <tarry/server/server.hpp>

#include <gtest/gtest.h>

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

    /// Polls `pred` until it holds or a generous deadline passes.
    template <class Pred> static bool eventually(Pred pred, steady::duration limit = 5s) {
        const auto deadline = steady::now() + limit;
        while (!pred()) {
            if (steady::now() > deadline) return false;
            std::this_thread::sleep_for(5ms);
        }
        return true;
    }
};

} // namespace tarry::test

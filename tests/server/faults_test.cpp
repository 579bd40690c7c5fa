// Clients that misbehave at the worst moment. After each, the server is still serving, and
// every connection and descriptor it had is gone.
#include "test_client.hpp"

#include <tarry/server/server.hpp>

#include <gtest/gtest.h>

#include <dirent.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace tarry::test {
namespace {

using server::close_reason;

int open_fds() {
    int n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d) != nullptr)
            ++n;
        ::closedir(d);
    }
    return n;
}

void reset(test_client& c) {
    linger l{1, 0}; // close with RST
    ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

class FaultsTest : public ::testing::Test {
protected:
    std::filesystem::path root =
        std::filesystem::temp_directory_path() / ("tarry_faults_" + std::to_string(::getpid()));
    server::config cfg;
    std::unique_ptr<server::server> srv;
    std::thread runner;
    std::uint16_t port = 0;

    FaultsTest() {
        std::filesystem::create_directories(root);
        std::ofstream(root / "big") << std::string(16 << 20, 'x');
        std::ofstream(root / "small") << "small";
        cfg.listen = {{"127.0.0.1", 0}};
        cfg.workers = 1;
        cfg.docroot = root;
        cfg.keep_alive_timeout = 200ms;
        cfg.send_timeout = 500ms;
    }
    ~FaultsTest() override { std::filesystem::remove_all(root); }

    void SetUp() override {
        srv = std::make_unique<server::server>(cfg);
        port = srv->endpoints().at(0).port();
        runner = std::thread([this] { srv->run(); });
    }
    void TearDown() override {
        srv->stop();
        runner.join();
    }

    std::int64_t open_connections() { return srv->workers()[0]->metrics().open.get(); }

    void wait_all_closed() {
        EXPECT_TRUE(eventually([&] { return open_connections() == 0; }, 10s)) << phases();
    }

    std::string phases() {
        std::string r = "phases:";
        for (auto& p : srv->workers()[0]->metrics().phases)
            r += " " + std::to_string(p.get());
        return r;
    }

    /// Waits for the server to have no connection left, then checks it still answers.
    void expect_recovered() {
        wait_all_closed();
        test_client c(port);
        ASSERT_TRUE(c.send(get));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 404); // "/" is not a file in this docroot
    }
};

TEST_F(FaultsTest, ResetInTheMiddleOfARequest) {
    {
        test_client c(port);
        ASSERT_TRUE(c.send("GET /small HTTP/1.1\r\nHost: t\r\nX-Half: "));
        constexpr auto header = static_cast<std::size_t>(server::conn_phase::header);
        ASSERT_TRUE(
            eventually([&] { return srv->workers()[0]->metrics().phases[header].get() == 1; }));
        reset(c);
    }
    expect_recovered();
    EXPECT_EQ(
        srv->workers()[0]->metrics().closes[static_cast<std::size_t>(close_reason::error)].get(),
        0);
}

TEST_F(FaultsTest, ResetInTheMiddleOfAResponse) {
    {
        test_client c(port, 4096);
        ASSERT_TRUE(c.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n"));
        char buf[1024];
        ASSERT_GT(::recv(c.fd(), buf, sizeof buf, 0), 0);
        // By design: a moment for the rest to fill this small window, so that the server waits
        // for room when the reset comes.
        std::this_thread::sleep_for(50ms);
        reset(c);
    }
    expect_recovered();
}

TEST_F(FaultsTest, HalfClosedClientStillGetsItsResponses) {
    test_client c(port);
    ASSERT_TRUE(
        c.send("GET /small HTTP/1.1\r\nHost: t\r\n\r\nGET /small HTTP/1.1\r\nHost: t\r\n\r\n"));
    ::shutdown(c.fd(), SHUT_WR);
    for (int i = 0; i < 2; ++i) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->body, "small");
    }
    EXPECT_TRUE(c.wait_closed());
    expect_recovered();
}

TEST_F(FaultsTest, ClientClosesWithPipelinedResponsesQueued) {
    {
        test_client c(port, 4096);
        std::string many;
        for (int i = 0; i < 200; ++i)
            many += "GET /big HTTP/1.1\r\nHost: t\r\n\r\n";
        ASSERT_TRUE(c.send(many));
        // Answering has begun.
        ASSERT_TRUE(c.wait_for("\r\n\r\n"));
    } // closed with requests unread and responses unsent
    expect_recovered();
}

TEST_F(FaultsTest, DescriptorsReturnToWhereTheyStarted) {
    {
        // The files handler keeps the files it serves open for a while (its open-file cache):
        // open them first, so that they count among the descriptors to return to.
        test_client warm(port);
        warm.send("GET /small HTTP/1.1\r\nHost: t\r\n\r\n"
                  "GET /big HTTP/1.1\r\nHost: t\r\nRange: bytes=0-0\r\n\r\n");
        warm.read_response();
        warm.read_response();
    }
    wait_all_closed();
    const int before = open_fds();
    for (int round = 0; round < 20; ++round) {
        test_client ok(port);
        ok.send("GET /small HTTP/1.1\r\nHost: t\r\n\r\n");
        test_client bad(port);
        bad.send("GET / HTTP/9.9\r\n\r\n");
        test_client partial(port);
        partial.send("GET /small HTTP/1.1\r\n");
        reset(partial);
        test_client big(port, 4096);
        big.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
        ok.read_response();
        bad.read_response();
    }
    wait_all_closed();
    EXPECT_EQ(open_fds(), before);
    expect_recovered();
}

} // namespace
} // namespace tarry::test

// One upstream connection on the worker's edge-triggered poller, against a listener of the
// test's own: what it reports, when (never from within its own calls), and that it may be freed
// while the poller's batch still holds its events.
#include <tarry/upstream/upstream_connection.hpp>
#include <tarry/upstream/upstream_pool.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace tarry::upstream {
namespace {

using namespace std::chrono_literals;
using boost::asio::ip::tcp;

/// Records what a connection reports; `then` runs after each report.
struct recorder final : connection_user {
    upstream_connection* conn = nullptr;
    std::vector<std::string> said;
    std::string bytes;
    int reads = 0;
    std::function<void()> then;

    void on_connected(const boost::system::error_code& ec) noexcept override {
        said.push_back(ec ? "connect failed" : "connected");
        if (then) then();
    }
    void on_written(const boost::system::error_code& ec) noexcept override {
        said.push_back(ec ? "write failed" : "written");
        if (then) then();
    }
    void on_read(const boost::system::error_code& ec, std::size_t n) noexcept override {
        ++reads;
        if (ec == boost::asio::error::eof)
            said.push_back("eof");
        else if (ec)
            said.push_back("read failed");
        else
            bytes.append(conn->buffer(), n);
        if (then) then();
    }
    void on_timeout() noexcept override { said.push_back("timeout"); }
};

class UpstreamConnectionTest : public ::testing::Test {
protected:
    boost::asio::io_context io;
    net::poller poller{io};
    timeouts::timeout_registry registry{io};
    tcp::acceptor acceptor{io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)};
    upstream_settings settings;
    std::shared_ptr<upstream_pool> pool;

    UpstreamConnectionTest() {
        poller.start();
        settings.servers = {
            server_address::parse("127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()))};
        pool = std::make_shared<upstream_pool>(io, poller, registry, settings, settings.servers[0]);
    }

    void run_ready() {
        io.restart();
        io.poll();
    }
    /// Runs the loop until `done` holds (2 s at most).
    bool until(const std::function<bool()>& done) {
        for (int i = 0; i < 2000 && !done(); ++i) {
            run_ready();
            if (!done()) std::this_thread::sleep_for(1ms);
        }
        return done();
    }

    /// A connection of the pool, connected, with `r` as its user; `peer` is the upstream's side.
    std::shared_ptr<upstream_connection> connected(recorder& r, tcp::socket& peer) {
        auto c = pool->open();
        r.conn = c.get();
        c->set_user(&r);
        c->connect(pool->endpoint());
        acceptor.accept(peer);
        EXPECT_TRUE(until([&] { return !r.said.empty(); }));
        EXPECT_EQ(r.said.at(0), "connected");
        r.said.clear();
        return c;
    }
};

TEST_F(UpstreamConnectionTest, ARefusedConnectIsReportedFromTheLoopNeverFromWithin) {
    tcp::acceptor closed(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    const auto port = closed.local_endpoint().port();
    closed.close();
    recorder r;
    auto c = pool->open();
    r.conn = c.get();
    c->set_user(&r);
    c->connect(server_address::parse("127.0.0.1:" + std::to_string(port)).endpoint);
    EXPECT_TRUE(r.said.empty());
    ASSERT_TRUE(until([&] { return !r.said.empty(); }));
    EXPECT_EQ(r.said, std::vector<std::string>{"connect failed"});
    pool->discard(*c, upstream_close::error);
}

TEST_F(UpstreamConnectionTest, AWriteThatGoesAtOnceSaysSoAndOneThatWaitsEndsInOnWritten) {
    recorder r;
    tcp::socket peer(io);
    auto c = connected(r, peer);
    if (poller.batching()) {
        // In the worker's batch of sends: on_written says it went, once the batch has gone.
        EXPECT_FALSE(c->write("GET / HTTP/1.1\r\n\r\n"));
        EXPECT_TRUE(r.said.empty());
        ASSERT_TRUE(until([&] { return !r.said.empty(); }));
        EXPECT_EQ(r.said, std::vector<std::string>{"written"});
        r.said.clear();
    } else {
        EXPECT_TRUE(c->write("GET / HTTP/1.1\r\n\r\n"));
        EXPECT_TRUE(r.said.empty()); // nothing follows a write that went at once
    }

    // More than the socket buffers hold while the upstream reads nothing: it waits.
    const std::string big(64 << 20, 'x');
    EXPECT_FALSE(c->write(big));
    run_ready();
    EXPECT_TRUE(r.said.empty());
    std::size_t got = 0;
    std::thread reader([&] {
        std::vector<char> b(1 << 20);
        boost::system::error_code ec;
        while (got < big.size() + 18 && !ec)
            got += peer.read_some(boost::asio::buffer(b), ec);
    });
    EXPECT_TRUE(until([&] { return !r.said.empty(); }));
    reader.join();
    EXPECT_EQ(r.said, std::vector<std::string>{"written"});
    EXPECT_EQ(got, big.size() + 18);
    pool->discard(*c, upstream_close::error);
}

TEST_F(UpstreamConnectionTest, BytesWaitingAlreadyAreDeliveredByTheLoopNotByRead) {
    recorder r;
    tcp::socket peer(io);
    auto c = connected(r, peer);
    boost::asio::write(peer, boost::asio::buffer(std::string("hello")));
    ASSERT_TRUE(until([&] { return c->quiet() == false; })); // the edge came, nothing asked yet
    c->read(); // the edge is spent: this read must not wait for another
    EXPECT_EQ(r.reads, 0);
    ASSERT_TRUE(until([&] { return r.reads == 1; }));
    EXPECT_EQ(r.bytes, "hello");

    // Then the upstream's close, as EOF.
    peer.shutdown(tcp::socket::shutdown_send);
    c->read();
    ASSERT_TRUE(until([&] { return r.reads == 2; }));
    EXPECT_EQ(r.said, std::vector<std::string>{"eof"});
    pool->discard(*c, upstream_close::upstream_close);
}

TEST_F(UpstreamConnectionTest, AReadThatFilledWhatItAskedIsStillQuietWhenNothingFollows) {
    recorder r;
    tcp::socket peer(io);
    auto c = connected(r, peer);
    boost::asio::write(peer, boost::asio::buffer(std::string(100, 'r')));
    c->read(100); // exactly what is there: whether more follows is not known from the read
    ASSERT_TRUE(until([&] { return r.reads == 1; }));
    EXPECT_EQ(r.bytes.size(), 100U);
    EXPECT_TRUE(c->quiet()); // it looks: nothing waits, so it may go idle

    // In the pool, a stray byte from the upstream takes it out at once.
    c->set_user(nullptr);
    pool->give_back(std::move(c), 1h, false);
    ASSERT_EQ(pool->idle_count(), 1U);
    boost::asio::write(peer, boost::asio::buffer(std::string("!")));
    EXPECT_TRUE(until([&] { return pool->idle_count() == 0; }));
    EXPECT_EQ(pool->metrics().closes_of(upstream_close::upstream_close), 1);
}

TEST_F(UpstreamConnectionTest, AConnectionFreedWhileTheBatchHoldsItsEventsGetsNoneOfThem) {
    // Two connections whose responses arrive in one poller batch; whichever is told first frees
    // the other (as a client that goes away drops its exchange's connection). Under ASan, an
    // event delivered to the freed one is a use after free.
    recorder r1;
    recorder r2;
    tcp::socket p1(io);
    tcp::socket p2(io);
    auto c1 = connected(r1, p1);
    auto c2 = connected(r2, p2);
    c1->read();
    c2->read();
    int told = 0;
    r1.then = [&] {
        ++told;
        if (c2) {
            pool->discard(*c2, upstream_close::error);
            c2.reset();
        }
    };
    r2.then = [&] {
        ++told;
        if (c1) {
            pool->discard(*c1, upstream_close::error);
            c1.reset();
        }
    };
    boost::asio::write(p1, boost::asio::buffer(std::string("one")));
    boost::asio::write(p2, boost::asio::buffer(std::string("two")));
    std::this_thread::sleep_for(20ms); // both edges are in the epoll set before it is read
    ASSERT_TRUE(until([&] { return told != 0; }));
    run_ready();
    EXPECT_EQ(told, 1);
    EXPECT_EQ((c1 != nullptr) + (c2 != nullptr), 1);
    if (c1) pool->discard(*c1, upstream_close::error);
    if (c2) pool->discard(*c2, upstream_close::error);
}

} // namespace
} // namespace tarry::upstream

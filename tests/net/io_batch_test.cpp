// The worker's batch of sends on socket pairs: every owner's bytes go in one call and each is
// told how its send went; bytes appended after queueing go too; a full socket answers EAGAIN
// with what fitted; an owner taken out (closing) is neither read nor told; owners queued by
// another's news go in a later round of the same go(); and the poller sends its batch at the
// end of an event batch and after handlers posted outside one.
#include <tarry/net/io_batch.hpp>
#include <tarry/net/poller.hpp>

#include "socket_pair.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include <sys/socket.h>
#include <unistd.h>

namespace tarry::net {
namespace {

/// An owner with an output string and a socket, recording what it was told.
struct sender {
    int fd = -1;
    std::string out;
    std::vector<long> told;
    std::vector<std::size_t> told_asked; ///< the size each result is for
    std::function<void(sender&)> then;   ///< run after being told
    bool asked = false;

    sender() = default;
    sender(int f, std::string o) : fd(f), out(std::move(o)) {}

    static io_batch::output pending(void* o) noexcept {
        auto* s = static_cast<sender*>(o);
        s->asked = true;
        return {s->fd, s->out.data(), s->out.size()};
    }
    static void sent(void* o, long result, std::size_t asked) noexcept {
        auto* s = static_cast<sender*>(o);
        s->told.push_back(result);
        s->told_asked.push_back(asked);
        if (s->then) s->then(*s);
    }
    static constexpr io_batch::owner_calls calls{&sender::pending, &sender::sent};
};

TEST(IoBatch, EveryQueuedOwnerSendsInOneCallAndIsToldHowItWent) {
    auto batch = io_batch::open();
    if (!batch) GTEST_SKIP() << "no io_uring on this kernel";
    std::vector<socket_pair> pairs(40);
    std::vector<sender> senders(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        senders[i].fd = pairs[i].fd[0];
        senders[i].out = "response " + std::to_string(i);
        batch->add(&senders[i], sender::calls);
    }
    // Appended after queueing, before the batch goes: read where the bytes are at go().
    senders[7].out += std::string(100000, 'x');
    EXPECT_EQ(batch->go(), 1); // one io_uring_enter for all 40
    EXPECT_TRUE(batch->empty());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        ASSERT_EQ(senders[i].told.size(), 1U) << i;
        if (i == 7) continue;
        EXPECT_EQ(senders[i].told[0], static_cast<long>(senders[i].out.size()));
        EXPECT_EQ(pairs[i].drain(), senders[i].out);
    }
    // More than a unix socket's buffer: what fitted, as send(2) says it.
    EXPECT_GT(senders[7].told[0], 0);
    EXPECT_LE(senders[7].told[0], static_cast<long>(senders[7].out.size()));
}

TEST(IoBatch, AFullSocketAnswersEagainAndAPeerGoneAnswersItsError) {
    auto batch = io_batch::open();
    if (!batch) GTEST_SKIP() << "no io_uring on this kernel";
    socket_pair full;
    const std::string chunk(65536, 'y');
    while (::send(full.fd[0], chunk.data(), chunk.size(), MSG_DONTWAIT) > 0) {
    }
    socket_pair gone;
    ::close(gone.fd[1]);
    gone.fd[1] = -1;
    sender a{full.fd[0], "more"};
    sender b{gone.fd[0], "to nobody"};
    batch->add(&a, sender::calls);
    batch->add(&b, sender::calls);
    batch->go();
    ASSERT_EQ(a.told.size(), 1U);
    EXPECT_EQ(a.told[0], -EAGAIN); // never parked: MSG_DONTWAIT
    ASSERT_EQ(b.told.size(), 1U);
    EXPECT_EQ(b.told[0], -EPIPE); // and no SIGPIPE: MSG_NOSIGNAL
}

TEST(IoBatch, AnOwnerTakenOutIsNeitherReadNorToldEvenByAnEarlierOwnersNews) {
    auto batch = io_batch::open();
    if (!batch) GTEST_SKIP() << "no io_uring on this kernel";
    socket_pair p1;
    socket_pair p2;
    socket_pair p3;
    sender a{p1.fd[0], "a"};
    sender b{p2.fd[0], "b"};
    sender c{p3.fd[0], "c"};
    batch->add(&a, sender::calls);
    batch->add(&b, sender::calls);
    batch->add(&c, sender::calls);
    batch->remove(&b);                            // closed before the batch went
    a.then = [&](sender&) { batch->remove(&c); }; // a's news closes c, whose send went already
    batch->go();
    EXPECT_EQ(a.told, std::vector<long>{1});
    EXPECT_FALSE(b.asked);
    EXPECT_TRUE(b.told.empty());
    EXPECT_EQ(p2.drain(), "");
    EXPECT_TRUE(c.told.empty()); // freed, say: never touched again
}

// An owner told earlier in a round adds to a later owner's output (a proxy's 502 for a client
// whose response was already in the batch): the later owner learns that all it was asked for
// went, not a short send, so it sends the rest instead of waiting for an output edge that a
// socket with room never raises.
TEST(IoBatch, AnOwnerToldItsSendWholeThoughItsOutputGrewSinceItWasAsked) {
    auto batch = io_batch::open();
    if (!batch) GTEST_SKIP() << "no io_uring on this kernel";
    socket_pair p1;
    socket_pair p2;
    sender upstream{p1.fd[0], "POST / HTTP/1.1\r\n"};
    sender client{p2.fd[0], "HTTP/1.1 200 OK\r\n\r\n"};
    const std::size_t first = client.out.size();
    upstream.then = [&](sender&) { client.out += "HTTP/1.1 502 Bad Gateway\r\n\r\n"; };
    batch->add(&upstream, sender::calls);
    batch->add(&client, sender::calls);
    batch->go();
    ASSERT_EQ(client.told.size(), 1U);
    EXPECT_EQ(client.told[0], static_cast<long>(first));
    EXPECT_EQ(client.told_asked[0], first); // whole: result == asked, though out is longer now
    EXPECT_GT(client.out.size(), first);
    EXPECT_EQ(p2.drain(), "HTTP/1.1 200 OK\r\n\r\n");
}

TEST(IoBatch, OwnersQueuedByNewsGoInALaterRoundOfTheSameGo) {
    auto batch = io_batch::open();
    if (!batch) GTEST_SKIP() << "no io_uring on this kernel";
    socket_pair p;
    sender a{p.fd[0], "first "};
    int rounds = 0;
    a.then = [&](sender& s) {
        if (++rounds == 3) return;
        s.out = "next "; // the next pipelined response
        batch->add(&s, sender::calls);
    };
    batch->add(&a, sender::calls);
    EXPECT_EQ(batch->go(), 3);
    EXPECT_EQ(p.drain(), "first next next ");
    EXPECT_TRUE(batch->empty());
}

TEST(IoBatch, NothingToSendIsToldZeroWithoutACall) {
    auto batch = io_batch::open();
    if (!batch) GTEST_SKIP() << "no io_uring on this kernel";
    sender closed{-1, "unsent"};
    batch->add(&closed, sender::calls);
    EXPECT_EQ(batch->go(), 0);
    EXPECT_EQ(closed.told, std::vector<long>{0});
}

TEST(IoBatch, ReadsLandWhereEachOwnerSaidAndSayBytesEofOrEagain) {
    auto batch = io_batch::open();
    if (!batch) GTEST_SKIP() << "no io_uring on this kernel";
    socket_pair data;
    socket_pair quiet;
    socket_pair closed;
    socket_pair skipped;
    ASSERT_EQ(::write(data.fd[1], "GET / HTTP/1.1\r\n\r\n", 18), 18);
    ::close(closed.fd[1]);
    closed.fd[1] = -1;
    ASSERT_EQ(::write(skipped.fd[1], "x", 1), 1);
    char b[4][64] = {};
    const io_batch::read_target targets[] = {
        {data.fd[0], b[0], sizeof b[0]},
        {quiet.fd[0], b[1], sizeof b[1]},
        {closed.fd[0], b[2], sizeof b[2]},
        {skipped.fd[0], b[3], 0}, // reads nothing now
    };
    long results[4] = {0, 0, 0, 12345};
    EXPECT_EQ(batch->recv_all(targets, results, 4), 1); // one io_uring_enter for three
    EXPECT_EQ(results[0], 18);
    EXPECT_EQ(std::string(b[0], 18), "GET / HTTP/1.1\r\n\r\n");
    EXPECT_EQ(results[1], -EAGAIN); // never parked: MSG_DONTWAIT
    EXPECT_EQ(results[2], 0);       // EOF
    EXPECT_EQ(results[3], 12345);   // untouched
    char left = 0;
    EXPECT_EQ(::read(skipped.fd[0], &left, 1), 1); // its byte still in its socket
    // A single read is a recv(2) of its own, with the same answer.
    ASSERT_EQ(::write(quiet.fd[1], "late", 4), 4);
    const io_batch::read_target one[] = {{quiet.fd[0], b[1], sizeof b[1]}};
    long result = 0;
    EXPECT_EQ(batch->recv_all(one, &result, 1), 1);
    EXPECT_EQ(result, 4);
}

TEST(IoBatch, TheEnvironmentCanTurnItOff) {
    ::setenv("TARRY_IO_URING", "0", 1);
    EXPECT_EQ(io_batch::open(), nullptr);
    ::unsetenv("TARRY_IO_URING");
}

TEST(IoBatch, ThePollerSendsAfterTheHandlersPostedOutsideAnEventBatch) {
    boost::asio::io_context io;
    poller p{io};
    if (!p.batching()) GTEST_SKIP() << "no io_uring on this kernel";
    socket_pair p1;
    socket_pair p2;
    sender a{p1.fd[0], "a"};
    sender b{p2.fd[0], "b"};
    // Two handlers, as a proxy's responses for two clients: one call after both.
    boost::asio::post(io, [&] { p.defer_send(&a, sender::calls); });
    boost::asio::post(io, [&] {
        p.defer_send(&b, sender::calls);
        EXPECT_TRUE(a.told.empty()); // not yet: after the handlers queued so far
    });
    io.run();
    EXPECT_EQ(a.told, std::vector<long>{1});
    EXPECT_EQ(b.told, std::vector<long>{1});
    EXPECT_EQ(p1.drain(), "a");
    EXPECT_EQ(p2.drain(), "b");
}

} // namespace
} // namespace tarry::net

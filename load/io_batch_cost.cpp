// load/io_batch_cost: what a socket call costs on this machine made alone (recv(2), send(2)) and
// made inside the worker's io_batch (one io_uring_enter for a batch), on loopback TCP.
//
//   build-release/load/io_batch_cost [--pairs N] [--rounds R] [--iterations I]
//
// N connected TCP pairs on 127.0.0.1 (TCP_NODELAY, non-blocking), all in this one thread pinned
// wherever it is started. An iteration: the client side sends 100 bytes on every pair (plain
// send(2)s, not measured); the server side receives them and sends 100 bytes back on every pair,
// either as 2N system calls or as io_batch::recv_all plus one io_batch::go() (2 io_uring_enter);
// the client side reads the answers (not measured). The measured part is timed with
// CLOCK_MONOTONIC (one thread, nothing blocks: wall time is CPU time), and includes the kernel's
// TCP work that each call does inline on loopback (delivery to the peer socket). The two ways
// alternate round by round; medians are printed.
#include <tarry/net/io_batch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using clock_type = std::chrono::steady_clock;

struct pairs_t {
    std::vector<int> client;
    std::vector<int> server;
};

pairs_t connect_pairs(int n) {
    pairs_t p;
    const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0 || ::listen(ls, 1024) != 0) {
        std::perror("listen");
        std::exit(1);
    }
    for (int i = 0; i < n; ++i) {
        const int c = ::socket(AF_INET, SOCK_STREAM, 0);
        if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            std::perror("connect");
            std::exit(1);
        }
        const int s = ::accept(ls, nullptr, nullptr);
        const int one = 1;
        for (int fd : {c, s}) {
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ::fcntl(fd, F_SETFL, O_NONBLOCK);
        }
        p.client.push_back(c);
        p.server.push_back(s);
    }
    ::close(ls);
    return p;
}

struct reply {
    int fd;
    const char* data;
    static tarry::net::io_batch::output pending(void* o) noexcept {
        const auto* r = static_cast<reply*>(o);
        return {r->fd, r->data, 100};
    }
    static void sent(void*, long result, std::size_t) noexcept {
        if (result != 100) std::fprintf(stderr, "short send %ld\n", result);
    }
    static constexpr tarry::net::io_batch::owner_calls calls{&reply::pending, &reply::sent};
};

/// One round of `iterations`: the server side's nanoseconds per socket call.
double round_ns(const pairs_t& p, tarry::net::io_batch* batch, int iterations) {
    const std::size_t n = p.server.size();
    const std::string msg(100, 'x');
    std::vector<std::vector<char>> in(n, std::vector<char>(512));
    std::vector<tarry::net::io_batch::read_target> targets(n);
    std::vector<long> got(n);
    std::vector<reply> replies(n);
    char sink[512];
    clock_type::duration spent{};
    for (int it = 0; it < iterations; ++it) {
        for (int c : p.client)
            (void)::send(c, msg.data(), msg.size(), MSG_NOSIGNAL);
        const auto t0 = clock_type::now();
        if (batch == nullptr) {
            for (std::size_t i = 0; i < n; ++i)
                (void)::recv(p.server[i], in[i].data(), 512, 0);
            for (std::size_t i = 0; i < n; ++i)
                (void)::send(p.server[i], in[i].data(), 100, MSG_NOSIGNAL);
        } else {
            for (std::size_t i = 0; i < n; ++i)
                targets[i] = {p.server[i], in[i].data(), 512};
            batch->recv_all(targets.data(), got.data(), n);
            for (std::size_t i = 0; i < n; ++i) {
                replies[i] = {p.server[i], in[i].data()};
                batch->add(&replies[i], reply::calls);
            }
            batch->go();
        }
        spent += clock_type::now() - t0;
        for (int c : p.client) {
            while (::recv(c, sink, sizeof sink, 0) <= 0) {
            }
        }
    }
    return static_cast<double>(
               std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()) /
           (2.0 * static_cast<double>(n) * iterations);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    int pairs = 64;
    int rounds = 5;
    int iterations = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const int v = std::atoi(argv[i + 1]);
        if (k == "--pairs")
            pairs = v;
        else if (k == "--rounds")
            rounds = v;
        else if (k == "--iterations")
            iterations = v;
    }
    auto batch = tarry::net::io_batch::open();
    if (!batch) {
        std::fprintf(stderr, "io_batch_cost: no io_uring here (or TARRY_IO_URING=0)\n");
        return 1;
    }
    const pairs_t p = connect_pairs(pairs);
    std::vector<double> alone;
    std::vector<double> batched;
    for (int r = 0; r < rounds; ++r) {
        alone.push_back(round_ns(p, nullptr, iterations));
        batched.push_back(round_ns(p, batch.get(), iterations));
    }
    std::printf("| way | ns per socket call (median of %d rounds x %d iterations, %d pairs) |\n",
                rounds, iterations, pairs);
    std::printf("|---|---:|\n");
    std::printf("| recv(2) and send(2), one system call each | %.0f |\n", median(alone));
    std::printf("| io_batch: recv_all, then go() (one io_uring_enter each for %d) | %.0f |\n",
                pairs, median(batched));
    return 0;
}

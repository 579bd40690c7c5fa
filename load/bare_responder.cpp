// The floor of server work, for load/compare: answers every request with the same 13-byte
// "Hello, World!" as tarry, nginx and node_server.js, and does nothing else. No HTTP parsing (a
// request is whatever ends in an empty line), no timeouts, no Date, no limits: one
// edge-triggered epoll set, recv, and one send per read. It is not a server anyone should run; it
// shows how many requests per second the client (wrk on one core) can drive on this machine at
// all, so that a ratio between real servers can be read against that ceiling.
//
//   bare_responder [--listen 127.0.0.1:18085]
//
// A request carrying "Connection: close" (load/wrk/churn.lua) is answered with the same header,
// then the connection is closed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace {

constexpr std::string_view response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                      "Content-Length: 13\r\n\r\nHello, World!";
constexpr std::string_view last_response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                           "Content-Length: 13\r\nConnection: close\r\n\r\n"
                                           "Hello, World!";
constexpr std::string_view end_of_head = "\r\n\r\n";
constexpr std::string_view close_header = "\r\nConnection: close\r\n";

struct peer {
    int fd = -1;
    std::string tail; // the last bytes of the previous read, to find a boundary split across reads
    std::string out;  // responses the socket did not take yet
    bool closing = false;
};

volatile std::sig_atomic_t stop = 0;

// Sends what is queued. False only when the socket failed.
bool flush(peer& p) {
    while (!p.out.empty()) {
        const ssize_t n = ::send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN || errno == EINTR;
        p.out.erase(0, static_cast<std::size_t>(n));
    }
    return true;
}

// Reads what there is and answers every complete request. False: close the connection.
bool serve(peer& p, char* buf, std::size_t size) {
    for (;;) {
        const ssize_t n = ::recv(p.fd, buf, size, 0);
        if (n == 0) return false;
        if (n < 0) return errno == EAGAIN || errno == EINTR;
        std::string text = std::move(p.tail);
        text.append(buf, static_cast<std::size_t>(n));
        std::size_t from = 0, at = 0;
        while ((at = text.find(end_of_head, from)) != std::string::npos) {
            const std::string_view head(text.data() + from, at + 2 - from);
            from = at + end_of_head.size();
            if (head.find(close_header) != std::string_view::npos) {
                p.closing = true;
                p.out.append(last_response);
                break; // what follows is never answered
            }
            p.out.append(response);
        }
        p.tail = text.substr(from); // an unfinished request
        if (p.tail.size() > size) return false;
        if (!flush(p)) return false;
        if (static_cast<std::size_t>(n) < size) return true;
    }
}

} // namespace

int main(int argc, char** argv) {
    std::string listen = "127.0.0.1:18085";
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--listen" && i + 1 < argc) {
            listen = argv[++i];
        } else {
            std::fprintf(stderr, "usage: bare_responder [--listen HOST:PORT]\n");
            return 2;
        }
    }
    const auto colon = listen.rfind(':');
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    const int port = colon == std::string::npos ? 0 : std::atoi(listen.c_str() + colon + 1);
    if (port <= 0 || port > 65535 ||
        ::inet_pton(AF_INET, listen.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
        std::fprintf(stderr, "bare_responder: --listen wants IPv4:PORT, got '%s'\n",
                     listen.c_str());
        return 2;
    }
    addr.sin_port = htons(static_cast<std::uint16_t>(port));

    const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(lfd, 511) != 0) {
        std::fprintf(stderr, "bare_responder: cannot listen on %s: %s\n", listen.c_str(),
                     std::strerror(errno));
        return 1;
    }
    struct sigaction sa {};
    sa.sa_handler = [](int) { stop = 1; };
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);

    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = lfd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    std::unordered_map<int, std::unique_ptr<peer>> peers;
    std::array<epoll_event, 256> events{};
    std::array<char, 16384> buf{};
    auto drop = [&](int fd) {
        peers.erase(fd);
        ::close(fd);
    };
    while (stop == 0) {
        const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
        for (int i = 0; i < n; ++i) {
            const int fd = events[static_cast<std::size_t>(i)].data.fd;
            if (fd == lfd) {
                int c = -1;
                while ((c = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    epoll_event cev{};
                    cev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
                    cev.data.fd = c;
                    ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                    peers[c] = std::make_unique<peer>(peer{c, {}, {}, false});
                }
                continue;
            }
            auto it = peers.find(fd);
            if (it == peers.end()) continue;
            peer& p = *it->second;
            const std::uint32_t e = events[static_cast<std::size_t>(i)].events;
            bool keep = (e & EPOLLERR) == 0;
            if (keep && (e & EPOLLOUT) != 0) keep = flush(p);
            if (keep && (e & (EPOLLIN | EPOLLRDHUP)) != 0) keep = serve(p, buf.data(), buf.size());
            if (p.closing && p.out.empty()) keep = false;
            if (!keep) drop(fd);
        }
    }
    return 0;
}

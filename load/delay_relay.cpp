// A TCP relay that adds a fixed delay to each direction, for load/balancer: it sits between
// HAProxy and one server instance so that a close and a request cross each other on the wire for
// as long as they would on a real network, instead of the microseconds of loopback.
//
//   delay_relay --listen 127.0.0.1:PORT --connect 127.0.0.1:PORT [--delay-ms 2] [--hold-ms 2000]
//
// Each accepted connection gets its own connection to the instance. Every event read on one side
// is replayed on the other side --delay-ms later, in order:
//   - data: written then (back-pressure: a side stops being read while 1 MiB waits toward the
//   other)
//   - FIN (read returned 0): shutdown(SHUT_WR) on the other side, after the data before it
//   - reset (ECONNRESET, EPIPE or any socket error): the other side is closed with SO_LINGER 0, so
//     it sees a reset too; what was still queued toward the dead side is dropped
// A connect to the instance that is refused (the instance is not listening: it is being
// replaced) is tried again every 20 ms for up to --hold-ms (2000): the accepted connection waits,
// as HAProxy's own connect retries would have made it wait on a real network, instead of failing
// for a reason the relay alone would have made. If the instance still refuses after that, the
// accepted connection is reset. Those resets are counted and printed on exit (SIGTERM/SIGINT) as
// `relay: ... refused_resets N`, with `held N`, the connections that had to wait.
//
// One thread, level-triggered epoll, the earliest due event sets the epoll timeout. It keeps up
// with a few tens of thousands of requests per second on one core, which is what it is for.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;

constexpr std::size_t max_queued = 1 << 20;

volatile std::sig_atomic_t stop = 0;

enum class kind { data, fin, reset };

struct chunk {
    time_point due;
    kind what;
    std::string bytes;
};

struct side {
    int fd = -1;
    bool reading = true;      // false after its FIN, its reset, or while the other queue is full
    bool connected = true;    // false while the connect to the instance is in progress
    std::deque<chunk> toward; // events read on the other side, to replay on this one
    std::size_t queued = 0;   // data bytes in toward
    std::size_t written = 0;  // bytes of toward.front() already written
    bool want_out = false;
    bool dead = false; // closed (reset, or replayed a reset toward it)
    bool shut = false; // FIN written
};

constexpr auto retry_every = std::chrono::milliseconds(20);

struct pair_state {
    side a;               // HAProxy's side (accepted)
    side b;               // the instance's side (connected)
    bool waiting = false; // the instance refused; connect again at retry_at, give up at give_up
    bool was_held = false;
    time_point retry_at{};
    time_point give_up{};
};

struct relay {
    int epfd = -1;
    int listen_fd = -1;
    sockaddr_in listen_addr{};
    sockaddr_in connect_addr{};
    std::chrono::microseconds delay{2000};
    std::chrono::milliseconds hold{2000};
    std::unordered_map<int, std::shared_ptr<pair_state>> by_fd;
    std::vector<std::shared_ptr<pair_state>> pairs;
    unsigned long long accepted = 0, refused_resets = 0, resets_relayed = 0, held = 0;
};

sockaddr_in parse_address(const char* text) {
    const std::string s = text;
    const auto colon = s.rfind(':');
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (colon == std::string::npos ||
        ::inet_pton(AF_INET, s.substr(0, colon).c_str(), &a.sin_addr) != 1) {
        std::fprintf(stderr, "delay_relay: bad address '%s' (want 127.0.0.1:PORT)\n", text);
        std::exit(2);
    }
    a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(s.c_str() + colon + 1)));
    return a;
}

void reset_close(int fd) {
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
}

bool open_listener(relay& r) {
    r.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    ::setsockopt(r.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(r.listen_fd, reinterpret_cast<sockaddr*>(&r.listen_addr), sizeof r.listen_addr) <
            0 ||
        ::listen(r.listen_fd, 1024) < 0) {
        ::close(r.listen_fd);
        r.listen_fd = -1;
        return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = r.listen_fd;
    ::epoll_ctl(r.epfd, EPOLL_CTL_ADD, r.listen_fd, &ev);
    return true;
}

void update_interest(relay& r, side& s, const side& other) {
    if (s.dead || s.fd < 0) return;
    epoll_event ev{};
    ev.data.fd = s.fd;
    const bool read = s.reading && s.connected && other.queued < max_queued;
    ev.events = (read ? EPOLLIN : 0u) | (s.want_out || !s.connected ? EPOLLOUT : 0u);
    ::epoll_ctl(r.epfd, EPOLL_CTL_MOD, s.fd, &ev);
}

void kill_side(relay& r, side& s, bool with_reset) {
    if (s.dead) return;
    if (s.fd < 0) { // waiting for the instance: nothing to close
        s.dead = true;
        s.toward.clear();
        s.queued = 0;
        return;
    }
    ::epoll_ctl(r.epfd, EPOLL_CTL_DEL, s.fd, nullptr);
    r.by_fd.erase(s.fd);
    if (with_reset)
        reset_close(s.fd);
    else
        ::close(s.fd);
    s.dead = true;
    s.reading = false;
    s.toward.clear();
    s.queued = 0;
}

// Something went wrong on `from`: it is gone; reset `to` after the delay, after what was read
// from `from` before.
void on_reset(relay& r, side& from, side& to) {
    kill_side(r, from, true);
    if (!to.dead) to.toward.push_back({clock_type::now() + r.delay, kind::reset, {}});
}

void add_fd(relay& r, int fd, const std::shared_ptr<pair_state>& p, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(r.epfd, EPOLL_CTL_ADD, fd, &ev);
    r.by_fd[fd] = p;
}

void on_refused(relay& r, const std::shared_ptr<pair_state>& p, time_point now) {
    if (!p->was_held) ++r.held;
    p->was_held = true;
    p->b.fd = -1; // no socket until the next try; what HAProxy sends meanwhile waits in b.toward
    p->b.dead = false;
    p->b.connected = false;
    if (now >= p->give_up) {
        p->waiting = false;
        p->b.dead = true;
        kill_side(r, p->a, true);
        ++r.refused_resets;
        return;
    }
    p->waiting = true;
    p->retry_at = now + retry_every;
}

// Connects p's instance side; a refusal makes p wait and try again, up to r.hold after accept.
void connect_upstream(relay& r, const std::shared_ptr<pair_state>& p, time_point now) {
    int one = 1;
    const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int rc =
        ::connect(up, reinterpret_cast<sockaddr*>(&r.connect_addr), sizeof r.connect_addr);
    if (rc < 0 && errno != EINPROGRESS) {
        ::close(up);
        on_refused(r, p, now);
        return;
    }
    p->waiting = false;
    p->b.fd = up;
    p->b.dead = false;
    p->b.connected = rc == 0;
    add_fd(r, up, p, rc == 0 ? EPOLLIN : EPOLLOUT);
}

void accept_all(relay& r) {
    for (int i = 0; i < 64; ++i) {
        const int fd = ::accept4(r.listen_fd, nullptr, nullptr, SOCK_NONBLOCK);
        if (fd < 0) return;
        ++r.accepted;
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        auto p = std::make_shared<pair_state>();
        p->a.fd = fd;
        p->give_up = clock_type::now() + r.hold;
        r.pairs.push_back(p);
        add_fd(r, fd, p, EPOLLIN);
        connect_upstream(r, p, clock_type::now());
    }
}

void read_side(relay& r, side& from, side& to) {
    char buf[65536];
    for (int i = 0; i < 4 && from.reading && !from.dead; ++i) {
        const ssize_t n = ::recv(from.fd, buf, sizeof buf, 0);
        if (n > 0) {
            if (!to.dead) {
                to.toward.push_back({clock_type::now() + r.delay, kind::data,
                                     std::string(buf, static_cast<std::size_t>(n))});
                to.queued += static_cast<std::size_t>(n);
            }
            if (static_cast<std::size_t>(n) < sizeof buf) break;
            continue;
        }
        if (n == 0) {
            from.reading = false;
            if (!to.dead) to.toward.push_back({clock_type::now() + r.delay, kind::fin, {}});
            break;
        }
        if (errno == EAGAIN || errno == EINTR) break;
        on_reset(r, from, to);
        return;
    }
}

// Replays what is due toward `s`. Returns false when `s` failed.
bool replay(relay& r, side& s, side& other, time_point now) {
    while (!s.dead && s.connected && !s.toward.empty() && s.toward.front().due <= now) {
        chunk& c = s.toward.front();
        if (c.what == kind::reset) {
            ++r.resets_relayed;
            kill_side(r, s, true);
            return true;
        }
        if (c.what == kind::fin) {
            ::shutdown(s.fd, SHUT_WR);
            s.shut = true;
            s.toward.pop_front();
            continue;
        }
        const ssize_t n =
            ::send(s.fd, c.bytes.data() + s.written, c.bytes.size() - s.written, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                s.want_out = true;
                return true;
            }
            return false;
        }
        s.written += static_cast<std::size_t>(n);
        if (s.written < c.bytes.size()) {
            s.want_out = true;
            return true;
        }
        s.queued -= c.bytes.size();
        s.written = 0;
        s.toward.pop_front();
    }
    s.want_out = false;
    (void)other;
    return true;
}

bool finished(const pair_state& p) {
    if (p.waiting) return p.a.dead;
    const auto side_done = [](const side& s) {
        return s.dead || (!s.reading && s.shut && s.toward.empty());
    };
    const bool quiet = (p.a.dead || !p.a.reading) && (p.b.dead || !p.b.reading) &&
                       p.a.toward.empty() && p.b.toward.empty();
    return quiet || (p.a.dead && p.b.dead) || (side_done(p.a) && side_done(p.b)) ||
           (p.a.dead && p.b.toward.empty() && !p.b.reading) ||
           (p.b.dead && p.a.toward.empty() && !p.a.reading);
}

void service(relay& r, pair_state& p, time_point now) {
    if (!replay(r, p.a, p.b, now)) on_reset(r, p.a, p.b);
    if (!replay(r, p.b, p.a, now)) on_reset(r, p.b, p.a);
    update_interest(r, p.a, p.b);
    update_interest(r, p.b, p.a);
}

void on_event(relay& r, int fd, std::uint32_t events) {
    const auto it = r.by_fd.find(fd);
    if (it == r.by_fd.end()) return;
    const auto p = it->second; // keeps the pair alive through this event
    side& s = fd == p->a.fd && !p->a.dead ? p->a : p->b;
    side& other = &s == &p->a ? p->b : p->a;
    if (!s.connected) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            // Not kill_side: what HAProxy sent meanwhile stays queued for the next try.
            ::epoll_ctl(r.epfd, EPOLL_CTL_DEL, s.fd, nullptr);
            r.by_fd.erase(s.fd);
            ::close(s.fd);
            on_refused(r, p, clock_type::now());
            return;
        }
        s.connected = true;
    }
    if (events & EPOLLERR) {
        on_reset(r, s, other);
    } else if (events & (EPOLLIN | EPOLLHUP)) {
        read_side(r, s, other);
    }
    service(r, *p, clock_type::now());
}

void on_signal(int) {
    stop = 1;
}

} // namespace

int main(int argc, char** argv) {
    relay r;
    const char* listen_text = nullptr;
    const char* connect_text = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--listen" && i + 1 < argc)
            listen_text = argv[++i];
        else if (arg == "--connect" && i + 1 < argc)
            connect_text = argv[++i];
        else if (arg == "--hold-ms" && i + 1 < argc)
            r.hold = std::chrono::milliseconds(std::atoll(argv[++i]));
        else if (arg == "--delay-ms" && i + 1 < argc)
            r.delay = std::chrono::microseconds(
                static_cast<long long>(std::strtod(argv[++i], nullptr) * 1000));
        else {
            std::fprintf(stderr, "usage: delay_relay --listen 127.0.0.1:PORT --connect "
                                 "127.0.0.1:PORT [--delay-ms 2] [--hold-ms 2000]\n");
            return 2;
        }
    }
    if (!listen_text || !connect_text) {
        std::fprintf(stderr, "delay_relay: --listen and --connect are required\n");
        return 2;
    }
    r.listen_addr = parse_address(listen_text);
    r.connect_addr = parse_address(connect_text);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    std::signal(SIGPIPE, SIG_IGN);
    r.epfd = ::epoll_create1(0);
    if (!open_listener(r)) {
        std::fprintf(stderr, "delay_relay: cannot listen on %s: %s\n", listen_text,
                     std::strerror(errno));
        return 1;
    }
    std::vector<epoll_event> events(256);
    while (!stop) {
        auto now = clock_type::now();
        auto wake = now + std::chrono::milliseconds(100);
        for (const auto& p : r.pairs) {
            if (p->waiting) wake = std::min(wake, p->retry_at);
            if (!p->a.toward.empty() && !p->a.want_out)
                wake = std::min(wake, p->a.toward.front().due);
            if (!p->b.toward.empty() && !p->b.want_out)
                wake = std::min(wake, p->b.toward.front().due);
        }
        const auto wait_us =
            std::chrono::duration_cast<std::chrono::microseconds>(wake - now).count();
        const int timeout_ms = wait_us <= 0 ? 0 : static_cast<int>((wait_us + 999) / 1000);
        const int n =
            ::epoll_wait(r.epfd, events.data(), static_cast<int>(events.size()), timeout_ms);
        for (int i = 0; i < n; ++i) {
            if (events[i].data.fd == r.listen_fd)
                accept_all(r);
            else
                on_event(r, events[i].data.fd, events[i].events);
        }
        now = clock_type::now();
        std::size_t kept = 0;
        for (auto& p : r.pairs) {
            if (p->waiting && now >= p->retry_at) connect_upstream(r, p, now);
            service(r, *p, now);
            if (finished(*p)) {
                kill_side(r, p->a, false);
                kill_side(r, p->b, false);
                continue;
            }
            r.pairs[kept++] = p;
        }
        r.pairs.resize(kept);
    }
    std::fprintf(stderr, "relay: accepted %llu held %llu refused_resets %llu resets_relayed %llu\n",
                 r.accepted, r.held, r.refused_resets, r.resets_relayed);
    return 0;
}

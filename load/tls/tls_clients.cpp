// TLS clients for load/tls/: idle keep-alive connections (the server's memory per connection) and
// handshake loops (full or resumed handshakes per second, the server's CPU per handshake). One
// thread, non-blocking sockets on one epoll set (edge-triggered), OpenSSL's client.
//
//   tls_clients --mode idle --target 127.0.0.1:PORT --connections 10000 --checkpoints 2000
//       --pid SERVER_PID [--tls 1.3|1.2|plain] [--state request|handshake|connected]
//       [--settle 2s] [--hold 0]
//   tls_clients --mode handshakes --target 127.0.0.1:PORT --connections 32 [--resume single|reuse]
//       --pid SERVER_PID [--tls 1.3|1.2] [--warmup 2s] [--duration 10s]
//
// idle: reads the server's memory (/proc/PID/smaps_rollup: Rss, Pss, Private_Clean +
// Private_Dirty; and VmRSS from /proc/PID/status), then opens N connections, at most
// --in-flight at a time: each connects, does a full handshake, sends one keep-alive GET, reads
// the whole response (Content-Length), and stays idle with nothing pending (a read armed: a byte
// or a close from the server is counted as closed_while_idle). --state stops earlier: at the
// end of the handshake, no request sent (a browser's preconnected socket), or once connected,
// nothing sent at all. At each checkpoint (and at N) it
// stops opening, lets the server settle for --settle while it keeps watching the sockets, reads
// the server's memory again, and prints one line:
//   idle n=N failed=F closed_while_idle=C open_ms=T version=V cipher=S rss_kb=... pss_kb=...
//        private_kb=... rss_b_per_conn=... pss_b_per_conn=... private_b_per_conn=...
// (growth from the reading before the first connection, divided by n). After the last it prints
// `holding`, keeps the connections until --hold has passed (0: until SIGUSR1, SIGINT or SIGTERM),
// then closes them all and prints `closed N`.
//
// handshakes: --connections slots, each in a loop: connect, handshake, one keep-alive GET, read
// the response, close_notify, close. With --resume single, a slot offers the newest ticket the
// server sent it (TLS 1.3's NewSessionTicket, or TLS 1.2's), each ticket once, as RFC 8446 (C.4)
// asks of clients; with --resume reuse, a slot offers the first ticket it received on every
// connection, a fresh copy of it each time (OpenSSL's client does not offer a TLS 1.3 session
// object again once it has resumed it). Every handshake is counted full or resumed by what the
// client saw (SSL_session_reused). After --warmup, it counts for --duration and reads the
// server's utime + stime (/proc/PID/stat) at both ends of that window; prints
//   handshakes n=N per_s=R full=F resumed=S failed=E server_cpu_s=C server_us_per_handshake=U
//              client_cpu_s=K version=V cipher=S
// Client sources are spread over 127.0.0.2.. (--sources) so that no source runs out of ports.
#include "../tool_common.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using duration = clock_type::duration;
using tool::parse_number;

volatile std::sig_atomic_t stop_requested = 0;
void on_signal(int) {
    stop_requested = 1;
}

// ---------------------------------------------------------------------------------------------
// Command line

enum class mode_kind { idle, handshakes };
// handshakes: what a slot offers. none: no session (full handshakes). single: the newest ticket
// the server sent, each used once (RFC 8446, C.4; what OpenSSL's client and browsers do): a
// server that sends no new ticket on a resumed connection gets a full handshake next time.
// reuse: the slot's first ticket on every connection (a fresh copy each time).
enum class resume_kind { none, single, reuse };
enum class proto { tls13, tls12, plain };
// idle: where a connection stops and stays: after one request, after the handshake, or once the
// TCP connection is up.
enum class idle_state { request, handshake, connected };

struct options {
    tool::target target;
    std::size_t connections = 1000;
    mode_kind mode = mode_kind::idle;
    proto version = proto::tls13;
    idle_state stop = idle_state::request;
    std::vector<std::size_t> checkpoints;
    std::size_t in_flight = 32;
    unsigned sources = 8;
    long pid = -1;
    duration settle = std::chrono::seconds(2);
    duration hold = std::chrono::seconds(0);
    duration warmup = std::chrono::seconds(2);
    duration length = std::chrono::seconds(10);
    resume_kind resume = resume_kind::none;
};

constexpr const char* usage =
    "usage: tls_clients --mode idle|handshakes [options]\n"
    "  --target HOST:PORT   loopback TLS server (default 127.0.0.1:8080)\n"
    "  --connections N      idle: connections to open; handshakes: concurrent slots (default "
    "1000)\n"
    "  --tls 1.3|1.2|plain  the only version offered, or no TLS at all (idle only; default 1.3)\n"
    "  --pid PID            the server, for its memory (idle) or CPU time (handshakes)\n"
    "idle:\n"
    "  --checkpoints N,M    also measure after N, M connections (below --connections)\n"
    "  --state S            where each stays idle: request (after one; default), handshake\n"
    "                       (done, no request sent) or connected (nothing sent)\n"
    "  --in-flight K        connections being opened at once (default 32)\n"
    "  --settle DUR         wait before each memory reading (default 2s)\n"
    "  --hold DUR           keep the idle connections this long; 0: until SIGUSR1/SIGTERM\n"
    "handshakes:\n"
    "  --resume single|reuse  offer a session: the newest ticket, each used once (single), or\n"
    "                       the slot's first ticket every time (reuse); default none\n"
    "  --warmup DUR         unmeasured time first (default 2s)\n"
    "  --duration DUR       measured time (default 10s)\n"
    "  --sources N          spread sources over 127.0.0.2.. (default 8; 0: kernel's choice)\n";

std::optional<duration> parse_duration(std::string_view t) {
    double scale = 1;
    if (t == "0") return duration::zero();
    if (t.ends_with("ms")) {
        scale = 1e-3;
        t.remove_suffix(2);
    } else if (t.ends_with("s")) {
        t.remove_suffix(1);
    } else {
        return std::nullopt;
    }
    auto v = parse_number<double>(t);
    if (!v || *v < 0) return std::nullopt;
    return std::chrono::duration_cast<duration>(std::chrono::duration<double>(*v * scale));
}

void read_flag(options& opt, tool::arg_walker& args) {
    const auto f = args.flag();
    const auto v = args.value();
    if (f == "--mode") {
        if (v == "idle")
            opt.mode = mode_kind::idle;
        else if (v == "handshakes")
            opt.mode = mode_kind::handshakes;
        else
            args.bad("expected idle or handshakes");
    } else if (f == "--tls") {
        if (v == "1.3")
            opt.version = proto::tls13;
        else if (v == "1.2")
            opt.version = proto::tls12;
        else if (v == "plain")
            opt.version = proto::plain;
        else
            args.bad("expected 1.3, 1.2 or plain");
    } else if (f == "--state") {
        if (v == "request")
            opt.stop = idle_state::request;
        else if (v == "handshake")
            opt.stop = idle_state::handshake;
        else if (v == "connected")
            opt.stop = idle_state::connected;
        else
            args.bad("expected request, handshake or connected");
    } else if (f == "--checkpoints") {
        std::string_view rest = v;
        while (!rest.empty()) {
            auto comma = rest.find(',');
            auto n = parse_number<std::size_t>(rest.substr(0, comma));
            if (!n || *n == 0) return args.bad("expected positive counts, comma-separated");
            opt.checkpoints.push_back(*n);
            rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        }
    } else if (f == "--in-flight") {
        auto n = parse_number<std::size_t>(v);
        if (!n || *n == 0) return args.bad("expected a positive count");
        opt.in_flight = *n;
    } else if (f == "--sources") {
        auto n = parse_number<unsigned>(v);
        if (!n || *n > 250) return args.bad("expected 0..250");
        opt.sources = *n;
    } else if (f == "--pid") {
        auto n = parse_number<long>(v);
        if (!n || *n <= 0) return args.bad("expected a pid");
        opt.pid = *n;
    } else if (f == "--settle" || f == "--hold" || f == "--warmup" || f == "--duration") {
        auto d = parse_duration(v);
        if (!d) return args.bad("expected a duration such as 2s or 500ms");
        (f == "--settle"   ? opt.settle
         : f == "--hold"   ? opt.hold
         : f == "--warmup" ? opt.warmup
                           : opt.length) = *d;
    } else if (f == "--resume") {
        if (v == "single")
            opt.resume = resume_kind::single;
        else if (v == "reuse")
            opt.resume = resume_kind::reuse;
        else if (v == "none")
            opt.resume = resume_kind::none;
        else
            args.bad("expected single, reuse or none");
    } else {
        args.unknown_flag();
    }
}

const char* check(const options& opt) {
    if (!opt.target.address.is_v4() || !opt.target.address.is_loopback())
        return "--target must be an IPv4 loopback address";
    if (opt.mode == mode_kind::handshakes && opt.version == proto::plain)
        return "--tls plain is for --mode idle";
    if (opt.mode == mode_kind::handshakes && opt.stop != idle_state::request)
        return "--state is for --mode idle";
    if (opt.version == proto::plain && opt.stop == idle_state::handshake)
        return "--state handshake needs TLS";
    for (auto c : opt.checkpoints)
        if (c >= opt.connections) return "--checkpoints must be below --connections";
    if (opt.mode == mode_kind::handshakes && opt.length.count() == 0)
        return "--duration must be positive";
    return nullptr;
}

// ---------------------------------------------------------------------------------------------
// The server process

struct memory {
    long rss_kb = 0, pss_kb = 0, private_kb = 0, vmrss_kb = 0;
};

memory read_memory(long pid) {
    memory m;
    if (pid <= 0) return m;
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string key;
        long kb = 0;
        s >> key >> kb;
        if (key == "Rss:")
            m.rss_kb = kb;
        else if (key == "Pss:")
            m.pss_kb = kb;
        else if (key == "Private_Clean:" || key == "Private_Dirty:")
            m.private_kb += kb;
    }
    m.vmrss_kb = tool::read_rss_kb(pid).value_or(0);
    return m;
}

// utime + stime of `pid` in clock ticks; -1 when unreadable.
long long cpu_ticks(long pid) {
    if (pid <= 0) return -1;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = all.rfind(')');
    if (paren == std::string::npos) return -1;
    std::istringstream s(all.substr(paren + 2));
    std::string field;
    long long utime = 0, stime = 0;
    // After the command: state is field 3; utime and stime are fields 14 and 15.
    for (int i = 3; i <= 15 && (s >> field); ++i) {
        if (i == 14) utime = std::stoll(field);
        if (i == 15) stime = std::stoll(field);
    }
    return utime + stime;
}

double client_cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// ---------------------------------------------------------------------------------------------
// One connection

constexpr std::string_view request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

enum class state { connecting, handshaking, writing, reading, idle, done, failed };

struct conn {
    int fd = -1;
    SSL* ssl = nullptr;
    state st = state::connecting;
    std::size_t slot = 0;
    std::size_t written = 0;
    std::string response;
    std::string error;
    bool resumed = false;
};

struct client {
    const options& opt;
    int ep = -1;
    SSL_CTX* ctx = nullptr;
    std::vector<SSL_SESSION*> sessions; // handshakes --resume single: each slot's newest ticket
    std::vector<std::vector<unsigned char>> kept; // --resume reuse: each slot's first, as DER
    std::string version_seen = "-";
    std::string cipher_seen = "-";
    unsigned next_source = 0;
    tool::error_tally errors;

    explicit client(const options& o) : opt(o) {
        ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) throw std::runtime_error("epoll_create1 failed");
        if (opt.version == proto::plain) return;
        ctx = SSL_CTX_new(TLS_client_method());
        if (ctx == nullptr) throw std::runtime_error("SSL_CTX_new failed");
        const int v = opt.version == proto::tls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
        SSL_CTX_set_min_proto_version(ctx, v);
        SSL_CTX_set_max_proto_version(ctx, v);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
        SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
        if (opt.mode == mode_kind::handshakes && opt.resume != resume_kind::none) {
            sessions.assign(opt.connections, nullptr);
            kept.assign(opt.connections, {});
            SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
                                                    SSL_SESS_CACHE_NO_INTERNAL_STORE);
            SSL_CTX_set_app_data(ctx, this);
            SSL_CTX_sess_set_new_cb(ctx, [](SSL* ssl, SSL_SESSION* s) -> int {
                auto* self = static_cast<client*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
                auto* c = static_cast<conn*>(SSL_get_app_data(ssl));
                if (self->opt.resume == resume_kind::reuse) {
                    auto& der = self->kept[c->slot];
                    if (der.empty() && SSL_SESSION_is_resumable(s) == 1) {
                        const int n = i2d_SSL_SESSION(s, nullptr);
                        if (n > 0) {
                            der.resize(static_cast<std::size_t>(n));
                            unsigned char* p = der.data();
                            i2d_SSL_SESSION(s, &p);
                        }
                    }
                    return 0; // not kept: OpenSSL frees it
                }
                SSL_SESSION*& slot = self->sessions[c->slot];
                if (slot != nullptr) SSL_SESSION_free(slot);
                slot = s; // the reference OpenSSL handed us
                return 1;
            });
        } else {
            SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        }
    }
    ~client() {
        for (auto* s : sessions)
            if (s != nullptr) SSL_SESSION_free(s);
        if (ctx != nullptr) SSL_CTX_free(ctx);
        if (ep >= 0) ::close(ep);
    }

    void fail(conn& c, std::string what) {
        c.st = state::failed;
        c.error = std::move(what);
        errors.note(c.error);
    }

    // Starts a connection: a socket bound to the next source, connect() under way.
    bool start(conn& c) {
        const std::size_t slot = c.slot;
        c = conn{};
        c.slot = slot;
        c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c.fd < 0) {
            fail(c, std::string("socket: ") + std::strerror(errno));
            return false;
        }
        int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (opt.sources > 0) {
            setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
            sockaddr_in src{};
            src.sin_family = AF_INET;
            src.sin_addr.s_addr = htonl(0x7f000002u + next_source);
            next_source = (next_source + 1) % opt.sources;
            if (::bind(c.fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
                fail(c, std::string("bind: ") + std::strerror(errno));
                return false;
            }
        }
        sockaddr_in dst{};
        dst.sin_family = AF_INET;
        dst.sin_port = htons(opt.target.port);
        dst.sin_addr.s_addr = htonl(opt.target.address.to_v4().to_uint());
        if (::connect(c.fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0 &&
            errno != EINPROGRESS) {
            fail(c, std::string("connect: ") + std::strerror(errno));
            return false;
        }
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        ev.data.ptr = &c;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
            fail(c, std::string("epoll_ctl: ") + std::strerror(errno));
            return false;
        }
        c.st = state::connecting;
        return true;
    }

    void close_conn(conn& c, bool notify) {
        if (c.ssl != nullptr) {
            if (notify) SSL_shutdown(c.ssl);
            SSL_free(c.ssl);
            c.ssl = nullptr;
        }
        if (c.fd >= 0) ::close(c.fd);
        c.fd = -1;
    }

    // Whether `c.response` holds one whole response; a non-200 status fails the connection.
    bool response_complete(conn& c) {
        auto end = c.response.find("\r\n\r\n");
        if (end == std::string::npos) return false;
        std::string head = c.response.substr(0, end);
        std::transform(head.begin(), head.end(), head.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        std::size_t length = 0;
        if (auto p = head.find("\r\ncontent-length:"); p != std::string::npos) {
            p += 17;
            while (p < head.size() && head[p] == ' ')
                ++p;
            length = std::strtoul(head.c_str() + p, nullptr, 10);
        }
        if (c.response.size() < end + 4 + length) return false;
        if (!c.response.starts_with("HTTP/1.1 200")) {
            fail(c, "status: " + c.response.substr(0, c.response.find('\r')));
            return true;
        }
        return true;
    }

    // Drives `c` as far as it goes; returns when it waits for the socket, or is idle, done or
    // failed.
    void drive(conn& c) {
        for (;;) {
            switch (c.st) {
            case state::connecting: {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err == EINPROGRESS || err == EALREADY) return;
                if (err != 0) return fail(c, std::string("connect: ") + std::strerror(err));
                // Still in progress? A write edge says when it is done.
                sockaddr_in peer{};
                socklen_t plen = sizeof peer;
                if (getpeername(c.fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) return;
                if (opt.stop == idle_state::connected) {
                    c.st = state::idle; // nothing sent: a read armed, as for the others
                    return;
                }
                if (opt.version == proto::plain) {
                    c.st = state::writing;
                    break;
                }
                c.ssl = SSL_new(ctx);
                if (c.ssl == nullptr) return fail(c, "SSL_new failed");
                SSL_set_app_data(c.ssl, &c);
                SSL_set_fd(c.ssl, c.fd);
                SSL_set_connect_state(c.ssl);
                if (opt.resume == resume_kind::single && sessions[c.slot] != nullptr) {
                    SSL_set_session(c.ssl, sessions[c.slot]); // used once
                    SSL_SESSION_free(sessions[c.slot]);
                    sessions[c.slot] = nullptr;
                } else if (opt.resume == resume_kind::reuse && !kept[c.slot].empty()) {
                    const unsigned char* p = kept[c.slot].data();
                    SSL_SESSION* fresh =
                        d2i_SSL_SESSION(nullptr, &p, static_cast<long>(kept[c.slot].size()));
                    if (fresh != nullptr) {
                        SSL_set_session(c.ssl, fresh);
                        SSL_SESSION_free(fresh);
                    }
                }
                c.st = state::handshaking;
                break;
            }
            case state::handshaking: {
                const int r = SSL_do_handshake(c.ssl);
                if (r == 1) {
                    c.resumed = SSL_session_reused(c.ssl) == 1;
                    if (version_seen == "-") {
                        version_seen = SSL_get_version(c.ssl);
                        cipher_seen = SSL_CIPHER_get_name(SSL_get_current_cipher(c.ssl));
                    }
                    if (opt.stop == idle_state::handshake) {
                        // A preconnected socket: reading (TLS 1.3's tickets come after the
                        // handshake), never writing.
                        c.st = state::idle;
                        break;
                    }
                    c.st = state::writing;
                    break;
                }
                const int e = SSL_get_error(c.ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
                char buf[256];
                ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
                ERR_clear_error();
                return fail(c, std::string("handshake: ") + buf);
            }
            case state::writing: {
                const char* p = request.data() + c.written;
                const std::size_t n = request.size() - c.written;
                if (c.ssl != nullptr) {
                    const int r = SSL_write(c.ssl, p, static_cast<int>(n));
                    if (r <= 0) {
                        const int e = SSL_get_error(c.ssl, r);
                        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
                        ERR_clear_error();
                        return fail(c, "SSL_write failed");
                    }
                    c.written += static_cast<std::size_t>(r);
                } else {
                    const ssize_t r = ::send(c.fd, p, n, MSG_NOSIGNAL);
                    if (r < 0) {
                        if (errno == EAGAIN) return;
                        return fail(c, std::string("send: ") + std::strerror(errno));
                    }
                    c.written += static_cast<std::size_t>(r);
                }
                if (c.written == request.size()) c.st = state::reading;
                break;
            }
            case state::reading:
            case state::idle: {
                char buf[4096];
                ssize_t r;
                if (c.ssl != nullptr) {
                    const int k = SSL_read(c.ssl, buf, sizeof buf);
                    if (k <= 0) {
                        const int e = SSL_get_error(c.ssl, k);
                        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
                        const int saved = errno;
                        char why[256] = "";
                        if (const unsigned long q = ERR_get_error(); q != 0)
                            ERR_error_string_n(q, why, sizeof why);
                        else if (e == SSL_ERROR_SYSCALL)
                            std::snprintf(why, sizeof why, "%s",
                                          saved != 0 ? std::strerror(saved) : "EOF");
                        ERR_clear_error();
                        if (c.st == state::idle) return fail(c, "closed while idle");
                        return fail(c, e == SSL_ERROR_ZERO_RETURN
                                           ? std::string("closed before the response")
                                           : "SSL_read failed: error " + std::to_string(e) + " " +
                                                 why);
                    }
                    r = k;
                } else {
                    r = ::recv(c.fd, buf, sizeof buf, 0);
                    if (r < 0 && errno == EAGAIN) return;
                    if (r <= 0) {
                        if (c.st == state::idle) return fail(c, "closed while idle");
                        return fail(c, "closed before the response");
                    }
                }
                if (c.st == state::idle) return fail(c, "bytes while idle");
                c.response.append(buf, static_cast<std::size_t>(r));
                if (response_complete(c)) {
                    if (c.st == state::failed) return;
                    c.response.clear();
                    c.response.shrink_to_fit();
                    c.st = opt.mode == mode_kind::idle ? state::idle : state::done;
                    return;
                }
                break;
            }
            case state::done:
            case state::failed:
                return;
            }
        }
    }

    // Waits up to `ms` for events and drives the connections they name; calls on_change(conn&)
    // for each connection driven.
    template <class F> void poll_once(int ms, F&& on_change) {
        epoll_event evs[256];
        const int n = epoll_wait(ep, evs, 256, ms);
        for (int i = 0; i < n; ++i) {
            conn& c = *static_cast<conn*>(evs[i].data.ptr);
            const state before = c.st;
            drive(c);
            on_change(c, before);
        }
    }
};

std::string kb_fields(const memory& now, const memory& base, std::size_t n) {
    char line[512];
    const auto per = [&](long a, long b) {
        return static_cast<long>(
            std::lround(static_cast<double>(a - b) * 1024.0 / static_cast<double>(n)));
    };
    std::snprintf(line, sizeof line,
                  "rss_kb=%ld pss_kb=%ld private_kb=%ld vmrss_kb=%ld rss_b_per_conn=%ld "
                  "pss_b_per_conn=%ld private_b_per_conn=%ld vmrss_b_per_conn=%ld",
                  now.rss_kb - base.rss_kb, now.pss_kb - base.pss_kb,
                  now.private_kb - base.private_kb, now.vmrss_kb - base.vmrss_kb,
                  per(now.rss_kb, base.rss_kb), per(now.pss_kb, base.pss_kb),
                  per(now.private_kb, base.private_kb), per(now.vmrss_kb, base.vmrss_kb));
    return line;
}

// ---------------------------------------------------------------------------------------------
// idle

int run_idle(const options& opt) {
    client cl(opt);
    std::vector<std::unique_ptr<conn>> conns;
    conns.reserve(opt.connections);
    std::vector<std::size_t> marks = opt.checkpoints;
    marks.push_back(opt.connections);
    std::sort(marks.begin(), marks.end());

    const memory base = read_memory(opt.pid);
    const auto t0 = clock_type::now();
    std::size_t started = 0, pending = 0, idle = 0, failed = 0, closed_idle = 0;
    const auto on_change = [&](conn& c, state before) {
        if (before == c.st) return;
        if (c.st == state::idle) {
            --pending;
            ++idle;
        } else if (c.st == state::failed) {
            if (before == state::idle) {
                --idle;
                ++closed_idle;
            } else {
                --pending;
                ++failed;
            }
            cl.close_conn(c, false);
        }
    };
    for (std::size_t mark : marks) {
        while (idle + failed + closed_idle < mark && !stop_requested) {
            while (started < mark && pending < opt.in_flight) {
                conns.push_back(std::make_unique<conn>());
                conn& c = *conns.back();
                ++started;
                ++pending;
                if (!cl.start(c)) on_change(c, state::connecting);
            }
            cl.poll_once(10, on_change);
        }
        const auto open_ms =
            std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
        const auto settle_end = clock_type::now() + opt.settle;
        while (clock_type::now() < settle_end && !stop_requested)
            cl.poll_once(10, on_change);
        const memory now = read_memory(opt.pid);
        std::printf("idle n=%zu failed=%zu closed_while_idle=%zu open_ms=%.0f version=%s "
                    "cipher=%s %s\n",
                    idle, failed, closed_idle, open_ms, cl.version_seen.c_str(),
                    cl.cipher_seen.c_str(),
                    kb_fields(now, base, std::max<std::size_t>(idle, 1)).c_str());
        std::fflush(stdout);
        cl.errors.print("tls_clients");
    }
    std::printf("holding\n");
    std::fflush(stdout);
    const auto hold_end = clock_type::now() + opt.hold;
    while (!stop_requested && (opt.hold.count() == 0 || clock_type::now() < hold_end))
        cl.poll_once(50, on_change);
    std::size_t closed = 0;
    for (auto& c : conns)
        if (c->fd >= 0) {
            cl.close_conn(*c, false);
            ++closed;
        }
    cl.errors.print("tls_clients");
    std::printf("closed %zu closed_while_idle=%zu\n", closed, closed_idle);
    return failed == 0 && closed_idle == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// handshakes

int run_handshakes(const options& opt) {
    client cl(opt);
    std::vector<conn> slots(opt.connections);
    for (std::size_t i = 0; i < slots.size(); ++i)
        slots[i].slot = i;
    bool measuring = false;
    std::size_t full = 0, resumed = 0, failed = 0;
    const auto restart = [&](conn& c) {
        for (int tries = 0; !cl.start(c); ++tries) {
            if (measuring) ++failed;
            cl.close_conn(c, false);
            if (tries == 100) throw std::runtime_error("cannot open a connection: " + c.error);
        }
    };
    const auto on_change = [&](conn& c, state) {
        if (c.st == state::done) {
            if (measuring) ++(c.resumed ? resumed : full);
            cl.close_conn(c, true);
            restart(c);
        } else if (c.st == state::failed) {
            if (measuring) ++failed;
            cl.close_conn(c, false);
            restart(c);
        }
    };
    for (auto& c : slots)
        restart(c);
    const auto warm_end = clock_type::now() + opt.warmup;
    while (clock_type::now() < warm_end && !stop_requested)
        cl.poll_once(10, on_change);
    cl.errors.print("tls_clients (warm-up)");
    measuring = true;
    const long long ticks0 = cpu_ticks(opt.pid);
    const double client0 = client_cpu_s();
    const auto t0 = clock_type::now();
    const auto end = t0 + opt.length;
    while (clock_type::now() < end && !stop_requested)
        cl.poll_once(10, on_change);
    const long long ticks1 = cpu_ticks(opt.pid);
    const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    const double client1 = client_cpu_s();
    const std::size_t n = full + resumed;
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double server_s =
        ticks0 >= 0 && ticks1 >= 0 ? static_cast<double>(ticks1 - ticks0) / hz : -1;
    std::printf("handshakes n=%zu per_s=%.0f full=%zu resumed=%zu failed=%zu server_cpu_s=%.2f "
                "server_us_per_handshake=%.1f client_cpu_s=%.2f seconds=%.2f version=%s "
                "cipher=%s\n",
                n, static_cast<double>(n) / seconds, full, resumed, failed, server_s,
                n > 0 && server_s >= 0 ? server_s * 1e6 / static_cast<double>(n) : -1.0,
                client1 - client0, seconds, cl.version_seen.c_str(), cl.cipher_seen.c_str());
    cl.errors.print("tls_clients");
    for (auto& c : slots)
        cl.close_conn(c, false);
    return failed == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    std::signal(SIGUSR1, on_signal);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);
    return tool::run_main<options>(
        {"tls_clients", usage, 2, 64}, argc, argv, read_flag, check, [](const options& opt) {
            return opt.mode == mode_kind::idle ? run_idle(opt) : run_handshakes(opt);
        });
}

#pragma once

// A blocking loopback client for integration tests: every wait has a deadline, so a broken
// server fails a test instead of hanging it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>

namespace tarry::test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// A loopback port nobody uses, for a server started as a child process. It is taken below the
/// kernel's ephemeral range (32768 and up): a port the kernel picks for port 0 may also be given,
/// before the server binds it, to the local end of a client connection another test opens (one
/// CI run's tarry found its admin port so taken). Random, and checked by a bind, so that tests
/// running side by side rarely pick the same one.
inline std::uint16_t free_port() {
    static std::minstd_rand rng(static_cast<std::uint32_t>(
        std::chrono::steady_clock::now().time_since_epoch().count() ^ ::getpid()));
    for (int i = 0; i < 1000; ++i) {
        const auto port = static_cast<std::uint16_t>(20000 + rng() % 12000);
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        if (free) return port;
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0); // the kernel's choice, as a last resort
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return bound ? ntohs(a.sin_port) : std::uint16_t{0};
}

struct response {
    int status = 0;
    std::string head;
    std::string body;
    [[nodiscard]] bool has(const std::string& field_line) const {
        return head.find("\r\n" + field_line + "\r\n") != std::string::npos;
    }
};

/// A Unix socket to connect to.
struct unix_path {
    std::string path;
};

class test_client {
public:
    /// Connects to 127.0.0.1:port; from `source` (another loopback address) when given.
    explicit test_client(std::uint16_t port, int rcvbuf = 0, const char* source = nullptr) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (rcvbuf != 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        if (source != nullptr) {
            sockaddr_in from{};
            from.sin_family = AF_INET;
            ::inet_pton(AF_INET, source, &from.sin_addr);
            // Not connected from the address asked for is not connected at all.
            if (::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) return;
        }
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    explicit test_client(const unix_path& to) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, to.path.c_str(), sizeof a.sun_path - 1);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    test_client(const test_client&) = delete;
    test_client& operator=(const test_client&) = delete;
    ~test_client() {
        if (fd_ >= 0) ::close(fd_);
    }

    [[nodiscard]] bool connected() const { return connected_; }
    [[nodiscard]] int fd() const { return fd_; }

    /// Half-closes: the server reads EOF after what was sent; responses can still be read.
    void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

    bool send(const std::string& bytes) {
        std::size_t off = 0;
        while (off < bytes.size()) {
            const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
            if (n <= 0) return false;
            off += static_cast<std::size_t>(n);
        }
        return true;
    }

    /// Reads one response: Content-Length framed, chunked (the body is decoded), or read to
    /// the close. nullopt on timeout or an early close.
    std::optional<response> read_response(steady::duration timeout = 5s) {
        const auto deadline = steady::now() + timeout;
        std::size_t end;
        while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
            if (!fill(deadline)) return std::nullopt;
        response r;
        r.head = buf_.substr(0, end + 2);
        r.status = std::stoi(r.head.substr(9, 3));
        if (r.has("Transfer-Encoding: chunked"))
            return read_chunked(std::move(r), end + 4, deadline);
        if (r.head.find("\r\nContent-Length: ") == std::string::npos && r.status / 100 != 1 &&
            r.status != 204 && r.status != 304 && r.has("Connection: close")) {
            while (fill(deadline)) {
            }
            if (!closed_) return std::nullopt;
            r.body = buf_.substr(end + 4);
            buf_.clear();
            return r;
        }
        std::size_t length = 0;
        if (const auto at = r.head.find("\r\nContent-Length: "); at != std::string::npos)
            length = std::stoul(r.head.substr(at + 18));
        const bool informational = r.status / 100 == 1;
        if (informational) length = 0;
        while (buf_.size() < end + 4 + length)
            if (!fill(deadline)) return std::nullopt;
        r.body = buf_.substr(end + 4, length);
        buf_.erase(0, end + 4 + length);
        return r;
    }

    std::optional<response> read_chunked(response r, std::size_t at, steady::time_point deadline) {
        for (;;) {
            std::size_t eol;
            while ((eol = buf_.find("\r\n", at)) == std::string::npos)
                if (!fill(deadline)) return std::nullopt;
            const std::size_t size = std::stoul(buf_.substr(at, eol - at), nullptr, 16);
            while (buf_.size() < eol + 2 + size + 2)
                if (!fill(deadline)) return std::nullopt;
            r.body += buf_.substr(eol + 2, size);
            at = eol + 2 + size + 2;
            if (size == 0) break; // no trailers from the servers under test
        }
        buf_.erase(0, at);
        return r;
    }

    /// Waits until the server closes. Returns when it saw the close, or nullopt on timeout.
    /// Bytes that arrive meanwhile are kept (read_response can still return them).
    std::optional<steady::time_point> wait_closed(steady::duration timeout = 5s) {
        const auto deadline = steady::now() + timeout;
        while (!closed_)
            if (!fill(deadline) && !closed_) return std::nullopt;
        return closed_at_;
    }

    /// Waits until the bytes received and not yet read contain `text` (the head of a response
    /// that streams, say). False on timeout or a close before it.
    bool wait_for(const std::string& text, steady::duration timeout = 5s) {
        const auto deadline = steady::now() + timeout;
        while (buf_.find(text) == std::string::npos)
            if (!fill(deadline)) return false;
        return true;
    }

    [[nodiscard]] bool closed() const { return closed_; }
    [[nodiscard]] const std::string& pending() const { return buf_; }

private:
    bool fill(steady::time_point deadline) {
        if (closed_) return false;
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
        if (left.count() <= 0) return false;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
        char tmp[65536];
        const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n <= 0) {
            closed_ = true;
            closed_at_ = steady::now();
            return false;
        }
        buf_.append(tmp, static_cast<std::size_t>(n));
        return true;
    }

    int fd_ = -1;
    bool connected_ = false;
    bool closed_ = false;
    steady::time_point closed_at_{};
    std::string buf_;
};

inline const std::string get = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

/// Polls `pred` until it holds or a generous deadline passes.
template <class Pred> bool eventually(Pred pred, steady::duration limit = 5s) {
    const auto deadline = steady::now() + limit;
    while (!pred()) {
        if (steady::now() > deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

/// A sample's value in Prometheus text ("tarry_tls_handshakes_total{result=\"full\"}"), or -1
/// when absent.
inline double sample(const std::string& metrics, const std::string& series) {
    const std::string text = "\n" + metrics;
    const std::string at = "\n" + series + " ";
    const auto p = text.find(at);
    if (p == std::string::npos) return -1;
    return std::stod(text.substr(p + at.size()));
}

/// Reads a raw socket until the end: the bytes, and whether it ended with a FIN (not a reset,
/// nor the deadline; a failed recv appends "[recv: REASON]").
inline std::pair<std::string, bool> read_to_end(int fd, steady::duration timeout = 5s) {
    std::string got;
    const auto deadline = steady::now() + timeout;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
        if (left.count() <= 0) return {got, false};
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return {got, false};
        char buf[4096];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0) return {got, true};
        if (n < 0) return {got + "[recv: " + std::strerror(errno) + "]", false};
        got.append(buf, static_cast<std::size_t>(n));
    }
}

} // namespace tarry::test

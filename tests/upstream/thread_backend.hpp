#pragma once

// A backend written here, on threads, whose misbehaviour is exact: it closes idle connections
// at a chosen time without saying so, closes a reused connection on the request it just read
// (the keep-alive race, made deterministic), or holds its answers until several requests are
// in flight (so that as many upstream connections are open at once).
#include "proxy_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace tarry::test {

class thread_backend {
public:
    struct behaviour {
        std::chrono::milliseconds idle_close{0}; ///< close a connection idle this long; 0: never
        bool die_on_second = false; ///< read a connection's second request, then close unanswered
        /// Answer nothing until this many requests have arrived (on any connection), so that
        /// that many upstream connections are open at once; bounded by 10 s.
        int answer_after = 0;
        /// The whole response to every request (a well-formed 2-byte "ok" by default).
        std::string answer =
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";
    };

    /// Listens on `port` (0: any free one; a port given back by a stopped backend: a restart).
    explicit thread_backend(behaviour b, std::uint16_t port = 0)
        : hold_until(b.answer_after), b_(b) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        // A restart on a port something else took meanwhile fails here, not as a silent port 0.
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            const int err = errno;
            ::close(fd_);
            throw std::system_error(err, std::generic_category(),
                                    "backend: bind to port " + std::to_string(port));
        }
        ::listen(fd_, 64);
        socklen_t len = sizeof a;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    thread_backend(const thread_backend&) = delete;
    thread_backend& operator=(const thread_backend&) = delete;
    ~thread_backend() {
        stop_ = true;
        acceptor_.join();
        std::lock_guard lock(mu_);
        for (auto& t : threads_)
            t.join();
        ::close(fd_);
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    std::atomic<int> connections{0};
    std::atomic<int> open{0}; ///< connections the backend has not closed or seen closed
    /// Answers wait until this many requests have arrived; lower it to release them.
    std::atomic<int> hold_until;
    std::atomic<int> requests{0};
    std::atomic<int> posts{0};

private:
    void accept_loop() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            const int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) continue;
            ++connections;
            ++open;
            std::lock_guard lock(mu_);
            threads_.emplace_back([this, c] { serve(c); });
        }
    }

    void serve(int c) {
        std::string in;
        int served = 0;
        auto idle_since = steady::now();
        while (!stop_) {
            pollfd p{c, POLLIN, 0};
            if (::poll(&p, 1, 10) <= 0) {
                if (b_.idle_close.count() != 0 && steady::now() - idle_since >= b_.idle_close)
                    break;
                continue;
            }
            char buf[4096];
            const ssize_t n = ::recv(c, buf, sizeof buf, 0);
            if (n <= 0) break;
            in.append(buf, static_cast<std::size_t>(n));
            const auto end = in.find("\r\n\r\n");
            if (end == std::string::npos) continue;
            std::size_t length = 0;
            if (const auto at = in.find("Content-Length: "); at != std::string::npos && at < end)
                length = std::stoul(in.substr(at + 16));
            if (in.size() < end + 4 + length) continue;
            ++requests;
            if (in.starts_with("POST ")) ++posts;
            in.erase(0, end + 4 + length);
            if (b_.die_on_second && served == 1) break;
            ++served;
            for (const auto until = steady::now() + 10s;
                 requests < hold_until && steady::now() < until && !stop_;)
                std::this_thread::sleep_for(1ms);
            if (::send(c, b_.answer.data(), b_.answer.size(), MSG_NOSIGNAL) < 0) break;
            idle_since = steady::now();
        }
        ::close(c);
        --open;
    }

    behaviour b_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread acceptor_;
    std::mutex mu_;
    std::vector<std::thread> threads_;
};

/// The proxy (ProxyTest) in front of one thread_backend.
class ThreadBackendProxyTest : public ProxyTest {
protected:
    std::unique_ptr<thread_backend> backend;

    void start_with(thread_backend::behaviour b) {
        backend = std::make_unique<thread_backend>(b);
        ups.servers = {
            upstream::server_address::parse("127.0.0.1:" + std::to_string(backend->port()))};
        start();
    }
    void TearDown() override {
        if (backend) backend->hold_until = 0; // no answer held past the test
        ProxyTest::TearDown();
        backend.reset();
    }
};

} // namespace tarry::test

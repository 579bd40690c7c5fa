#pragma once
// A connected pair of non-blocking unix stream sockets for the net/ tests: fd[0] is the side
// under test, fd[1] the far end.

#include <gtest/gtest.h>

#include <string>

#include <sys/socket.h>
#include <unistd.h>

namespace tarry::net {

/// A connected pair of non-blocking stream sockets, closed at the end.
struct socket_pair {
    int fd[2] = {-1, -1};
    socket_pair() { ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd); }
    socket_pair(const socket_pair&) = delete;
    socket_pair& operator=(const socket_pair&) = delete;
    ~socket_pair() {
        for (int f : fd)
            if (f >= 0) ::close(f);
    }
    /// One byte of `bytes` from the far end.
    void say(const char* bytes) const { ASSERT_GT(::write(fd[1], bytes, 1), 0); }
    /// Everything waiting at the far end.
    [[nodiscard]] std::string drain() const {
        std::string got;
        char b[65536];
        for (ssize_t n; (n = ::read(fd[1], b, sizeof b)) > 0;)
            got.append(b, static_cast<std::size_t>(n));
        return got;
    }
};

} // namespace tarry::net

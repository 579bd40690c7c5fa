#pragma once

#include <tarry/tls/stream.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace tarry::server {

/// The TLS state of a worker's TLS connections, found by the connection's descriptor: an index,
/// not a hash, on every record, and nothing at all for a plain connection. Descriptors are
/// small and reused lowest first, so the table stays as long as the most connections the
/// worker held at once (8 bytes a descriptor).
class tls_streams {
public:
    /// A new stream for `fd` (replacing none: the descriptor's last one went at its close).
    /// Throws std::bad_alloc.
    tls::stream& open(int fd) {
        const auto i = static_cast<std::size_t>(fd);
        if (i >= by_fd_.size()) by_fd_.resize(std::max(i + 1, by_fd_.size() * 2));
        by_fd_[i] = std::make_unique<tls::stream>();
        return *by_fd_[i];
    }
    /// The stream of `fd`, which has one.
    [[nodiscard]] tls::stream& at(int fd) const noexcept {
        return *by_fd_[static_cast<std::size_t>(fd)];
    }
    /// The stream of `fd`, or null.
    [[nodiscard]] tls::stream* find(int fd) const noexcept {
        const auto i = static_cast<std::size_t>(fd);
        return i < by_fd_.size() ? by_fd_[i].get() : nullptr;
    }
    /// Frees the stream of `fd`, if any (before the descriptor is closed and reused).
    void erase(int fd) noexcept {
        const auto i = static_cast<std::size_t>(fd);
        if (i < by_fd_.size()) by_fd_[i].reset();
    }

private:
    std::vector<std::unique_ptr<tls::stream>> by_fd_;
};

} // namespace tarry::server

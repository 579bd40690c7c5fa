#pragma once

#include <tarry/http/session.hpp>

#include <filesystem>
#include <memory>

namespace spdlog {
class logger;
}

namespace tarry::server {

/// The access log: one line per response in the Common Log Format
///   127.0.0.1 - - [21/Nov/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 13
/// The target is written with DQUOTE, backslash, control bytes and bytes >= 0x80 as \xHH, as
/// nginx does, so no request can end the quoted field or the line and forge a log entry.
/// Off by default. When off, a connection passes no observer to its session: the cost is one
/// null check per read. When on, lines go through spdlog's file sink, shared by all workers.
class access_log {
public:
    /// Opens `path` for appending ("-": standard output). Throws std::exception on failure.
    explicit access_log(const std::filesystem::path& path);

    /// One response on the connection with socket `fd`.
    void write(int fd, const http::request_head* request, unsigned status,
               std::uint64_t body_bytes) noexcept;

    void flush() noexcept;

private:
    std::shared_ptr<spdlog::logger> logger_;
};

/// What a connection hands its session while logging: the connection's socket, for the address.
class connection_log final : public http::exchange_log {
public:
    connection_log(access_log& log, int fd) noexcept : log_(log), fd_(fd) {}
    void on_response(const http::request_head* request, unsigned status,
                     std::uint64_t body_bytes) noexcept override {
        log_.write(fd_, request, status, body_bytes);
    }

private:
    access_log& log_;
    int fd_;
};

} // namespace tarry::server

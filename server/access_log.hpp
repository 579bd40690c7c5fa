#pragma once

#include <tarry/http/session.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace tarry::server {

/// The access log: one line per response in the Common Log Format
///   127.0.0.1 - - [21/Nov/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 13
/// or nginx's combined (with "REFERER" "USER-AGENT"), or one JSON object per line. What the
/// client sent (target, referer, user agent) is written with DQUOTE, backslash, control bytes and
/// bytes >= 0x7f as \xHH (\u00HH in JSON), as nginx does, so no request can end a quoted field
/// or the line and forge a log entry.
/// Off by default. When off, a connection passes no observer to its session: the cost is one
/// null check per read. When on, one instance is shared by all workers.
///
/// Lines are buffered, as nginx's `access_log ... buffer=64k flush=1s`: a write(2) when 64 KiB
/// are waiting, and otherwise within a second of the first waiting line (on_waiting() tells the
/// owner, who arms one timer then; nothing wakes an idle server). reopen() opens the path again
/// (SIGUSR1 after logrotate moved the file), losing no line. Not spdlog's file sink: it cannot
/// reopen its file, and its flush is per line or never.
class access_log {
public:
    enum class format {
        common,   ///< 127.0.0.1 - - [21/Nov/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 13
        combined, ///< common, then "REFERER" "USER-AGENT" (nginx's default)
        json,     ///< {"time":"2026-11-21T13:55:36Z","remote_addr":"127.0.0.1",...}
    };
    /// "common", "combined" or "json" (the configuration checked it).
    static format format_named(std::string_view name) noexcept;

    /// Opens `path` for appending ("-": standard output). Throws std::system_error on failure.
    explicit access_log(const std::filesystem::path& path, format f = format::common);
    access_log(const access_log&) = delete;
    access_log& operator=(const access_log&) = delete;
    ~access_log();

    /// One response to the client at `peer` ("-" when empty: not known).
    void write(std::string_view peer, const http::request_head* request, unsigned status,
               std::uint64_t body_bytes) noexcept;

    /// Writes what is buffered.
    void flush() noexcept;
    /// Flushes, then opens the path again (logrotate renamed the file; lines go to a new one).
    /// False, the old file kept, if it cannot be opened.
    bool reopen() noexcept;
    /// Called, from the writing thread, when a line starts waiting in an empty buffer: the
    /// owner flushes within a second. Set before the log is shared.
    void on_waiting(std::function<void()> f) { waiting_ = std::move(f); }

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

private:
    void write_out() noexcept; ///< with mu_ held

    std::filesystem::path path_;
    format format_;
    std::mutex mu_;
    std::string buf_; ///< lines not yet written
    int fd_ = -1;
    bool own_fd_ = false; ///< not standard output
    std::function<void()> waiting_;
};

} // namespace tarry::server

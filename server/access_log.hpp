#pragma once

#include <tarry/http/response_record.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace tarry::server {

/// What the connection knows of a response, beside the protocol's record of it.
struct access_context {
    std::string_view peer;         ///< the client's address ("-" when empty: not known)
    std::int64_t request_us = -1;  ///< first byte of the request to the response's end
    bool https = false;            ///< $scheme
    std::uint16_t server_port = 0; ///< $server_port; 0: none (a Unix socket)
    std::string_view tls_protocol; ///< $ssl_protocol ("TLSv1.3"); empty: not TLS
};

/// The access log: one line per response in the Common Log Format
///   127.0.0.1 - - [21/Nov/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 13
/// or nginx's combined (with "REFERER" "USER-AGENT"), or extended (combined, then the times,
/// upstream status, scheme, port and TLS version, where nginx's documented upstream_time format
/// puts them), or one JSON object per line. The line is written when the response is over (its
/// last byte handed to the output), so it says what was sent and how long it took.
///
/// What the client sent is escaped so that no request can end a quoted field or the line and
/// forge an entry. The text formats do as nginx's escape=default: DQUOTE, backslash, control
/// bytes, DEL and every byte >= 0x80 as \xHH, so every byte is kept. JSON (RFC 8259) keeps valid
/// UTF-8 as it is, writes each byte that is not part of a valid UTF-8 sequence as \ufffd (the
/// replacement character), DQUOTE and backslash as \" and \\, and control characters (C0, DEL,
/// C1) as \u00XX: every line is valid UTF-8 JSON whatever the client sent.
///
/// Off by default. When off, sessions keep no record of their responses and read no clock for
/// one: the cost is a branch per response. When on, one instance is shared by all workers.
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
        /// combined, then rt=0.012 uct="0.001" uht="0.010" urt="0.012" us="200" scheme=http
        /// port=8080 tls=- (nginx's $request_time, $upstream_*_time, $upstream_status, $scheme,
        /// $server_port, $ssl_protocol)
        extended,
        json, ///< {"time":"2026-11-21T13:55:36Z","remote_addr":"127.0.0.1",...}
    };
    /// "common", "combined", "extended" or "json" (the configuration checked it).
    static format format_named(std::string_view name) noexcept;

    /// Opens `path` for appending ("-": standard output). Throws std::system_error on failure.
    explicit access_log(const std::filesystem::path& path, format f = format::common);
    access_log(const access_log&) = delete;
    access_log& operator=(const access_log&) = delete;
    ~access_log();

    /// One response (or a request its client abandoned).
    void write(const access_context& c, const http::response_record& r) noexcept;

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

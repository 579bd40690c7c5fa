#include "access_log.hpp"

#include <boost/beast/http/verb.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>

namespace tarry::server {
namespace {

/// Whether nginx's access log escapes `c`: DQUOTE and backslash, which would end or confuse
/// the quoted request field, control bytes (a newline would start a forged line, ESC drives
/// terminals), DEL and everything >= 0x80.
bool needs_escape(unsigned char c) noexcept {
    return c == '"' || c == '\\' || c < 0x20 || c >= 0x7f;
}

/// `s` with every byte needs_escape() picks written as `prefix` and two hex digits (from
/// `digits`); the parser already refuses most of these in a target, but the log does not rely
/// on it.
std::string escaped_with(std::string_view s, std::string_view prefix, const char* digits) {
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (needs_escape(c)) {
            out += prefix;
            out += digits[c >> 4];
            out += digits[c & 0xf];
        } else {
            out += ch;
        }
    }
    return out;
}

/// \xHH, as nginx writes its log lines.
std::string escaped(std::string_view s) {
    return escaped_with(s, "\\x", "0123456789ABCDEF");
}

/// For a JSON string: \u00HH, so the line stays ASCII and valid JSON whatever the client sent.
std::string json_escaped(std::string_view s) {
    return escaped_with(s, "\\u00", "0123456789abcdef");
}

int open_log(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path.string());
    return fd;
}

/// The most a buffer holds before it is written at once.
constexpr std::size_t buffer_bytes = 64 << 10;

} // namespace

access_log::format access_log::format_named(std::string_view name) noexcept {
    if (name == "combined") return format::combined;
    if (name == "json") return format::json;
    return format::common;
}

access_log::access_log(const std::filesystem::path& path, format f) : path_(path), format_(f) {
    if (path == "-") {
        fd_ = STDOUT_FILENO;
    } else {
        fd_ = open_log(path);
        own_fd_ = true;
    }
    buf_.reserve(buffer_bytes);
}

access_log::~access_log() {
    flush();
    if (own_fd_) ::close(fd_);
}

void access_log::write(std::string_view peer_text, const http::request_head* request,
                       unsigned status, std::uint64_t body_bytes) noexcept {
    bool first = false;
    try {
        const std::time_t now = std::time(nullptr);
        std::tm tm{};
        gmtime_r(&now, &tm);
        fmt::memory_buffer line;
        const auto out = std::back_inserter(line);
        const std::string_view peer = peer_text.empty() ? "-" : peer_text;
        if (format_ == format::json) {
            fmt::format_to(out, R"({{"time":"{:%Y-%m-%dT%H:%M:%SZ}","remote_addr":"{}",)", tm,
                           peer);
            if (request != nullptr) {
                fmt::format_to(
                    out, R"("method":"{}","target":"{}","protocol":"HTTP/{}.{}",)",
                    json_escaped(std::string_view(boost::beast::http::to_string(request->method))),
                    json_escaped(request->target), request->version / 10, request->version % 10);
            }
            fmt::format_to(out, R"("status":{},"body_bytes":{})", status, body_bytes);
            if (request != nullptr) {
                fmt::format_to(out, R"(,"referer":"{}","user_agent":"{}")",
                               json_escaped(request->referer), json_escaped(request->user_agent));
            }
            fmt::format_to(out, "}}\n");
        } else {
            if (request != nullptr) {
                fmt::format_to(
                    out, "{} - - [{:%d/%b/%Y:%H:%M:%S} +0000] \"{} {} HTTP/{}.{}\" {} {}", peer, tm,
                    std::string_view(boost::beast::http::to_string(request->method)),
                    escaped(request->target), request->version / 10, request->version % 10, status,
                    body_bytes);
            } else {
                fmt::format_to(out, "{} - - [{:%d/%b/%Y:%H:%M:%S} +0000] \"-\" {} {}", peer, tm,
                               status, body_bytes);
            }
            if (format_ == format::combined) {
                // nginx writes "-" for a field the request did not have.
                const auto field = [request](std::string http::request_head::*f) {
                    return request == nullptr || (request->*f).empty() ? std::string("-")
                                                                       : escaped(request->*f);
                };
                fmt::format_to(out, " \"{}\" \"{}\"", field(&http::request_head::referer),
                               field(&http::request_head::user_agent));
            }
            line.push_back('\n');
        }
        const std::lock_guard lock(mu_);
        first = buf_.empty();
        buf_.append(line.data(), line.size());
        if (buf_.size() >= buffer_bytes) {
            write_out();
            first = false;
        }
    } catch (...) {
        return; // a log line is never worth a connection
    }
    if (first && waiting_) {
        try {
            waiting_();
        } catch (...) {
            // not armed: the next 64 KiB, a reopen or the stop writes it
        }
    }
}

void access_log::write_out() noexcept {
    std::size_t off = 0;
    while (off < buf_.size()) {
        const ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // a full disk loses these lines, not the server
        off += static_cast<std::size_t>(n);
    }
    buf_.clear();
}

void access_log::flush() noexcept {
    const std::lock_guard lock(mu_);
    write_out();
}

bool access_log::reopen() noexcept {
    if (!own_fd_) return true;
    int fd = -1;
    try {
        fd = open_log(path_);
    } catch (...) {
        return false;
    }
    const std::lock_guard lock(mu_);
    write_out(); // the lines before the rotation go to the old file
    ::close(fd_);
    fd_ = fd;
    return true;
}

} // namespace tarry::server

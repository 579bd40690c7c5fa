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

using line_buffer = fmt::memory_buffer;

void put(line_buffer& out, std::string_view s) {
    out.append(s.data(), s.data() + s.size());
}

void put_hex(line_buffer& out, std::string_view prefix, unsigned char c, const char* digits) {
    put(out, prefix);
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 0xf]);
}

/// `s` as nginx's escape=default writes it: DQUOTE, backslash, control bytes (a newline would
/// start a forged line, ESC drives terminals), DEL and every byte >= 0x80 as \xHH. Written into
/// the line, not a string of its own: nothing is allocated per field.
void put_escaped(line_buffer& out, std::string_view s) {
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f)
            put_hex(out, "\\x", c, "0123456789ABCDEF");
        else
            out.push_back(ch);
    }
}

/// The length of the valid UTF-8 sequence (RFC 3629, 4: no overlong form, no surrogate, nothing
/// past U+10FFFF) at the start of `s`, whose first byte is >= 0x80; 0 if there is none.
std::size_t utf8_sequence(std::string_view s) noexcept {
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto tail = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xbf) {
        return i < s.size() && at(i) >= lo && at(i) <= hi;
    };
    const unsigned c = at(0);
    if (c >= 0xc2 && c <= 0xdf) return tail(1) ? 2 : 0;
    if (c == 0xe0) return tail(1, 0xa0) && tail(2) ? 3 : 0;
    if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return tail(1) && tail(2) ? 3 : 0;
    if (c == 0xed) return tail(1, 0x80, 0x9f) && tail(2) ? 3 : 0; // not a surrogate
    if (c == 0xf0) return tail(1, 0x90) && tail(2) && tail(3) ? 4 : 0;
    if (c >= 0xf1 && c <= 0xf3) return tail(1) && tail(2) && tail(3) ? 4 : 0;
    if (c == 0xf4) return tail(1, 0x80, 0x8f) && tail(2) && tail(3) ? 4 : 0;
    return 0;
}

/// `s` inside a JSON string (RFC 8259, 7), so that the line is valid UTF-8 JSON whatever the
/// client sent: valid UTF-8 as it is; each byte of an invalid sequence as \ufffd; DQUOTE and
/// backslash as \" and \\; C0 controls, DEL and the C1 controls (U+0080 to U+009F, which some
/// terminals obey) as \u00XX.
void put_json(line_buffer& out, std::string_view s) {
    constexpr const char* digits = "0123456789abcdef";
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if (c == '"' || c == '\\') {
                out.push_back('\\');
                out.push_back(static_cast<char>(c));
            } else if (c < 0x20 || c == 0x7f) {
                put_hex(out, "\\u00", c, digits);
            } else {
                out.push_back(static_cast<char>(c));
            }
            ++i;
            continue;
        }
        const std::size_t n = utf8_sequence(s.substr(i));
        if (n == 0) {
            put(out, "\\ufffd");
            ++i;
        } else if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
            put_hex(out, "\\u00", static_cast<unsigned char>(s[i + 1]), digits); // C1
            i += 2;
        } else {
            put(out, s.substr(i, n));
            i += n;
        }
    }
}

/// The line's time, formatted once per second per thread (as nginx caches its time strings):
/// gmtime and the formatting cost more than the rest of a short line.
struct line_time {
    std::time_t second = -1;
    char clf[32] = {}; ///< 27/Nov/2026:13:55:36 +0000
    char iso[24] = {}; ///< 2026-11-27T13:55:36Z
    std::size_t clf_size = 0;
    std::size_t iso_size = 0;

    static const line_time& now() {
        thread_local line_time t;
        const std::time_t second = std::time(nullptr);
        if (second != t.second) {
            std::tm tm{};
            gmtime_r(&second, &tm);
            t.clf_size =
                fmt::format_to_n(t.clf, sizeof t.clf, "{:%d/%b/%Y:%H:%M:%S} +0000", tm).size;
            t.iso_size = fmt::format_to_n(t.iso, sizeof t.iso, "{:%Y-%m-%dT%H:%M:%SZ}", tm).size;
            t.second = second;
        }
        return t;
    }
    [[nodiscard]] std::string_view common() const noexcept { return {clf, clf_size}; }
    [[nodiscard]] std::string_view json() const noexcept { return {iso, iso_size}; }
};

std::string_view method_name(const http::request_head& r) noexcept {
    const auto m = boost::beast::http::to_string(r.method);
    return {m.data(), m.size()};
}

/// A duration in seconds with milliseconds, as nginx's $request_time: "0.012".
void put_seconds(line_buffer& out, std::int64_t us) {
    const std::int64_t ms = us / 1000;
    fmt::format_to(std::back_inserter(out), "{}.{:03}", ms / 1000, ms % 1000);
}

/// An upstream time for the extended format: "-" when it did not happen.
void put_upstream_time(line_buffer& out, const http::upstream_timing* u,
                       std::int64_t http::upstream_timing::*f) {
    if (u == nullptr || u->*f < 0)
        out.push_back('-');
    else
        put_seconds(out, u->*f);
}

/// The same for JSON: a number, or null.
void put_json_time(line_buffer& out, std::string_view key, std::int64_t us) {
    put(out, key);
    if (us < 0)
        put(out, "null");
    else
        put_seconds(out, us);
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
    if (name == "extended") return format::extended;
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

void access_log::write(const access_context& c, const http::response_record& r) noexcept {
    bool first = false;
    try {
        const line_time& when = line_time::now();
        line_buffer line; // on the stack unless the client sent long fields
        const auto out = std::back_inserter(line);
        const std::string_view peer = c.peer.empty() ? "-" : c.peer;
        const http::request_head* request = r.request;
        const http::upstream_timing* up = r.upstream;
        if (format_ == format::json) {
            fmt::format_to(out, R"({{"time":"{}","remote_addr":"{}",)", when.json(), peer);
            if (!r.received.empty()) {
                // As it came: a request that never parsed, or a method this server does not know.
                put(line, R"("request":")");
                put_json(line, r.received);
                put(line, R"(",)");
            } else if (request != nullptr) {
                put(line, R"("method":")");
                put_json(line, method_name(*request));
                put(line, R"(","target":")");
                put_json(line, request->target);
                fmt::format_to(out, R"(","protocol":"HTTP/{}.{}",)", request->version / 10,
                               request->version % 10);
            }
            fmt::format_to(out, R"("status":{},"body_bytes":{})", r.status, r.body_bytes);
            if (request != nullptr) {
                put(line, R"(,"referer":")");
                put_json(line, request->referer);
                put(line, R"(","user_agent":")");
                put_json(line, request->user_agent);
                line.push_back('"');
            }
            put_json_time(line, R"(,"request_time":)", c.request_us);
            put_json_time(line, R"(,"upstream_connect_time":)", up ? up->connect_us : -1);
            put_json_time(line, R"(,"upstream_header_time":)", up ? up->header_us : -1);
            put_json_time(line, R"(,"upstream_response_time":)", up ? up->response_us : -1);
            if (up != nullptr && up->status != 0)
                fmt::format_to(out, R"(,"upstream_status":{})", up->status);
            else
                put(line, R"(,"upstream_status":null)");
            if (r.tunnel_bytes_in != 0)
                fmt::format_to(out, R"(,"tunnel_bytes_in":{})", r.tunnel_bytes_in);
            fmt::format_to(out, R"(,"scheme":"{}",)", c.https ? "https" : "http");
            if (c.server_port != 0)
                fmt::format_to(out, R"("server_port":{},)", c.server_port);
            else
                put(line, R"("server_port":null,)");
            if (c.tls_protocol.empty())
                put(line, R"("ssl_protocol":null})");
            else
                fmt::format_to(out, R"("ssl_protocol":"{}"}})", c.tls_protocol);
            line.push_back('\n');
        } else {
            fmt::format_to(out, "{} - - [{}] \"", peer, when.common());
            if (!r.received.empty()) {
                put_escaped(line, r.received);
            } else if (request != nullptr) {
                put(line, method_name(*request));
                line.push_back(' ');
                put_escaped(line, request->target);
                fmt::format_to(out, " HTTP/{}.{}", request->version / 10, request->version % 10);
            } else {
                line.push_back('-');
            }
            fmt::format_to(out, "\" {} {}", r.status, r.body_bytes);
            if (format_ == format::combined || format_ == format::extended) {
                // nginx writes "-" for a field the request did not have.
                const auto field = [&](const std::string& v) {
                    put(line, " \"");
                    if (v.empty())
                        line.push_back('-');
                    else
                        put_escaped(line, v);
                    line.push_back('"');
                };
                static const std::string none;
                field(request != nullptr ? request->referer : none);
                field(request != nullptr ? request->user_agent : none);
            }
            if (format_ == format::extended) {
                // Where nginx's documented upstream_time format puts them, then the rest.
                put(line, " rt=");
                if (c.request_us < 0)
                    line.push_back('-');
                else
                    put_seconds(line, c.request_us);
                put(line, " uct=\"");
                put_upstream_time(line, up, &http::upstream_timing::connect_us);
                put(line, "\" uht=\"");
                put_upstream_time(line, up, &http::upstream_timing::header_us);
                put(line, "\" urt=\"");
                put_upstream_time(line, up, &http::upstream_timing::response_us);
                if (up != nullptr && up->status != 0)
                    fmt::format_to(out, "\" us=\"{}\"", up->status);
                else
                    put(line, "\" us=\"-\"");
                fmt::format_to(out, " scheme={} port=", c.https ? "https" : "http");
                if (c.server_port != 0)
                    fmt::format_to(out, "{}", c.server_port);
                else
                    line.push_back('-');
                put(line, " tls=");
                put(line, c.tls_protocol.empty() ? std::string_view("-") : c.tls_protocol);
                if (r.tunnel_bytes_in != 0) fmt::format_to(out, " in={}", r.tunnel_bytes_in);
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

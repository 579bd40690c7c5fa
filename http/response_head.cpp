#include "response_head.hpp"

#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <boost/beast/http/status.hpp>

#include <charconv>
#include <cstring>

namespace tarry::http {

std::string_view reason(unsigned status) noexcept {
    return boost::beast::http::obsolete_reason(boost::beast::http::int_to_status(status));
}

namespace {

/// Writes at a cursor into room already made: the constant pieces are copies of known size,
/// which the compiler turns into a few moves, instead of a capacity check per append.
struct head_writer {
    char* p;
    void put(std::string_view s) noexcept {
        if (s.empty()) return; // an empty view may hold a null pointer, which memcpy may not take
        std::memcpy(p, s.data(), s.size());
        p += s.size();
    }
    template <std::size_t N> void put(const char (&s)[N]) noexcept {
        std::memcpy(p, s, N - 1);
        p += N - 1;
    }
    void number(std::uint64_t n) noexcept { p = std::to_chars(p, p + 20, n).ptr; }
};

} // namespace

void append_head(std::string& out, const response_head& head, std::string_view date) {
    const std::string_view why = reason(head.status);
    // Everything but the variable parts fits in 160 bytes (the longest line set: status line
    // frame, Server, Date frame, Content-Type frame, Content-Length with 20 digits,
    // Connection: keep-alive, Keep-Alive with 10 digits, CRLFs).
    const std::size_t room =
        160 + why.size() + date.size() + head.content_type.size() + head.extra_fields.size();
    const std::size_t at = out.size();
    out.resize(at + room);
    head_writer w{out.data() + at};
    w.put("HTTP/1.1 ");
    w.number(head.status);
    w.put(" ");
    w.put(why);
    if (head.server_date) {
        w.put("\r\nServer: tarry\r\nDate: ");
        w.put(date);
    }
    if (!head.content_type.empty()) {
        w.put("\r\nContent-Type: ");
        w.put(head.content_type);
    }
    if (head.chunked) {
        w.put("\r\nTransfer-Encoding: chunked");
    } else if (!head.length_unknown) {
        w.put("\r\nContent-Length: ");
        w.number(head.content_length);
    }
    if (head.close) {
        w.put("\r\nConnection: close");
    } else {
        if (head.keep_alive_field) w.put("\r\nConnection: keep-alive");
        if (head.keep_alive_timeout_s != 0) {
            w.put("\r\nKeep-Alive: timeout=");
            w.number(head.keep_alive_timeout_s);
        }
    }
    w.put("\r\n");
    w.put(head.extra_fields);
    w.put("\r\n");
    out.resize(static_cast<std::size_t>(w.p - out.data()));
}

} // namespace tarry::http

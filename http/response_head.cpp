#include "response_head.hpp"

#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <boost/beast/http/status.hpp>

#include <charconv>

namespace tarry::http {

std::string_view reason(unsigned status) noexcept {
    return boost::beast::http::obsolete_reason(boost::beast::http::int_to_status(status));
}

void append_head(std::string& out, const response_head& head, std::string_view date) {
    char digits[24];
    out.append("HTTP/1.1 ");
    auto r = std::to_chars(digits, digits + sizeof digits, head.status);
    out.append(digits, r.ptr);
    out.push_back(' ');
    out.append(reason(head.status));
    if (head.server_date) {
        out.append("\r\nServer: tarry\r\nDate: ");
        out.append(date);
    }
    if (!head.content_type.empty()) {
        out.append("\r\nContent-Type: ");
        out.append(head.content_type);
    }
    if (head.chunked) {
        out.append("\r\nTransfer-Encoding: chunked");
    } else if (!head.length_unknown) {
        out.append("\r\nContent-Length: ");
        r = std::to_chars(digits, digits + sizeof digits, head.content_length);
        out.append(digits, r.ptr);
    }
    if (head.close) {
        out.append("\r\nConnection: close");
    } else {
        if (head.keep_alive_field) out.append("\r\nConnection: keep-alive");
        if (head.keep_alive_timeout_s != 0) {
            out.append("\r\nKeep-Alive: timeout=");
            r = std::to_chars(digits, digits + sizeof digits, head.keep_alive_timeout_s);
            out.append(digits, r.ptr);
        }
    }
    out.append("\r\n");
    out.append(head.extra_fields);
    out.append("\r\n");
}

} // namespace tarry::http

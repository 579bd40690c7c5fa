#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tarry::http {

/// The fields of a response this server writes. Composed by hand into the connection's output
/// buffer: Beast's basic_fields allocates a node per field, which would be per-request heap
/// churn on the hottest path.
struct response_head {
    unsigned status = 200;
    std::string_view content_type; ///< empty: no Content-Type
    std::uint64_t content_length = 0;
    std::string_view extra_fields;     ///< whole lines, each ending in CRLF (e.g. Allow)
    bool close = false;                ///< Connection: close
    bool keep_alive_field = false;     ///< Connection: keep-alive (an HTTP/1.0 client asked)
    unsigned keep_alive_timeout_s = 0; ///< Keep-Alive: timeout=N when kept alive; 0: omitted
    bool length_unknown =
        false;               ///< no Content-Length: chunked (the session decides) or to the close
    bool chunked = false;    ///< Transfer-Encoding: chunked instead of Content-Length
    bool server_date = true; ///< false: Server and Date are in extra_fields (proxied)
};

/// The head of a small text/plain response whose body is `length` bytes.
inline response_head text_head(unsigned status, std::uint64_t length) noexcept {
    response_head head;
    head.status = status;
    head.content_type = "text/plain";
    head.content_length = length;
    return head;
}

/// Appends the status line and fields, through the empty line, to `out`.
void append_head(std::string& out, const response_head& head, std::string_view date);

/// The reason phrase for `status` ("OK", "Not Found", ...).
std::string_view reason(unsigned status) noexcept;

} // namespace tarry::http

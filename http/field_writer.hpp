#pragma once

// The one way tarry writes header fields, numbers and chunk framing into a buffer: the session,
// the static origin and the proxy all go through these.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace tarry::http {

/// `n` in `base` (10, or 16 for chunk sizes and ETags), without a sign or leading zeros.
inline void append_number(std::string& out, std::uint64_t n, int base = 10) {
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, n, base);
    out.append(digits, r.ptr);
}

/// "Name: value\r\n".
inline void append_field(std::string& out, std::string_view name, std::string_view value) {
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
}

/// A chunk's size line, "1a2b\r\n": its data and CRLF follow.
inline void append_chunk_size(std::string& out, std::size_t size) {
    append_number(out, size, 16);
    out.append("\r\n");
}

/// One whole chunk of a chunked body: size line, data, CRLF.
inline void append_chunk(std::string& out, std::string_view data) {
    append_chunk_size(out, data.size());
    out.append(data);
    out.append("\r\n");
}

} // namespace tarry::http

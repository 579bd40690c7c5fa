#include "request_checks.hpp"

#include <array>

namespace tarry::h2 {

namespace {

enum pseudo_bit : std::uint8_t {
    method_bit = 1,
    scheme_bit = 2,
    path_bit = 4,
    authority_bit = 8,
    protocol_bit = 16,
};

/// A Content-Length value: digits only (RFC 9110, 8.6), at most 18 of them; -1 otherwise.
std::int64_t parse_length(std::string_view v) noexcept {
    if (v.empty() || v.size() > 18) return -1;
    std::int64_t n = 0;
    for (char c : v) {
        if (c < '0' || c > '9') return -1;
        n = n * 10 + (c - '0');
    }
    return n;
}

} // namespace

bool connection_specific(std::string_view name) noexcept {
    // TE is not among them: "trailers" is allowed (8.2.2).
    static constexpr std::array<std::string_view, 5> names{
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"};
    for (std::string_view n : names)
        if (name == n) return true;
    return false;
}

bool valid_field_name(std::string_view name) noexcept {
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c <= 0x20 || (c >= 'A' && c <= 'Z') || c >= 0x7f) return false;
        if (c == ':' && i != 0) return false;
    }
    return true;
}

bool valid_field_value(std::string_view value) noexcept {
    for (char c : value)
        if (c == '\0' || c == '\r' || c == '\n') return false;
    if (!value.empty()) {
        const char first = value.front();
        const char last = value.back();
        if (first == ' ' || first == '\t' || last == ' ' || last == '\t') return false;
    }
    return true;
}

bool request_checks::field(std::string_view name, std::string_view value) noexcept {
    if (malformed_) return false;
    if (!valid_field_name(name) || !valid_field_value(value)) return fail();
    if (pseudo(name)) {
        if (trailers_ || regular_) return fail();
        std::uint8_t bit = 0;
        std::string_view* into = nullptr;
        if (name == ":method") {
            bit = method_bit;
            into = &method;
        } else if (name == ":scheme") {
            bit = scheme_bit;
            into = &scheme;
        } else if (name == ":path") {
            bit = path_bit;
            into = &path;
        } else if (name == ":authority") {
            bit = authority_bit;
            into = &authority;
        } else if (name == ":protocol" && connect_protocol_) {
            bit = protocol_bit;
            into = &protocol;
        } else {
            return fail(); // unknown, or a response's :status (8.3)
        }
        if ((seen_ & bit) != 0) return fail();
        seen_ |= bit;
        *into = value;
        return true;
    }
    regular_ = true;
    if (connection_specific(name)) return fail();
    if (name == "te" && value != "trailers") return fail();
    if (name == "content-length") {
        const std::int64_t n = parse_length(value);
        if (n < 0 || (content_length >= 0 && n != content_length)) return fail();
        content_length = n;
    } else if (name == "host") {
        if (!host.empty() && host != value) return fail();
        host = value;
    }
    return true;
}

bool request_checks::finish() noexcept {
    if (malformed_) return false;
    if (trailers_) return true;
    if ((seen_ & method_bit) == 0) return fail();
    if (!authority.empty() && !host.empty() && authority != host) return fail(); // 8.3.1
    if (method == "CONNECT") {
        if ((seen_ & protocol_bit) != 0) {
            // RFC 8441, 4: an extended CONNECT has all four, and a path like any request's.
            if ((seen_ & (scheme_bit | path_bit | authority_bit)) !=
                    (scheme_bit | path_bit | authority_bit) ||
                path.empty() || authority.empty() || protocol.empty())
                return fail();
            return true;
        }
        // 8.5: only :authority, the tunnel's target.
        if ((seen_ & (scheme_bit | path_bit)) != 0 || authority.empty()) return fail();
        return true;
    }
    if ((seen_ & protocol_bit) != 0) return fail();
    if ((seen_ & (scheme_bit | path_bit)) != (scheme_bit | path_bit)) return fail();
    if (path.empty()) return fail();
    if (path.front() != '/' && !(path == "*" && method == "OPTIONS")) return fail();
    return true;
}

} // namespace tarry::h2

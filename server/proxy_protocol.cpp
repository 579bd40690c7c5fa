#include "proxy_protocol.hpp"

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <optional>

namespace tarry::server {
namespace {

using status = proxy_header::status;

constexpr std::string_view v1_prefix = "PROXY ";
constexpr std::size_t v1_max_bytes = 107; // "PROXY UNKNOWN" with two full IPv6 addresses, CRLF
// Spelled with its length: the NUL in the middle would end a C string.
constexpr std::string_view v2_signature{"\r\n\r\n\0\r\nQUIT\n", 12};
constexpr std::size_t v2_fixed_bytes = 16;

proxy_header with(status s) noexcept {
    proxy_header h;
    h.what = s;
    return h;
}

proxy_header done(std::size_t length) noexcept {
    proxy_header h = with(status::done);
    h.length = length;
    return h;
}

/// `address`: 4 or 16 bytes as on the wire; `port`: network order.
proxy_header done_from(std::size_t length, int family, const void* address,
                       std::uint16_t port) noexcept {
    proxy_header h = done(length);
    h.has_source = true;
    // Built as the real structure and copied, rather than written through a cast of the storage.
    if (family == AF_INET) {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_port = port;
        std::memcpy(&sin.sin_addr, address, sizeof sin.sin_addr);
        std::memcpy(&h.source, &sin, sizeof sin);
    } else {
        sockaddr_in6 sin6{};
        sin6.sin6_family = AF_INET6;
        sin6.sin6_port = port;
        std::memcpy(&sin6.sin6_addr, address, sizeof sin6.sin6_addr);
        std::memcpy(&h.source, &sin6, sizeof sin6);
    }
    return h;
}

enum class match { whole, prefix, mismatch };

/// How the bytes from `at` (at most bytes.size()) compare with `literal`: all of it there, a
/// prefix of it so far, or a byte that differs.
match match_literal(std::string_view bytes, std::size_t at, std::string_view literal) noexcept {
    const std::string_view there = bytes.substr(at, literal.size());
    if (literal.substr(0, there.size()) != there) return match::mismatch;
    return there.size() == literal.size() ? match::whole : match::prefix;
}

/// One field of a v1 line: read, cut short by the end of what arrived, or impossible.
enum class step { ok, more, bad };

struct v1_cursor {
    std::string_view in;
    std::size_t at = 0;
};

/// A dotted quad as the spec writes it, checked byte by byte so that a bad one fails where it
/// goes wrong: four numbers 0-255 and no leading zeros (which some parsers read as octal).
class ipv4_text {
public:
    bool take(char ch) noexcept {
        if (ch == '.') {
            if (digits_ == 0 || dots_ == 3) return false;
            ++dots_;
            digits_ = 0;
            value_ = 0;
            return true;
        }
        if (ch < '0' || ch > '9' || (digits_ == 1 && value_ == 0)) return false;
        value_ = value_ * 10 + static_cast<unsigned>(ch - '0');
        ++digits_;
        return value_ <= 255;
    }
    bool complete() const noexcept { return dots_ == 3 && digits_ > 0; }

private:
    unsigned dots_ = 0;
    unsigned digits_ = 0;
    unsigned value_ = 0;
};

bool is_ipv6_char(char ch) noexcept {
    // '.': inet_ntop writes v4-mapped addresses as ::ffff:192.0.2.1, and senders use it.
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') ||
           ch == ':' || ch == '.';
}

/// An address and the single space after it, into `out` (4 or 16 bytes). The characters are
/// checked as they arrive (a TCP4 line with an IPv6 address fails at its first ':'); inet_pton
/// has the last word once the space ends the address.
step read_address(v1_cursor& c, int family, void* out) noexcept {
    const std::size_t max_chars = family == AF_INET ? 15 : INET6_ADDRSTRLEN - 1;
    char text[INET6_ADDRSTRLEN];
    std::size_t n = 0;
    ipv4_text v4;
    for (; c.at < c.in.size(); ++c.at) {
        const char ch = c.in[c.at];
        if (ch == ' ') {
            if (n == 0 || (family == AF_INET && !v4.complete())) return step::bad;
            text[n] = '\0';
            if (inet_pton(family, text, out) != 1) return step::bad;
            ++c.at;
            return step::ok;
        }
        if (n == max_chars) return step::bad;
        if (family == AF_INET ? !v4.take(ch) : !is_ipv6_char(ch)) return step::bad;
        text[n++] = ch;
    }
    return step::more;
}

/// A port and the byte `end` after it: decimal 0-65535, no sign, no leading zeros.
step read_port(v1_cursor& c, char end, std::uint16_t& port) noexcept {
    std::uint32_t value = 0;
    std::size_t digits = 0;
    for (; c.at < c.in.size(); ++c.at) {
        const char ch = c.in[c.at];
        if (ch == end) {
            if (digits == 0) return step::bad;
            port = static_cast<std::uint16_t>(value);
            ++c.at;
            return step::ok;
        }
        if (ch < '0' || ch > '9' || (digits == 1 && value == 0)) return step::bad;
        value = value * 10 + static_cast<std::uint32_t>(ch - '0');
        if (value > 65535) return step::bad;
        ++digits;
    }
    return step::more;
}

step read_byte(v1_cursor& c, char expected) noexcept {
    if (c.at == c.in.size()) return step::more;
    return c.in[c.at++] == expected ? step::ok : step::bad;
}

/// The spec has the receiver ignore whatever follows UNKNOWN up to the CRLF; a lone CR or LF
/// still ends no line.
proxy_header parse_v1_unknown(v1_cursor c) noexcept {
    const std::size_t end = c.in.find_first_of("\r\n", c.at);
    if (end == std::string_view::npos) return with(status::incomplete);
    if (c.in[end] == '\n') return with(status::malformed);
    c.at = end + 1;
    switch (read_byte(c, '\n')) {
    case step::ok:
        return done(c.at);
    case step::more:
        return with(status::incomplete);
    case step::bad:
        break;
    }
    return with(status::malformed);
}

/// What matching a literal leaves to say: nothing when it is whole, else incomplete or malformed.
std::optional<proxy_header> short_of(match m) noexcept {
    if (m == match::whole) return std::nullopt;
    return with(m == match::prefix ? status::incomplete : status::malformed);
}

/// "PROXY TCP4|TCP6 src dst sport dport\r\n" or "PROXY UNKNOWN...\r\n" in `in`, at most 107 bytes.
proxy_header parse_v1_line(std::string_view in) noexcept {
    if (const auto r = short_of(match_literal(in, 0, v1_prefix))) return *r;
    v1_cursor c{in, v1_prefix.size()};

    constexpr std::string_view tcp4 = "TCP4 ", tcp6 = "TCP6 ", unknown = "UNKNOWN";
    const match m4 = match_literal(in, c.at, tcp4);
    const match m6 = match_literal(in, c.at, tcp6);
    const match mu = match_literal(in, c.at, unknown);
    if (mu == match::whole) {
        c.at += unknown.size();
        return parse_v1_unknown(c);
    }
    int family = AF_UNSPEC;
    if (m4 == match::whole) {
        family = AF_INET;
    } else if (m6 == match::whole) {
        family = AF_INET6;
    } else if (m4 == match::prefix || m6 == match::prefix || mu == match::prefix) {
        return with(status::incomplete);
    } else {
        return with(status::malformed);
    }
    c.at += tcp4.size();

    unsigned char source[sizeof(in6_addr)];
    unsigned char destination[sizeof(in6_addr)];
    std::uint16_t source_port = 0;
    std::uint16_t destination_port = 0;
    step s = read_address(c, family, source);
    if (s == step::ok) s = read_address(c, family, destination);
    if (s == step::ok) s = read_port(c, ' ', source_port);
    if (s == step::ok) s = read_port(c, '\r', destination_port);
    if (s == step::ok) s = read_byte(c, '\n');
    if (s != step::ok) return with(s == step::more ? status::incomplete : status::malformed);
    return done_from(c.at, family, source, htons(source_port));
}

proxy_header parse_v1(std::string_view bytes) noexcept {
    // No valid line is longer: judging only these bytes makes a longer one fail on the spot.
    const std::string_view in = bytes.substr(0, v1_max_bytes);
    const proxy_header h = parse_v1_line(in);
    if (h.what != status::incomplete) return h;
    if (in.size() == v1_max_bytes) return with(status::malformed);
    // A line still open after 106 bytes can only end at 107, so its 106th byte must be the CR.
    if (in.size() == v1_max_bytes - 1 && in[v1_max_bytes - 2] != '\r') {
        return with(status::malformed);
    }
    return h;
}

unsigned byte_at(std::string_view bytes, std::size_t i) noexcept {
    return static_cast<unsigned char>(bytes[i]);
}

proxy_header parse_v2(std::string_view bytes) noexcept {
    if (const auto r = short_of(match_literal(bytes, 0, v2_signature))) return *r;

    if (bytes.size() < 13) return with(status::incomplete);
    const unsigned version = byte_at(bytes, 12) >> 4;
    const unsigned command = byte_at(bytes, 12) & 0xf;
    constexpr unsigned local = 0, proxy = 1;
    if (version != 2 || (command != local && command != proxy)) return with(status::malformed);

    if (bytes.size() < 14) return with(status::incomplete);
    // LOCAL (the balancer's own health check) ignores the family, as the spec says.
    std::size_t address_bytes = 0;
    int family = AF_UNSPEC;
    if (command == proxy) {
        switch (byte_at(bytes, 13)) {
        case 0x00: // UNSPEC
            break;
        case 0x11: // TCP over IPv4
            address_bytes = 2 * 4 + 2 * 2;
            family = AF_INET;
            break;
        case 0x21: // TCP over IPv6
            address_bytes = 2 * 16 + 2 * 2;
            family = AF_INET6;
            break;
        case 0x31: // unix stream
        case 0x32: // unix datagram
            address_bytes = 2 * std::size_t{108};
            break;
        default: // UDP (0x12, 0x22) cannot have reached a stream socket; the rest is unassigned
            return with(status::malformed);
        }
    }

    if (bytes.size() < v2_fixed_bytes) return with(status::incomplete);
    const std::size_t length = v2_fixed_bytes + (byte_at(bytes, 14) << 8 | byte_at(bytes, 15));
    if (length < v2_fixed_bytes + address_bytes || length > max_proxy_header_bytes) {
        return with(status::malformed);
    }
    if (bytes.size() < length) return with(status::incomplete);

    // The TLVs after the addresses carry nothing this server uses: the length skips them.
    if (family == AF_UNSPEC) return done(length);
    const char* addresses = bytes.data() + v2_fixed_bytes;
    const std::size_t address_size = family == AF_INET ? 4 : 16;
    std::uint16_t source_port = 0;
    std::memcpy(&source_port, addresses + 2 * address_size, sizeof source_port);
    return done_from(length, family, addresses, source_port);
}

} // namespace

proxy_header parse_proxy_header(std::string_view bytes) noexcept {
    // The two signatures differ from their first byte, which settles which one to follow.
    if (bytes.empty()) return with(status::incomplete);
    if (bytes[0] == v1_prefix[0]) return parse_v1(bytes);
    if (bytes[0] == v2_signature[0]) return parse_v2(bytes);
    return with(status::malformed);
}

} // namespace tarry::server

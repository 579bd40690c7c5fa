#include "config_values.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <numeric>
#include <system_error>
#include <type_traits>
#include <utility>

namespace tarry::server {

// Parsing below produces nanosecond counts; a coarser clock would silently round them.
static_assert(std::is_same_v<duration::period, std::nano>);

namespace config_detail {

// --- Messages ------------------------------------------------------------------------------------

std::string quote(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte == 0x7f) {
            constexpr std::string_view hex = "0123456789abcdef";
            out += "\\x";
            out += hex[byte >> 4U];
            out += hex[byte & 0xfU];
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

std::string one_line(std::string_view text) {
    std::string out(text);
    std::replace_if(
        out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    return out;
}

void fail(std::string_view what, std::string_view problem) {
    std::string message(what);
    message += ": ";
    message += problem;
    throw config_error(message);
}

void bad_value::operator()(std::string_view why) const {
    std::string problem = std::string(expected) + ", got " + quote(text);
    if (!why.empty()) problem += " (" + std::string(why) + ")";
    fail(what, problem);
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    std::iota(row.begin(), row.end(), std::size_t{0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// Digits only: std::from_chars alone would also let through a sign and stop at the first
// non-digit, and both must be rejected here.
std::optional<std::uint64_t> parse_digits(std::string_view digits) {
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_digit)) return {};
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return {};
    return value;
}

} // namespace

// Dashes and underscores are the most common slip between flags and keys, so they compare equal.
std::string normalize_name(std::string_view name) {
    std::string out;
    for (const char c : name) {
        if (c == '-') {
            out += '_';
        } else if (c >= 'A' && c <= 'Z') {
            out += static_cast<char>(c - 'A' + 'a');
        } else {
            out += c;
        }
    }
    return out;
}

std::optional<std::string_view> closest(std::string_view name,
                                        const std::vector<std::string_view>& candidates) {
    const std::string wanted = normalize_name(name);
    const std::size_t limit = std::clamp<std::size_t>(wanted.size() / 3, 1, 3);
    std::optional<std::string_view> best;
    std::size_t best_distance = limit + 1;
    for (const std::string_view candidate : candidates) {
        const std::size_t d = edit_distance(wanted, normalize_name(candidate));
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// --- Durations and sizes -------------------------------------------------------------------------

namespace {

struct scale {
    std::string_view suffix;
    std::uint64_t factor;
};

constexpr std::array duration_units{
    scale{"us", 1'000},         scale{"ms", 1'000'000},        scale{"s", 1'000'000'000},
    scale{"m", 60'000'000'000}, scale{"h", 3'600'000'000'000},
};

// Every suffix means a power of 1024; "kB"/"MB" are refused rather than guessed at, because
// half the world reads them as powers of 1000.
constexpr std::array size_units{
    scale{"", 1},
    scale{"b", 1},
    scale{"k", std::uint64_t{1} << 10U},
    scale{"kib", std::uint64_t{1} << 10U},
    scale{"m", std::uint64_t{1} << 20U},
    scale{"mib", std::uint64_t{1} << 20U},
    scale{"g", std::uint64_t{1} << 30U},
    scale{"gib", std::uint64_t{1} << 30U},
};

// Timeouts longer than a day are a typo, and capping them keeps now() + timeout far from
// overflowing the clock.
constexpr duration max_timeout = 24h;

} // namespace

duration timeout_value(const std::string& text, const std::string& what, bool zero_ok) {
    const duration d = parse_duration(text, what);
    if (d == duration::zero() && !zero_ok) {
        fail(what, "must be more than zero, got " + quote(text) +
                       " (to measure the server without timeouts, set timeouts = false)");
    }
    if (d > max_timeout) fail(what, "must be at most 24h, got " + quote(text));
    return d;
}

std::size_t size_value(const std::string& text, const std::string& what, bool zero_ok) {
    const bad_value bad{what, size_expected, text};
    const std::string_view view = text;
    const auto digits_end = std::find_if_not(view.begin(), view.end(), is_digit) - view.begin();
    const std::string_view digits = view.substr(0, static_cast<std::size_t>(digits_end));
    const std::string_view suffix = view.substr(static_cast<std::size_t>(digits_end));
    if (!view.empty() && view.front() == '-') bad("must not be negative");
    if (digits.empty()) bad();
    const std::string unit = normalize_name(suffix);
    const auto found = std::find_if(size_units.begin(), size_units.end(),
                                    [&](const scale& s) { return s.suffix == unit; });
    if (found == size_units.end()) {
        if (unit == "kb" || unit == "mb" || unit == "gb") {
            bad("\"" + std::string(suffix) +
                "\" is ambiguous; write k, m or g for 1024-based units");
        }
        if (!suffix.empty() && suffix.front() == '.') bad("only whole numbers");
        bad("unknown unit " + quote(suffix) + "; use k, KiB, m, MiB, g or GiB");
    }
    const auto number = parse_digits(digits);
    // TOML integers are signed 64-bit, so the string form gets the same ceiling.
    constexpr std::uint64_t ceiling = toml_int_max;
    if (!number || *number > ceiling / found->factor) bad("too large");
    if (*number == 0 && !zero_ok) fail(what, "must be more than zero, got " + quote(text));
    return static_cast<std::size_t>(*number * found->factor);
}

// --- Counts and words ----------------------------------------------------------------------------

std::string count_expected(const count_rule& rule) {
    std::string out = "expected an integer ";
    if (rule.max == toml_int_max) {
        out += rule.min == 0 ? "of 0 or more" : "of " + std::to_string(rule.min) + " or more";
    } else {
        out += "from " + std::to_string(rule.min) + " to " + std::to_string(rule.max);
    }
    if (!rule.meaning_of_zero.empty()) out += " (0: " + std::string(rule.meaning_of_zero) + ")";
    return out;
}

// `got` is how the value was written, so a negative or oversized number is shown as typed.
std::uint64_t check_count(std::optional<std::uint64_t> value, std::string_view got,
                          const count_rule& rule, const std::string& what) {
    if (!value || *value < rule.min || *value > rule.max) {
        fail(what, count_expected(rule) + ", got " + std::string(got));
    }
    return *value;
}

std::uint64_t count_value(const std::string& text, const count_rule& rule,
                          const std::string& what) {
    return check_count(parse_digits(text), quote(text), rule, what);
}

std::string log_level_value(const std::string& text, const std::string& what) {
    constexpr std::array<std::string_view, 7> levels{"trace", "debug",    "info", "warn",
                                                     "error", "critical", "off"};
    if (std::find(levels.begin(), levels.end(), text) == levels.end()) {
        fail(what,
             "expected one of trace, debug, info, warn, error, critical, off, got " + quote(text));
    }
    return text;
}

std::filesystem::path path_value(const std::string& text, const std::string& what,
                                 std::string_view kind) {
    if (text.empty()) fail(what, "expected " + std::string(kind) + ", got an empty string");
    if (text.find('\0') != std::string::npos) {
        fail(what, "expected " + std::string(kind) + ", got " + quote(text) + " (contains NUL)");
    }
    return std::filesystem::path(text);
}

// Header values go on the wire as they are, so only visible ASCII and spaces may be in them.
std::string header_value(const std::string& text, const std::string& what) {
    if (text.empty()) fail(what, "expected a header value, got an empty string");
    const bool clean = std::all_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte == ' ' || (byte > 0x20 && byte < 0x7f);
    });
    if (!clean) fail(what, "only visible ASCII and spaces are allowed, got " + quote(text));
    return text;
}

std::string field_name(const std::string& text, const std::string& what, bool set) {
    const bool token = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
    if (!token) fail(what, "expected a field name such as \"X-Frame-Options\", got " + quote(text));
    // Written by the server itself, or the message's framing: a second one would contradict it.
    // (normalize_name spells '-' as '_'.)
    constexpr std::array<std::string_view, 9> own{
        "content_length", "transfer_encoding", "connection", "keep_alive", "upgrade", "date",
        "server",         "content_type",      "location"};
    if (set && std::find(own.begin(), own.end(), normalize_name(text)) != own.end())
        fail(what, quote(text) + " is written by the server itself and cannot be set");
    return text;
}

// --- Addresses -----------------------------------------------------------------------------------

listen_address host_port(const std::string& text, const bad_value& bad, std::string_view any_host,
                         std::uint64_t min_port) {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) bad("missing :PORT");
    std::string host = text.substr(0, colon);
    const std::string port_text = text.substr(colon + 1);

    if (host.empty()) {
        if (any_host.empty()) bad("missing the host");
        host = any_host;
    } else if (host.front() == '[') {
        if (host.back() != ']') bad("unbalanced brackets");
        host = host.substr(1, host.size() - 2);
        boost::system::error_code ec;
        const auto address = boost::asio::ip::make_address(host, ec);
        if (ec || !address.is_v6()) bad("brackets are only for IPv6 addresses");
    } else if (host.find(':') != std::string::npos) {
        bad("put an IPv6 address in brackets, as in \"[::1]:8080\"");
    } else if (host != "localhost") {
        boost::system::error_code ec;
        boost::asio::ip::make_address_v4(host, ec);
        if (ec) bad("the host must be a numeric IP address or localhost");
    }

    const auto port = parse_digits(port_text);
    if (port_text.empty()) bad("missing port");
    if (!port || *port < min_port || *port > 65535) {
        bad("the port must be a number from " + std::to_string(min_port) + " to 65535");
    }
    return listen_address{std::move(host), static_cast<std::uint16_t>(*port)};
}

// Port 0 may legitimately repeat (each asks the kernel for a fresh port); anything else twice
// would only fail later in bind() with a less helpful message.
void add_listen(std::vector<listen_address>& list, const std::string& text,
                const std::string& what) {
    listen_address address = parse_listen(text, what);
    const bool twice = std::any_of(list.begin(), list.end(),
                                   [&](const listen_address& a) { return a.same_socket(address); });
    if (twice && (address.port != 0 || !address.unix_path.empty()))
        fail(what, quote(text) + " is listed twice");
    list.push_back(std::move(address));
}

void add_server(std::vector<upstream_server>& list, const std::string& text,
                const std::string& what) {
    // https://HOST:PORT, as nginx's proxy_pass https:// (an upstream is TLS or not, whole).
    constexpr std::string_view https = "https://";
    const bool tls = text.starts_with(https);
    upstream_server server = parse_upstream_server(tls ? text.substr(https.size()) : text, what);
    server.tls = tls;
    if (tls && !server.unix_path.empty()) fail(what, quote(text) + ": TLS is for TCP servers");
    if (!list.empty() && list.front().tls != tls)
        fail(what, quote(text) + ": every server of an upstream is https:// or none is");
    if (std::find(list.begin(), list.end(), server) != list.end()) {
        fail(what, quote(text) + " is listed twice");
    }
    list.push_back(std::move(server));
}

namespace {

/// "unix:PATH": the path a socket file may have (sun_path holds 107 bytes and a NUL).
std::string unix_socket_path(std::string_view path, const bad_value& bad) {
    if (path.empty()) bad("missing the socket's path");
    if (path.find('\0') != std::string_view::npos) bad("contains NUL");
    if (path.size() > 107) bad("a socket path is at most 107 bytes");
    return std::string(path);
}

constexpr std::string_view unix_scheme = "unix:";

} // namespace

} // namespace config_detail

using namespace config_detail;

duration parse_duration(const std::string& text, const std::string& what) {
    const bad_value bad{what, duration_expected, text};
    const std::string_view view = text;
    if (!view.empty() && view.front() == '-') bad("must not be negative");
    const auto scan_digits = [&](std::size_t from) {
        std::size_t to = from;
        while (to < view.size() && is_digit(view[to]))
            ++to;
        return to;
    };
    const std::size_t whole_end = scan_digits(0);
    if (whole_end == 0) bad();
    std::size_t number_end = whole_end;
    std::string_view fraction;
    if (number_end < view.size() && view[number_end] == '.') {
        number_end = scan_digits(whole_end + 1);
        fraction = view.substr(whole_end + 1, number_end - whole_end - 1);
        if (fraction.empty()) bad();
    }
    const std::string_view suffix = view.substr(number_end);
    if (suffix.empty()) bad("a unit is required: us, ms, s, m or h");
    const auto unit = std::find_if(duration_units.begin(), duration_units.end(),
                                   [&](const scale& s) { return s.suffix == suffix; });
    if (unit == duration_units.end()) {
        bad("unknown unit " + quote(suffix) + "; use us, ms, s, m or h");
    }

    constexpr auto max_ns = static_cast<std::uint64_t>(std::numeric_limits<duration::rep>::max());
    const auto whole = parse_digits(view.substr(0, whole_end));
    if (!whole || *whole > max_ns / unit->factor) bad("too large");
    std::uint64_t ns = *whole * unit->factor;
    if (!fraction.empty()) {
        // Nine places reach a nanosecond of a second; more only looks precise.
        if (fraction.size() > 9) bad("at most 9 decimal places");
        std::uint64_t denominator = 1;
        for (std::size_t i = 0; i < fraction.size(); ++i)
            denominator *= 10;
        // Reducing first keeps numerator * factor within 64 bits for every unit.
        const std::uint64_t common = std::gcd(unit->factor, denominator);
        const std::uint64_t scaled = *parse_digits(fraction) * (unit->factor / common);
        if (scaled % (denominator / common) != 0) bad("finer than a nanosecond");
        const std::uint64_t fraction_ns = scaled / (denominator / common);
        if (fraction_ns > max_ns - ns) bad("too large");
        ns += fraction_ns;
    }
    return duration(static_cast<duration::rep>(ns));
}

namespace {

/// One spelling per address: "localhost" is 127.0.0.1, an IPv6 address in its shortest form.
std::string canonical_host(const std::string& host) {
    if (host == "localhost") return "127.0.0.1";
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    return ec ? host : address.to_string();
}

} // namespace

bool listen_address::same_socket(const listen_address& o) const {
    if (!unix_path.empty() || !o.unix_path.empty())
        return unix_path.lexically_normal() == o.unix_path.lexically_normal();
    return port == o.port && canonical_host(host) == canonical_host(o.host);
}

std::string listen_address::name() const {
    if (!unix_path.empty()) return "unix:" + unix_path.string();
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
           std::to_string(port);
}

listen_address parse_listen(const std::string& text, const std::string& what) {
    const bad_value bad{what, listen_expected, text};
    // The address, then space-separated parameters, as nginx's `listen` directive has them.
    std::vector<std::string_view> words;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        if (end > at) words.emplace_back(text.data() + at, end - at);
        at = end + 1;
    }
    if (words.empty()) return host_port(text, bad, "0.0.0.0", 0); // says what is missing
    listen_address address;
    if (words.front().starts_with(unix_scheme))
        address.unix_path = unix_socket_path(words.front().substr(unix_scheme.size()), bad);
    else
        address = host_port(std::string(words.front()), bad, "0.0.0.0", 0);
    for (std::size_t i = 1; i < words.size(); ++i) {
        const std::string_view w = words[i];
        const auto unix_only = [&] {
            if (address.unix_path.empty())
                bad(std::string(w.substr(0, w.find('='))) + " is for unix: sockets");
        };
        if (w == "proxy_protocol") {
            address.proxy_protocol = true;
        } else if (w.starts_with("mode=")) {
            unix_only();
            const std::string_view digits = w.substr(5);
            unsigned mode = 0;
            const auto [end, ec] =
                std::from_chars(digits.data(), digits.data() + digits.size(), mode, 8);
            if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() ||
                mode > 0777)
                bad("mode= takes octal permission bits such as 0660");
            address.mode = mode;
        } else if (w.starts_with("owner=")) {
            unix_only();
            const std::string_view owner = w.substr(6);
            const std::size_t colon = owner.find(':');
            if (owner.empty() || colon == 0 || colon + 1 == owner.size())
                bad("owner= takes USER or USER:GROUP");
            address.owner = std::string(owner);
        } else {
            bad("unknown parameter " + quote(std::string(w)) +
                " (expected proxy_protocol, mode=OCTAL or owner=USER[:GROUP])");
        }
    }
    return address;
}

namespace {

/// A DNS name as RFC 1123 has host names: dot-separated labels of letters, digits and '-' (not
/// first or last), 63 bytes each, 253 in all, a trailing dot allowed; the last label not all
/// digits, so that "10.0.0" is a bad address rather than a name.
bool is_dns_name(std::string_view host) {
    if (host.ends_with('.')) host.remove_suffix(1);
    if (host.empty() || host.size() > 253) return false;
    std::string_view last;
    for (std::size_t at = 0; at <= host.size();) {
        const std::size_t end = std::min(host.find('.', at), host.size());
        const std::string_view label = host.substr(at, end - at);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
            return false;
        for (const char c : label)
            if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-')) return false;
        last = label;
        at = end + 1;
    }
    return !std::all_of(last.begin(), last.end(), [](char c) { return is_digit(c); });
}

} // namespace

std::vector<std::string> upstream_dns_names(const config& cfg) {
    std::vector<std::string> names;
    for (const upstream_config& u : cfg.upstreams)
        for (const upstream_server& s : u.servers) {
            if (!s.unix_path.empty() || s.host == "localhost") continue;
            boost::system::error_code ec;
            boost::asio::ip::make_address(s.host, ec);
            if (ec && std::find(names.begin(), names.end(), s.host) == names.end())
                names.push_back(s.host);
        }
    return names;
}

upstream_server parse_upstream_server(const std::string& text, const std::string& what) {
    const bad_value bad{what, server_expected, text};
    upstream_server server;
    if (text.starts_with(unix_scheme)) {
        server.unix_path = unix_socket_path(std::string_view(text).substr(unix_scheme.size()), bad);
        return server;
    }
    if (const std::size_t colon = text.rfind(':');
        colon != std::string::npos && colon != 0 && text.front() != '[' &&
        is_dns_name(std::string_view(text).substr(0, colon))) {
        // A name: resolved at start, on reload and by its TTL while running (resolver).
        const std::string port_text = text.substr(colon + 1);
        const auto port = parse_digits(port_text);
        if (port_text.empty()) bad("missing port");
        if (!port || *port < 1 || *port > 65535) bad("the port must be a number from 1 to 65535");
        server.host = text.substr(0, colon);
        server.port = static_cast<std::uint16_t>(*port);
        return server;
    }
    if (const std::size_t colon = text.rfind(':');
        colon != std::string::npos && text.front() != '[' && text.find(':') == colon) {
        boost::system::error_code ec;
        const std::string host = text.substr(0, colon);
        boost::asio::ip::make_address_v4(host, ec);
        if (ec && !host.empty() && host != "localhost")
            bad("the host must be a numeric IP address, localhost or a DNS name (letters, "
                "digits, '-' and '.')");
    }
    listen_address address = host_port(text, bad, "", 1);
    server.host = std::move(address.host);
    server.port = address.port;
    return server;
}

} // namespace tarry::server

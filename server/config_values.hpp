#pragma once

// Values as text, shared by the TOML file and the command line so that both accept exactly the
// same forms and say the same things about them. Internal to the configuration units; the public
// parsers (parse_duration, parse_listen, parse_upstream_server) are in config.hpp.

#include "config.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::server::config_detail {

// --- Messages ------------------------------------------------------------------------------------
// Every message must stay on one line, so anything quoted from user input has its control
// characters escaped.

/// `text` in double quotes, with quotes, backslashes and control characters escaped.
std::string quote(std::string_view text);
/// `text` with its line breaks turned into spaces.
std::string one_line(std::string_view text);
/// Throws config_error "WHAT: PROBLEM".
[[noreturn]] void fail(std::string_view what, std::string_view problem);

/// A value that does not parse: throws config_error "WHAT: EXPECTED, got "TEXT"", then " (WHY)"
/// when there is a why.
struct bad_value {
    std::string_view what;
    std::string_view expected;
    std::string_view text;
    [[noreturn]] void operator()(std::string_view why = {}) const;
};

/// Lower case, with dashes as underscores: the most common slips between flags and keys.
std::string normalize_name(std::string_view name);
/// The candidate nearest to `name` (normalized), if one is near enough to suggest.
std::optional<std::string_view> closest(std::string_view name,
                                        const std::vector<std::string_view>& candidates);

/// '0' to '9' only, whatever the locale.
bool is_digit(char c);

// --- Grammars ------------------------------------------------------------------------------------

inline constexpr std::string_view duration_expected =
    R"(expected a duration such as "65s" or "250ms")";
inline constexpr std::string_view size_expected =
    R"(expected a size such as 16384, "16k" or "1MiB")";
inline constexpr std::string_view listen_expected =
    R"(expected HOST:PORT such as "127.0.0.1:8080", "[::1]:8080" or ":8080", or unix:PATH)";
inline constexpr std::string_view admin_expected =
    R"(expected HOST:PORT such as "127.0.0.1:9090", "[::1]:9090" or ":9090")";
inline constexpr std::string_view server_expected =
    R"(expected HOST:PORT such as "127.0.0.1:3000" or unix:PATH such as "unix:/run/app.sock")";
inline constexpr std::string_view resolver_expected =
    R"(expected a DNS server such as "127.0.0.53", "10.0.0.2:53" or "[::1]:5353")";

/// A duration of at most 24h, and more than zero unless `zero_ok`.
duration timeout_value(const std::string& text, const std::string& what, bool zero_ok);
/// A byte count: digits with an optional 1024-based unit (k, KiB, m, MiB, g, GiB).
std::size_t size_value(const std::string& text, const std::string& what, bool zero_ok);

/// The range of an integer setting, and what 0 means when it is allowed and special.
struct count_rule {
    std::uint64_t min;
    std::uint64_t max;
    std::string_view meaning_of_zero;
};

/// The largest TOML integer (signed 64-bit): "or more" in messages.
inline constexpr std::uint64_t toml_int_max = std::numeric_limits<std::int64_t>::max();
inline constexpr count_rule max_requests_rule{0, std::numeric_limits<std::uint32_t>::max(),
                                              "unlimited"};
inline constexpr count_rule workers_rule{0, 1024, "one per core"};
inline constexpr count_rule max_connections_rule{0, toml_int_max,
                                                 "derived from the open-file limit"};
inline constexpr count_rule expire_batch_rule{1, toml_int_max, ""};
inline constexpr count_rule per_client_rule{0, toml_int_max, "no limit"};
inline constexpr count_rule prefix_v4_rule{1, 32, ""};
inline constexpr count_rule prefix_v6_rule{1, 128, ""};
inline constexpr count_rule max_idle_rule{0, 65535, "no pooling"};
inline constexpr count_rule http2_streams_rule{1, std::numeric_limits<std::uint32_t>::max(), ""};
inline constexpr count_rule http2_window_rule{0, 2147483647, ""}; // 2^31-1 (RFC 9113 6.9.1)

/// "expected an integer from 0 to 1024 (0: one per core)".
std::string count_expected(const count_rule& rule);
/// `value` when it is within `rule`; `got` is how it was written, for the message.
std::uint64_t check_count(std::optional<std::uint64_t> value, std::string_view got,
                          const count_rule& rule, const std::string& what);
/// Digits only, within `rule`.
std::uint64_t count_value(const std::string& text, const count_rule& rule, const std::string& what);

/// One of trace, debug, info, warn, error, critical, off.
std::string log_level_value(const std::string& text, const std::string& what);
/// A non-empty path without NUL; `kind` names it in messages ("a directory path").
std::filesystem::path path_value(const std::string& text, const std::string& what,
                                 std::string_view kind);
/// A header field value: visible ASCII and spaces, not empty.
std::string header_value(const std::string& text, const std::string& what);
/// A field name (an RFC 9110 token). `set`: one an answer is given (`headers`), which may not be
/// one the server writes itself or one that frames the message (Content-Length, Date, ...).
std::string field_name(const std::string& text, const std::string& what, bool set);

/// HOST:PORT with a numeric IPv4 address, an IPv6 address in brackets or localhost. An empty
/// host becomes `any_host`, or is an error when that is empty too.
listen_address host_port(const std::string& text, const bad_value& bad, std::string_view any_host,
                         std::uint64_t min_port);
/// parse_listen(text), appended to `list` unless it names a socket already there.
void add_listen(std::vector<listen_address>& list, const std::string& text,
                const std::string& what);
/// parse_upstream_server(text), appended to `list` unless it is already there.
void add_server(std::vector<upstream_server>& list, const std::string& text,
                const std::string& what);

} // namespace tarry::server::config_detail

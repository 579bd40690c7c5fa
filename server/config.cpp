#include "config.hpp"

#include <CLI/CLI.hpp>
#include <boost/asio/ip/address.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <deque>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace tarry::server {
namespace {

namespace fs = std::filesystem;
using namespace std::string_view_literals;

// Parsing below produces nanosecond counts; a coarser clock would silently round them.
static_assert(std::is_same_v<duration::period, std::nano>);

// ---------------------------------------------------------------------------------------------
// Message helpers. Every message must stay on one line, so anything quoted from user input has
// its control characters escaped.

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

[[noreturn]] void fail(std::string_view what, std::string_view problem) {
    std::string message(what);
    message += ": ";
    message += problem;
    throw config_error(message);
}

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

template <typename Names>
std::optional<std::string_view> closest(std::string_view name, const Names& candidates) {
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

// Digits only: std::from_chars alone would also let through a sign and stop at the first
// non-digit, and both must be rejected here.
std::optional<std::uint64_t> parse_digits(std::string_view digits) {
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_digit)) return {};
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return {};
    return value;
}

// ---------------------------------------------------------------------------------------------
// Values as text: shared by the file and the command line so both accept exactly the same forms.

constexpr std::string_view duration_expected = R"(expected a duration such as "65s" or "250ms")";
constexpr std::string_view size_expected = R"(expected a size such as 16384, "16k" or "1MiB")";
constexpr std::string_view listen_expected =
    R"(expected HOST:PORT such as "127.0.0.1:8080", "[::1]:8080" or ":8080")";

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
    const auto bad = [&](std::string_view why) {
        std::string problem = std::string(size_expected) + ", got " + quote(text);
        if (!why.empty()) problem += " (" + std::string(why) + ")";
        fail(what, problem);
    };
    const std::string_view view = text;
    const auto digits_end = std::find_if_not(view.begin(), view.end(), is_digit) - view.begin();
    const std::string_view digits = view.substr(0, static_cast<std::size_t>(digits_end));
    const std::string_view suffix = view.substr(static_cast<std::size_t>(digits_end));
    if (!view.empty() && view.front() == '-') bad("must not be negative");
    if (digits.empty()) bad("");
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
    constexpr auto ceiling = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!number || *number > ceiling / found->factor) bad("too large");
    if (*number == 0 && !zero_ok) fail(what, "must be more than zero, got " + quote(text));
    return static_cast<std::size_t>(*number * found->factor);
}

struct count_rule {
    std::uint64_t min;
    std::uint64_t max;
    std::string_view meaning_of_zero;
};

constexpr std::uint64_t toml_int_max = std::numeric_limits<std::int64_t>::max();
constexpr count_rule max_requests_rule{0, std::numeric_limits<std::uint32_t>::max(), "unlimited"};
constexpr count_rule workers_rule{0, 1024, "one per core"};
constexpr count_rule max_connections_rule{0, toml_int_max, "derived from the open-file limit"};
constexpr count_rule expire_batch_rule{1, toml_int_max, ""};

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

constexpr std::array log_levels{"trace"sv, "debug"sv,    "info"sv, "warn"sv,
                                "error"sv, "critical"sv, "off"sv};

std::string log_level_value(const std::string& text, const std::string& what) {
    if (std::find(log_levels.begin(), log_levels.end(), text) == log_levels.end()) {
        fail(what,
             "expected one of trace, debug, info, warn, error, critical, off, got " + quote(text));
    }
    return text;
}

fs::path path_value(const std::string& text, const std::string& what, std::string_view kind) {
    if (text.empty()) fail(what, "expected " + std::string(kind) + ", got an empty string");
    if (text.find('\0') != std::string::npos) {
        fail(what, "expected " + std::string(kind) + ", got " + quote(text) + " (contains NUL)");
    }
    return fs::path(text);
}

// Port 0 may legitimately repeat (each asks the kernel for a fresh port); anything else twice
// would only fail later in bind() with a less helpful message.
void add_listen(std::vector<listen_address>& list, const std::string& text,
                const std::string& what) {
    listen_address address = parse_listen(text, what);
    if (address.port != 0 && std::find(list.begin(), list.end(), address) != list.end()) {
        fail(what, quote(text) + " is listed twice");
    }
    list.push_back(std::move(address));
}

// ---------------------------------------------------------------------------------------------
// The TOML file.

// Carries the line of an array element, which is more precise than the line of its key.
class located_error : public config_error {
public:
    located_error(toml::source_index line, const std::string& message)
        : config_error(message), line_(line) {}
    toml::source_index line() const { return line_; }

private:
    toml::source_index line_;
};

std::string describe(const toml::node& node) {
    std::ostringstream out;
    switch (node.type()) {
    case toml::node_type::string:
        return quote(node.as_string()->get());
    case toml::node_type::integer:
        return std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point:
        out << *node.as_floating_point();
        break;
    case toml::node_type::boolean:
        return node.as_boolean()->get() ? "true" : "false";
    case toml::node_type::date:
        out << *node.as_date();
        break;
    case toml::node_type::time:
        out << *node.as_time();
        break;
    case toml::node_type::date_time:
        out << *node.as_date_time();
        break;
    case toml::node_type::array:
        return "an array";
    case toml::node_type::table:
        return "a table";
    case toml::node_type::none:
        return "nothing";
    }
    return one_line(out.str());
}

[[noreturn]] void wrong_type(const toml::node& node, const std::string& key,
                             std::string_view expected) {
    fail(key, std::string(expected) + ", got " + describe(node));
}

const std::string& string_of(const toml::node& node, const std::string& key,
                             std::string_view expected) {
    if (!node.is_string()) wrong_type(node, key, expected);
    return node.as_string()->get();
}

duration toml_timeout(const toml::node& node, const std::string& key, bool zero_ok) {
    return timeout_value(string_of(node, key, duration_expected), key, zero_ok);
}

std::size_t toml_size(const toml::node& node, const std::string& key, bool zero_ok) {
    if (node.is_integer()) {
        const std::int64_t value = node.as_integer()->get();
        if (value < 0) fail(key, std::string(size_expected) + ", got " + std::to_string(value));
        if (value == 0 && !zero_ok) fail(key, "must be more than zero, got 0");
        return static_cast<std::size_t>(value);
    }
    return size_value(string_of(node, key, size_expected), key, zero_ok);
}

std::uint64_t toml_count(const toml::node& node, const std::string& key, const count_rule& rule) {
    if (!node.is_integer()) wrong_type(node, key, count_expected(rule));
    const std::int64_t value = node.as_integer()->get();
    std::optional<std::uint64_t> unsigned_value;
    if (value >= 0) unsigned_value = static_cast<std::uint64_t>(value);
    return check_count(unsigned_value, std::to_string(value), rule, key);
}

void toml_listen(config& cfg, const toml::node& node, const std::string& key) {
    constexpr std::string_view expected =
        "expected a HOST:PORT string or an array of them, such as [\"127.0.0.1:8080\"]";
    std::vector<listen_address> list;
    if (node.is_string()) {
        add_listen(list, node.as_string()->get(), key);
    } else if (const toml::array* array = node.as_array()) {
        if (array->empty()) fail(key, "needs at least one HOST:PORT");
        for (const toml::node& element : *array) {
            try {
                add_listen(list, string_of(element, key, listen_expected), key);
            } catch (const config_error& e) {
                throw located_error(element.source().begin.line, e.what());
            }
        }
    } else {
        wrong_type(node, key, expected);
    }
    cfg.listen = std::move(list);
}

struct key_rule {
    std::string_view name;
    void (*apply)(config&, const toml::node&, const std::string&);
};

// A field added to `config` needs a rule here too, or the file cannot set it.
constexpr std::array key_rules{
    key_rule{"listen", toml_listen},
    key_rule{"docroot",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.docroot = path_value(string_of(n, k, "expected a directory path string"), k,
                                        "a directory path");
             }},
    key_rule{"keep_alive_timeout",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.keep_alive_timeout = toml_timeout(n, k, false);
             }},
    key_rule{"header_timeout",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.header_timeout = toml_timeout(n, k, false);
             }},
    key_rule{"body_timeout",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.body_timeout = toml_timeout(n, k, false);
             }},
    key_rule{"send_timeout",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.send_timeout = toml_timeout(n, k, false);
             }},
    key_rule{"drain_timeout",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.drain_timeout = toml_timeout(n, k, true);
             }},
    key_rule{"max_requests_per_connection",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.max_requests_per_connection =
                     static_cast<std::uint32_t>(toml_count(n, k, max_requests_rule));
             }},
    key_rule{"max_header_bytes",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.max_header_bytes = toml_size(n, k, false);
             }},
    key_rule{"max_body_bytes",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.max_body_bytes = toml_size(n, k, true);
             }},
    key_rule{"workers",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.workers = static_cast<unsigned>(toml_count(n, k, workers_rule));
             }},
    key_rule{"max_connections",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.max_connections =
                     static_cast<std::size_t>(toml_count(n, k, max_connections_rule));
             }},
    key_rule{"admin_listen",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.admin_listen = parse_listen(string_of(n, k, listen_expected), k);
             }},
    key_rule{"log_level",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.log_level = log_level_value(
                     string_of(n, k,
                               "expected one of trace, debug, info, warn, error, critical, off"),
                     k);
             }},
    key_rule{"access_log",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.access_log = path_value(string_of(n, k, R"(expected a file path string or "-")"),
                                           k, R"(a file path or "-")");
             }},
    key_rule{"expire_batch",
             [](config& c, const toml::node& n, const std::string& k) {
                 c.expire_batch = static_cast<std::size_t>(toml_count(n, k, expire_batch_rule));
             }},
    key_rule{"timeouts",
             [](config& c, const toml::node& n, const std::string& k) {
                 if (!n.is_boolean()) wrong_type(n, k, "expected true or false");
                 c.timeouts = n.as_boolean()->get();
             }},
};

std::string read_whole_file(const fs::path& file, const std::string& name) {
    const auto cannot = [&](const std::string& why) -> config_error {
        return config_error(name + ": cannot read the config file: " + why);
    };
    std::error_code ec;
    const fs::file_status status = fs::status(file, ec);
    if (ec) throw cannot(ec.message());
    // Opening a directory succeeds on Linux and only the first read fails, with a vaguer error.
    if (fs::is_directory(status)) throw cannot("it is a directory");
    errno = 0;
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw cannot(errno != 0 ? std::generic_category().message(errno) : "cannot open it");
    }
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw cannot("read error");
    return text;
}

std::string at_line(const std::string& name, toml::source_index line) {
    return name + ":" + std::to_string(line) + ": ";
}

// ---------------------------------------------------------------------------------------------
// The command line.

constexpr std::array flag_names{
    "--config"sv,         "--listen"sv,       "--docroot"sv,         "--keep-alive-timeout"sv,
    "--header-timeout"sv, "--body-timeout"sv, "--send-timeout"sv,    "--drain-timeout"sv,
    "--max-requests"sv,   "--workers"sv,      "--max-connections"sv, "--admin-listen"sv,
    "--log-level"sv,      "--access-log"sv,   "--no-timeouts"sv,     "--check-config"sv,
    "--help"sv,           "--version"sv,
};

// Each value flag takes exactly one value per occurrence and collects every occurrence, so that
// "given twice" and "missing value" are reported here in our words rather than by CLI11.
struct value_flag {
    std::string name;
    std::vector<std::string> values;

    std::optional<std::string> single() const {
        if (values.empty()) return {};
        if (values.size() > 1) fail(name, "given more than once");
        if (values.front().empty()) fail(name, "expected a value");
        return values.front();
    }
};

class flag_set {
public:
    explicit flag_set(CLI::App& app) : app_(app) {}

    value_flag& value(const std::string& name, const std::string& type,
                      const std::string& description) {
        value_flag& flag = values_.emplace_back(value_flag{name, {}});
        app_.add_option(name, flag.values, description)
            ->type_name(type)
            ->expected(0, 1)
            ->allow_extra_args(false)
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        return flag;
    }

    CLI::Option* boolean(const std::string& name, const std::string& description) {
        return app_.add_flag(name, description)
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }

private:
    CLI::App& app_;
    std::deque<value_flag> values_; // a deque: CLI11 keeps pointers to each `values`
};

bool given(const CLI::Option* flag) {
    for (const std::string& result : flag->results()) {
        if (result != "true") fail(flag->get_name(), "takes no value, got " + quote(result));
    }
    return flag->count() > 0;
}

// Everything CLI11 could not match: the first unknown flag or positional argument is reported.
void reject_leftovers(const std::vector<std::string>& leftovers) {
    bool positional_only = false;
    for (const std::string& arg : leftovers) {
        if (!positional_only && arg == "--") {
            positional_only = true;
            continue;
        }
        if (positional_only || arg.empty() || arg.front() != '-' || arg == "-") {
            throw config_error("unexpected argument " + quote(arg) +
                               " (tarry takes no positional arguments)");
        }
        const std::string name = arg.substr(0, arg.find('='));
        std::string message = name + ": unknown flag";
        const std::size_t bare = name.find_first_not_of('-');
        const std::string key = bare == std::string::npos ? "" : normalize_name(name.substr(bare));
        const bool file_only = std::any_of(key_rules.begin(), key_rules.end(),
                                           [&](const key_rule& rule) { return rule.name == key; });
        if (file_only) {
            message += " (" + key + " can only be set in the config file)";
        } else if (const auto suggestion = closest(name, flag_names)) {
            message += " (did you mean " + std::string(*suggestion) + "?)";
        }
        throw config_error(message);
    }
}

std::string help_footer() {
    return "Precedence: built-in defaults < --config FILE < flags; --listen replaces the file's\n"
           "listen list. Durations need a unit: 250ms, 65s, 1.5s, 2m, 1h, 1500us.\n"
           "See tarry.example.toml for every setting and its default.\n";
}

} // namespace

// -------------------------------------------------------------------------------------------------

duration parse_duration(const std::string& text, const std::string& what) {
    const auto bad = [&](std::string_view why) {
        std::string problem = std::string(duration_expected) + ", got " + quote(text);
        if (!why.empty()) problem += " (" + std::string(why) + ")";
        fail(what, problem);
    };
    const std::string_view view = text;
    if (!view.empty() && view.front() == '-') bad("must not be negative");
    const auto scan_digits = [&](std::size_t from) {
        std::size_t to = from;
        while (to < view.size() && is_digit(view[to]))
            ++to;
        return to;
    };
    const std::size_t whole_end = scan_digits(0);
    if (whole_end == 0) bad("");
    std::size_t number_end = whole_end;
    std::string_view fraction;
    if (number_end < view.size() && view[number_end] == '.') {
        number_end = scan_digits(whole_end + 1);
        fraction = view.substr(whole_end + 1, number_end - whole_end - 1);
        if (fraction.empty()) bad("");
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

listen_address parse_listen(const std::string& text, const std::string& what) {
    const auto bad = [&](std::string_view why) {
        fail(what,
             std::string(listen_expected) + ", got " + quote(text) + " (" + std::string(why) + ")");
    };
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) bad("missing :PORT");
    std::string host = text.substr(0, colon);
    const std::string port_text = text.substr(colon + 1);

    if (host.empty()) {
        host = "0.0.0.0";
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
    if (!port || *port > 65535) bad("the port must be a number from 0 to 65535");
    return listen_address{std::move(host), static_cast<std::uint16_t>(*port)};
}

config load_config_file(const std::filesystem::path& file, config base) {
    const std::string name = file.string();
    if (name.empty()) throw config_error("config file: expected a file name, got an empty string");
    const std::string text = read_whole_file(file, name);

    toml::table root;
    try {
        root = toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        throw config_error(at_line(name, e.source().begin.line) +
                           "TOML syntax error: " + one_line(e.description()));
    }

    // toml::table is ordered by key; report problems in the order they appear in the file.
    struct entry {
        toml::source_position where;
        const toml::key* key;
        const toml::node* value;
    };
    std::vector<entry> entries;
    for (const auto& [key, value] : root)
        entries.push_back({key.source().begin, &key, &value});
    std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
        return std::pair(a.where.line, a.where.column) < std::pair(b.where.line, b.where.column);
    });

    std::vector<std::string_view> known;
    known.reserve(key_rules.size());
    for (const key_rule& rule : key_rules)
        known.push_back(rule.name);
    for (const entry& e : entries) {
        const std::string key(e.key->str());
        const auto rule = std::find_if(key_rules.begin(), key_rules.end(),
                                       [&](const key_rule& r) { return r.name == key; });
        if (rule == key_rules.end()) {
            std::string message = at_line(name, e.where.line) + "unknown key " + quote(key);
            if (const auto suggestion = closest(key, known)) {
                message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
            } else if (e.value->is_table()) {
                message += " (tarry's settings are all top-level keys; there are no tables)";
            }
            throw config_error(message);
        }
        try {
            rule->apply(base, *e.value, key);
        } catch (const located_error& error) {
            throw config_error(at_line(name, error.line()) + error.what());
        } catch (const config_error& error) {
            throw config_error(at_line(name, e.value->source().begin.line) + error.what());
        }
    }
    base.config_file = file;
    return base;
}

command_line parse_command_line(int argc, const char* const* argv) {
    CLI::App app{"tarry: an HTTP/1.1 keep-alive server.", "tarry"};
    app.allow_extras();
    app.footer(help_footer());
    flag_set flags(app);

    value_flag& config_flag = flags.value("--config", "FILE", "Read settings from this TOML file");
    value_flag& listen_flag =
        flags.value("--listen", "HOST:PORT",
                    "Listen here (repeatable; replaces the file's list). Default 127.0.0.1:8080");
    value_flag& docroot_flag = flags.value("--docroot", "DIR", "Serve files from this directory");
    value_flag& keep_alive_flag = flags.value("--keep-alive-timeout", "DUR",
                                              "Idle time allowed between requests. Default 65s");
    value_flag& header_flag = flags.value(
        "--header-timeout", "DUR", "Time allowed to receive a request's headers. Default 60s");
    value_flag& body_flag = flags.value(
        "--body-timeout", "DUR", "Gap allowed between two reads of a request body. Default 60s");
    value_flag& send_flag = flags.value(
        "--send-timeout", "DUR", "Gap allowed between two writes of a response. Default 60s");
    value_flag& drain_flag = flags.value(
        "--drain-timeout", "DUR", "How long a graceful stop waits for requests. Default 10s");
    value_flag& max_requests_flag = flags.value(
        "--max-requests", "N", "Requests per connection, 0 for unlimited. Default 1000");
    value_flag& workers_flag =
        flags.value("--workers", "N", "Worker threads, 0 for one per core. Default 0");
    value_flag& max_connections_flag = flags.value(
        "--max-connections", "N", "Connection limit, 0 to derive it from the open-file limit");
    value_flag& admin_flag =
        flags.value("--admin-listen", "HOST:PORT", "Serve /metrics and /healthz here. Default off");
    value_flag& log_level_flag = flags.value(
        "--log-level", "LEVEL", "trace, debug, info, warn, error, critical or off. Default info");
    value_flag& access_log_flag =
        flags.value("--access-log", "FILE", "Write an access log here (\"-\": stdout)");
    CLI::Option* no_timeouts_flag =
        flags.boolean("--no-timeouts", "Enforce no timeouts (only to measure their cost)");
    CLI::Option* check_flag =
        flags.boolean("--check-config", "Validate the configuration and exit");
    CLI::Option* version_flag = flags.boolean("--version", "Print the version and exit");

    command_line result;
    try {
        if (argc > 0 && argv != nullptr) app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        // Help never fails on a bad config file: it is what people run when things are wrong.
        result.what = command_line::action::help;
        result.help_text = app.help();
        return result;
    } catch (const CLI::ParseError& e) {
        throw config_error(one_line(e.what()));
    }
    reject_leftovers(app.remaining());

    const bool no_timeouts = given(no_timeouts_flag);
    const bool check = given(check_flag);
    if (given(version_flag)) {
        result.what = command_line::action::version;
        return result;
    }

    config& cfg = result.cfg;
    if (const auto file = config_flag.single()) {
        cfg = load_config_file(path_value(*file, config_flag.name, "a file path"));
    }
    if (!listen_flag.values.empty()) {
        std::vector<listen_address> list;
        for (const std::string& text : listen_flag.values) {
            if (text.empty()) fail(listen_flag.name, "expected a value");
            add_listen(list, text, listen_flag.name);
        }
        cfg.listen = std::move(list);
    }
    if (const auto v = docroot_flag.single()) {
        cfg.docroot = path_value(*v, docroot_flag.name, "a directory path");
    }
    const auto timeout = [](const value_flag& flag, duration& field, bool zero_ok) {
        if (const auto v = flag.single()) field = timeout_value(*v, flag.name, zero_ok);
    };
    timeout(keep_alive_flag, cfg.keep_alive_timeout, false);
    timeout(header_flag, cfg.header_timeout, false);
    timeout(body_flag, cfg.body_timeout, false);
    timeout(send_flag, cfg.send_timeout, false);
    timeout(drain_flag, cfg.drain_timeout, true);
    if (const auto v = max_requests_flag.single()) {
        cfg.max_requests_per_connection =
            static_cast<std::uint32_t>(count_value(*v, max_requests_rule, max_requests_flag.name));
    }
    if (const auto v = workers_flag.single()) {
        cfg.workers = static_cast<unsigned>(count_value(*v, workers_rule, workers_flag.name));
    }
    if (const auto v = max_connections_flag.single()) {
        cfg.max_connections = static_cast<std::size_t>(
            count_value(*v, max_connections_rule, max_connections_flag.name));
    }
    if (const auto v = admin_flag.single()) cfg.admin_listen = parse_listen(*v, admin_flag.name);
    if (const auto v = log_level_flag.single()) {
        cfg.log_level = log_level_value(*v, log_level_flag.name);
    }
    if (const auto v = access_log_flag.single()) {
        cfg.access_log = path_value(*v, access_log_flag.name, R"(a file path or "-")");
    }
    if (no_timeouts) cfg.timeouts = false;

    result.what = check ? command_line::action::check_config : command_line::action::run;
    return result;
}

config reload_config(const config& /*current*/, int argc, const char* const* argv) {
    command_line again = parse_command_line(argc, argv);
    // Help and version never read the file, so their cfg is all defaults: applying it would
    // silently undo the whole configuration of a running server.
    if (again.what == command_line::action::help || again.what == command_line::action::version) {
        throw config_error("reload: the command line asks for --help or --version, not a server");
    }
    return std::move(again.cfg);
}

} // namespace tarry::server

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
    R"(expected HOST:PORT such as "127.0.0.1:8080", "[::1]:8080" or ":8080", or unix:PATH)";
constexpr std::string_view admin_expected =
    R"(expected HOST:PORT such as "127.0.0.1:9090", "[::1]:9090" or ":9090")";

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
    const bool twice = std::any_of(list.begin(), list.end(),
                                   [&](const listen_address& a) { return a.same_socket(address); });
    if (twice && (address.port != 0 || !address.unix_path.empty()))
        fail(what, quote(text) + " is listed twice");
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

// HOST:PORT with a numeric IPv4 address, an IPv6 address in brackets or localhost. An empty host
// becomes `any_host`, or is an error when that is empty too.
template <typename Bad>
listen_address host_port(const std::string& text, const Bad& bad, std::string_view any_host,
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

// Entries of a TOML table in the order they appear in the file (toml::table is ordered by key),
// so that problems are reported in file order.
struct entry {
    toml::source_position where;
    std::string key;
    const toml::node* value;
};

std::vector<entry> in_file_order(const toml::table& table) {
    std::vector<entry> entries;
    for (const auto& [key, value] : table)
        entries.push_back({key.source().begin, std::string(key.str()), &value});
    std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
        return std::pair(a.where.line, a.where.column) < std::pair(b.where.line, b.where.column);
    });
    return entries;
}

template <typename Rules> std::vector<std::string_view> keys_of(const Rules& rules) {
    std::vector<std::string_view> keys;
    for (const auto& rule : rules) {
        if (!rule.key.empty()) keys.push_back(rule.key);
    }
    return keys;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// One value, from either side. The flag layer has already checked that a flag which is not
// repeatable was given exactly once with a non-empty value.

class setting_value {
public:
    setting_value(const toml::node& node, std::string what)
        : node_(&node), what_(std::move(what)) {}
    setting_value(const std::vector<std::string>& texts, std::string what)
        : texts_(&texts), what_(std::move(what)) {}

    const toml::node* node() const { return node_; }
    const std::vector<std::string>& texts() const { return *texts_; }
    const std::string& text() const { return texts_->front(); }
    const std::string& what() const { return what_; }

private:
    const toml::node* node_ = nullptr;
    const std::vector<std::string>* texts_ = nullptr;
    std::string what_;
};

namespace {

duration read_timeout(const setting_value& v, bool zero_ok) {
    if (const toml::node* n = v.node()) return toml_timeout(*n, v.what(), zero_ok);
    return timeout_value(v.text(), v.what(), zero_ok);
}

std::size_t read_size(const setting_value& v, bool zero_ok) {
    if (const toml::node* n = v.node()) return toml_size(*n, v.what(), zero_ok);
    return size_value(v.text(), v.what(), zero_ok);
}

std::uint64_t read_count(const setting_value& v, const count_rule& rule) {
    if (const toml::node* n = v.node()) return toml_count(*n, v.what(), rule);
    return count_value(v.text(), rule, v.what());
}

// `kind` names the value ("a directory path"); `expected` is said of a file value of the wrong
// type.
fs::path read_path(const setting_value& v, std::string_view kind, std::string_view expected) {
    if (const toml::node* n = v.node()) {
        return path_value(string_of(*n, v.what(), expected), v.what(), kind);
    }
    return path_value(v.text(), v.what(), kind);
}

const std::string& read_string(const setting_value& v, std::string_view expected) {
    if (const toml::node* n = v.node()) return string_of(*n, v.what(), expected);
    return v.text();
}

// A BOOL setting's flag is a switch: giving it means `flag_means`.
bool read_bool(const setting_value& v, bool flag_means) {
    const toml::node* n = v.node();
    if (n == nullptr) return flag_means;
    if (!n->is_boolean()) wrong_type(*n, v.what(), "expected true or false");
    return n->as_boolean()->get();
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

void apply_listen(config& c, const setting_value& v) {
    std::vector<listen_address> list;
    const toml::node* node = v.node();
    if (node == nullptr) {
        for (const std::string& text : v.texts()) {
            if (text.empty()) fail(v.what(), "expected a value");
            add_listen(list, text, v.what());
        }
    } else if (node->is_string()) {
        add_listen(list, node->as_string()->get(), v.what());
    } else if (const toml::array* array = node->as_array()) {
        if (array->empty()) fail(v.what(), "needs at least one HOST:PORT");
        for (const toml::node& element : *array) {
            try {
                add_listen(list, string_of(element, v.what(), listen_expected), v.what());
            } catch (const config_error& e) {
                throw located_error(element.source().begin.line, e.what());
            }
        }
    } else {
        wrong_type(*node, v.what(),
                   "expected a HOST:PORT string or an array of them, such as [\"127.0.0.1:8080\"]");
    }
    c.listen = std::move(list);
}

std::optional<std::size_t> route_for_root(const config& c) {
    for (std::size_t i = 0; i < c.routes.size(); ++i) {
        if (c.routes[i].prefix == "/") return i;
    }
    return {};
}

std::string route_name(std::size_t index) {
    return "route[" + std::to_string(index + 1) + "]";
}

constexpr std::string_view dir_kind = "a directory path";
constexpr std::string_view dir_expected = "expected a directory path string";

void apply_docroot(config& c, const setting_value& v) {
    c.docroot = read_path(v, dir_kind, dir_expected);
    // The file's own conflicts are reported once the whole file is read, with both lines.
    if (v.node() != nullptr) return;
    if (const auto root = route_for_root(c)) {
        fail(v.what(), "conflicts with " + route_name(*root) +
                           " of the config file, which already answers \"/\" (docroot is "
                           "shorthand for a route \"/\")");
    }
}

constexpr std::string_view server_expected =
    R"(expected HOST:PORT such as "127.0.0.1:3000" or unix:PATH such as "unix:/run/app.sock")";

void add_server(std::vector<upstream_server>& list, const std::string& text,
                const std::string& what) {
    upstream_server server = parse_upstream_server(text, what);
    if (std::find(list.begin(), list.end(), server) != list.end()) {
        fail(what, quote(text) + " is listed twice");
    }
    list.push_back(std::move(server));
}

void apply_proxy(config& c, const setting_value& v) {
    const std::string& what = v.what();
    if (c.docroot) fail(what, "conflicts with docroot, which also answers \"/\"");
    if (const auto root = route_for_root(c)) {
        fail(what, "conflicts with " + route_name(*root) +
                       " of the config file, which already answers \"/\"");
    }
    upstream_config upstream;
    upstream.name = "default";
    if (std::any_of(c.upstreams.begin(), c.upstreams.end(),
                    [&](const upstream_config& u) { return u.name == upstream.name; })) {
        fail(what, "the config file already defines an upstream named \"default\"");
    }
    add_server(upstream.servers, v.text(), what);
    c.upstreams.push_back(std::move(upstream));
    route_config route;
    route.prefix = "/";
    route.what = route_config::kind::proxy;
    route.upstream = "default";
    c.routes.push_back(std::move(route));
}

// Applies every key of `table` through `rules`; `name` prefixes the keys in messages.
template <typename Target>
void apply_table(Target& target, const toml::table& table, const std::string& name,
                 std::span<const basic_setting<Target>> rules) {
    for (const entry& e : in_file_order(table)) {
        const auto rule =
            std::find_if(rules.begin(), rules.end(), [&](const auto& r) { return r.key == e.key; });
        if (rule == rules.end()) {
            std::string message = name + ": unknown key " + quote(e.key);
            if (const auto suggestion = closest(e.key, keys_of(rules))) {
                message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
            }
            throw located_error(e.where.line, message);
        }
        try {
            rule->apply(target, setting_value(*e.value, name + "." + e.key));
        } catch (const located_error&) {
            throw;
        } catch (const config_error& error) {
            throw located_error(e.value->source().begin.line, error.what());
        }
    }
}

void apply_routes(config& c, const setting_value& v) {
    const toml::node& node = *v.node();
    const toml::array* array = node.as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
        wrong_type(node, v.what(), "expected [[route]] tables");
    }
    std::vector<route_config> routes;
    for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::table& table = *array->get(i)->as_table();
        const std::string name = route_name(i);
        const toml::source_index line = table.source().begin.line;
        route_config route;
        apply_table(route, table, name, route_settings());

        const std::array choices{"upstream"sv, "docroot"sv, "respond"sv};
        std::vector<std::string_view> given;
        for (const std::string_view choice : choices) {
            if (table.contains(choice)) given.push_back(choice);
        }
        if (given.size() != 1) {
            std::string message = name + ": needs exactly one of upstream, docroot or respond";
            if (given.size() > 1) {
                message += ", got ";
                for (std::size_t j = 0; j < given.size(); ++j) {
                    message += (j == 0 ? "" : j + 1 == given.size() ? " and " : ", ");
                    message += given[j];
                }
            }
            throw located_error(line, message);
        }
        if (!table.contains("prefix")) {
            throw located_error(line, name + ".prefix: required, such as prefix = \"/api/\"");
        }
        if (!route.cache_control.empty() && route.what != route_config::kind::files) {
            throw located_error(table.get("cache_control")->source().begin.line,
                                name + ".cache_control: only a docroot route sends Cache-Control");
        }
        if (table.contains("upgrade") && route.what != route_config::kind::proxy) {
            throw located_error(table.get("upgrade")->source().begin.line,
                                name + ".upgrade: only an upstream route passes upgrades on");
        }
        for (std::size_t j = 0; j < routes.size(); ++j) {
            if (routes[j].prefix == route.prefix) {
                throw located_error(table.get("prefix")->source().begin.line,
                                    name + ".prefix: " + quote(route.prefix) +
                                        " is already the prefix of " + route_name(j));
            }
        }
        routes.push_back(std::move(route));
    }
    c.routes = std::move(routes);
}

bool valid_upstream_name(std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
               c == '-';
    });
}

void apply_upstreams(config& c, const setting_value& v) {
    const toml::node& node = *v.node();
    const toml::table* tables = node.as_table();
    if (tables == nullptr) wrong_type(node, v.what(), "expected [upstream.NAME] tables");
    std::vector<upstream_config> upstreams;
    for (const entry& e : in_file_order(*tables)) {
        const std::string name = "upstream." + e.key;
        if (!valid_upstream_name(e.key)) {
            throw located_error(e.where.line, "upstream." + quote(e.key) +
                                                  ": a name is letters, digits, \"_\" and \"-\"");
        }
        const toml::table* table = e.value->as_table();
        if (table == nullptr) {
            std::string message = name;
            message += ": expected a table [";
            message += name;
            message += "], got ";
            message += describe(*e.value);
            throw located_error(e.where.line, message);
        }
        upstream_config upstream;
        upstream.name = e.key;
        apply_table(upstream, *table, name, upstream_settings());
        if (upstream.servers.empty()) {
            throw located_error(e.where.line, name + ".servers: required: at least one HOST:PORT "
                                                     "or unix:PATH");
        }
        upstreams.push_back(std::move(upstream));
    }
    c.upstreams = std::move(upstreams);
}

// ---------------------------------------------------------------------------------------------
// The table. A new setting is one row here plus its field in `config`.

// The shape shared by every timeout row: the field and whether zero is allowed.
template <duration config::*Field, bool ZeroOk>
void apply_timeout(config& c, const setting_value& v) {
    c.*Field = read_timeout(v, ZeroOk);
}

// timeout_value's advice for a zero timeout (timeouts = false) is about the client side, so the
// upstream's timeouts say it without.
template <duration upstream_config::*Field>
void apply_upstream_timeout(upstream_config& u, const setting_value& v) {
    const duration d = read_timeout(v, true);
    if (d == duration::zero()) fail(v.what(), "must be more than zero, got " + describe(*v.node()));
    u.*Field = d;
}

constexpr std::array setting_rows{
    setting{"", "--config", "FILE", "Read settings from this TOML file.", "", false, false,
            nullptr},
    setting{"listen", "--listen", "ADDRESS",
            "Where to accept connections: HOST:PORT (an IPv4 address, an IPv6 address in "
            "brackets, localhost, or :PORT for all IPv4 addresses) or unix:PATH, then "
            "parameters: proxy_protocol (each connection starts with a PROXY header, v1 or "
            "v2, from a balancer), and for a Unix socket mode=0660 and owner=USER[:GROUP]. "
            "Sockets passed by systemd (LISTEN_FDS) are used for the addresses they match. "
            "The flag is repeatable and replaces the file's list.",
            R"(["127.0.0.1:8080"])", true, false, apply_listen},
    setting{"docroot", "--docroot", "DIR",
            "Serve files (GET and HEAD) from this directory: shorthand for a route \"/\" to it. "
            "Unset: every request to \"/\" is answered Hello, World!",
            "", false, false, apply_docroot},
    setting{"keep_alive_timeout", "--keep-alive-timeout", "DUR",
            "Idle time allowed between requests on a keep-alive connection; then a silent close.",
            R"("65s")", false, false, apply_timeout<&config::keep_alive_timeout, false>},
    setting{"header_timeout", "--header-timeout", "DUR",
            "Time allowed to receive a request's line and headers, from its first byte (from "
            "accept, for the first); a total, not reset by trickled bytes. Then 408 and close.",
            R"("60s")", false, false, apply_timeout<&config::header_timeout, false>},
    setting{"body_timeout", "--body-timeout", "DUR",
            "Gap allowed between two reads of a request body. Then 408 and close.", R"("60s")",
            false, false, apply_timeout<&config::body_timeout, false>},
    setting{"request_timeout", "--request-timeout", "DUR",
            "Total time allowed to receive a request's body. Then 408 and close.", R"("300s")",
            false, false, apply_timeout<&config::request_timeout, false>},
    setting{"send_timeout", "--send-timeout", "DUR",
            "Gap allowed between two writes of a response the client does not drain. Then close.",
            R"("60s")", false, false, apply_timeout<&config::send_timeout, false>},
    setting{"drain_timeout", "--drain-timeout", "DUR",
            "How long a graceful stop waits for in-flight requests; 0s: not at all.", R"("10s")",
            false, false, apply_timeout<&config::drain_timeout, true>},
    setting{"lingering_time", "", "DUR",
            "After an error response, the total time spent reading and discarding the client's "
            "input before closing.",
            R"("30s")", false, false, apply_timeout<&config::lingering_time, false>},
    setting{"lingering_timeout", "", "DUR",
            "After an error response, the gap allowed between two reads of discarded input.",
            R"("5s")", false, false, apply_timeout<&config::lingering_timeout, false>},
    setting{"max_connection_age", "--max-connection-age", "DUR",
            "Past this age a connection's next response says Connection: close; 0s: off.",
            R"("0s")", false, false, apply_timeout<&config::max_connection_age, true>},
    setting{"close_spread_time", "--close-spread-time", "DUR",
            "On a graceful stop, idle keep-alive connections are closed spread over this window "
            "rather than all at once; 0s: all at once.",
            R"("1s")", false, false, apply_timeout<&config::close_spread_time, true>},
    setting{"keep_alive_min_timeout", "--keep-alive-min-timeout", "DUR",
            "An idle connection is never closed for a stop or for descriptor pressure sooner "
            "than this after its last response, nor one that has sent nothing sooner than a "
            "tenth of this after its accept; 0s: no minimum.",
            R"("1s")", false, false, apply_timeout<&config::keep_alive_min_timeout, true>},
    setting{"max_requests_per_connection", "--max-requests", "N",
            "Requests served on one connection; the last response says Connection: close. 0: "
            "unlimited.",
            "1000", false, false,
            [](config& c, const setting_value& v) {
                c.max_requests_per_connection =
                    static_cast<std::uint32_t>(read_count(v, max_requests_rule));
            }},
    setting{"max_header_bytes", "", "SIZE",
            "Largest request line plus headers; over it 431 (414 for the request line).",
            R"("16KiB")", false, false,
            [](config& c, const setting_value& v) { c.max_header_bytes = read_size(v, false); }},
    setting{"max_body_bytes", "", "SIZE", "Largest request body; over it 413. 0: no body.",
            R"("1MiB")", false, false,
            [](config& c, const setting_value& v) { c.max_body_bytes = read_size(v, true); }},
    setting{"workers", "--workers", "N", "Worker threads, from 0 to 1024. 0: one per core.", "0",
            false, false,
            [](config& c, const setting_value& v) {
                c.workers = static_cast<unsigned>(read_count(v, workers_rule));
            }},
    setting{"max_connections", "--max-connections", "N",
            "Connections open at once; at the limit the oldest idle one is closed. 0: derived "
            "from the open-file limit.",
            "0", false, false,
            [](config& c, const setting_value& v) {
                c.max_connections = static_cast<std::size_t>(read_count(v, max_connections_rule));
            }},
    setting{"admin_listen", "--admin-listen", "HOST:PORT",
            "Serve /metrics and /healthz on this address. Unset: off.", "", false, false,
            [](config& c, const setting_value& v) {
                const std::string text = read_string(v, admin_expected);
                const auto bad = [&](std::string_view why) {
                    fail(v.what(), std::string(admin_expected) + ", got " + quote(text) + " (" +
                                       std::string(why) + ")");
                };
                c.admin_listen = host_port(text, bad, "0.0.0.0", 0);
            }},
    setting{"log_level", "--log-level", "LEVEL",
            "trace, debug, info, warn, error, critical or off.", R"("info")", false, false,
            [](config& c, const setting_value& v) {
                c.log_level = log_level_value(
                    read_string(v,
                                "expected one of trace, debug, info, warn, error, critical, off"),
                    v.what());
            }},
    setting{"access_log", "--access-log", "FILE",
            "Append one line per response to this file (\"-\": standard output), in "
            "access_log_format. SIGUSR1 reopens it (logrotate). Unset: off.",
            "", false, false,
            [](config& c, const setting_value& v) {
                c.access_log =
                    read_path(v, R"(a file path or "-")", R"(expected a file path string or "-")");
            }},
    setting{"access_log_format", "--access-log-format", "FORMAT",
            "The access log's line: common (the Common Log Format), combined (nginx's default: "
            "common with the Referer and User-Agent) or json (one object per line).",
            R"("common")", false, false,
            [](config& c, const setting_value& v) {
                const std::string& text =
                    read_string(v, R"(expected "common", "combined" or "json")");
                if (text != "common" && text != "combined" && text != "json")
                    fail(v.what(),
                         R"(expected "common", "combined" or "json", got )" + quote(text));
                c.access_log_format = text;
            }},
    setting{"expire_batch", "", "N",
            "Timeout expiries handled per timer wake-up before other work gets a turn.", "16",
            false, false,
            [](config& c, const setting_value& v) {
                c.expire_batch = static_cast<std::size_t>(read_count(v, expire_batch_rule));
            }},
    setting{
        "timeouts", "--no-timeouts", "BOOL",
        "Enforce the timeouts; false (--no-timeouts) only to measure what enforcing them costs.",
        "true", false, false,
        [](config& c, const setting_value& v) { c.timeouts = read_bool(v, false); }},
    setting{"trust_forwarded", "", "BOOL",
            "Keep incoming X-Forwarded-For, -Proto and -Host fields and append to them when "
            "proxying; false: replace them.",
            "false", false, false,
            [](config& c, const setting_value& v) { c.trust_forwarded = read_bool(v, true); }},
    setting{"", "--proxy", "HOST:PORT",
            "Proxy every request to this server: an upstream named \"default\" with this one "
            "server and a route \"/\" to it.",
            "", false, false, apply_proxy},
    setting{"route", "", "TABLE", "[[route]] tables: what answers each path prefix (see ROUTES).",
            "", false, false, apply_routes},
    setting{"upstream", "", "TABLE",
            "[upstream.NAME] tables: the servers a route proxies to (see UPSTREAMS).", "", false,
            false, apply_upstreams},
    setting{"", "--check-config", "", "Validate the configuration and exit.", "", false, false,
            nullptr},
    setting{"", "--version", "", "Print the version and exit.", "", false, false, nullptr},
    setting{"", "--help", "", "Print this help and exit.", "", false, false, nullptr},
    setting{"", "--man", "", "Print the tarry(8) manual page in roff and exit.", "", false, true,
            nullptr},
};

constexpr std::array route_rows{
    route_setting{"prefix", "", "STRING",
                  "Required. The path prefix this route answers, starting with \"/\"; the "
                  "longest matching prefix wins.",
                  "", false, false,
                  [](route_config& r, const setting_value& v) {
                      const std::string& text =
                          read_string(v, R"(expected a string such as "/api/")");
                      if (text.empty() || text.front() != '/') {
                          fail(v.what(), "must start with \"/\", got " + quote(text));
                      }
                      r.prefix = header_value(text, v.what());
                  }},
    route_setting{"upstream", "", "NAME", "Proxy to the upstream of this name.", "", false, false,
                  [](route_config& r, const setting_value& v) {
                      r.upstream = read_string(v, "expected an upstream name string");
                      r.what = route_config::kind::proxy;
                  }},
    route_setting{"docroot", "", "DIR", "Serve files from this directory.", "", false, false,
                  [](route_config& r, const setting_value& v) {
                      r.docroot = read_path(v, dir_kind, dir_expected);
                      r.what = route_config::kind::files;
                  }},
    route_setting{"respond", "", "STRING",
                  "Answer with a fixed response; \"hello\" is the one "
                  "there is (Hello, World!).",
                  "", false, false,
                  [](route_config& r, const setting_value& v) {
                      const std::string& text = read_string(v, R"(expected "hello")");
                      if (text != "hello") fail(v.what(), "expected \"hello\", got " + quote(text));
                      r.what = route_config::kind::hello;
                  }},
    route_setting{"upgrade", "", "BOOL",
                  "Only with upstream: pass a request to switch protocols (Upgrade, such as "
                  "WebSocket) on, and tunnel the connection after the server's 101. false: the "
                  "request goes up as an ordinary one, without its Upgrade field.",
                  "true", false, false,
                  [](route_config& r, const setting_value& v) { r.upgrade = read_bool(v, true); }},
    route_setting{"cache_control", "", "STRING",
                  "Only with docroot: sent as the Cache-Control field of every file. Unset: "
                  "none.",
                  "", false, false,
                  [](route_config& r, const setting_value& v) {
                      r.cache_control = header_value(
                          read_string(v, R"(expected a string such as "public, max-age=60")"),
                          v.what());
                  }},
};

constexpr count_rule max_idle_rule{0, 65535, "no pooling"};

constexpr std::array upstream_rows{
    upstream_setting{
        "servers", "", "HOST:PORT",
        "Required. An array of HOST:PORT (numeric IP or localhost) or unix:PATH, "
        "each listed once.",
        "", false, false,
        [](upstream_config& u, const setting_value& v) {
            const toml::node& node = *v.node();
            std::vector<upstream_server> list;
            if (node.is_string()) {
                add_server(list, node.as_string()->get(), v.what());
            } else if (const toml::array* array = node.as_array()) {
                for (const toml::node& element : *array) {
                    try {
                        add_server(list, string_of(element, v.what(), server_expected), v.what());
                    } catch (const config_error& e) {
                        throw located_error(element.source().begin.line, e.what());
                    }
                }
            } else {
                wrong_type(node, v.what(), "expected an array of HOST:PORT or unix:PATH strings");
            }
            u.servers = std::move(list);
        }},
    upstream_setting{"balance", "", "STRING",
                     "How a server is chosen: round_robin, or least_conn (fewest requests in "
                     "flight).",
                     R"("round_robin")", false, false,
                     [](upstream_config& u, const setting_value& v) {
                         const std::string& text =
                             read_string(v, "expected \"round_robin\" or \"least_conn\"");
                         if (text == "round_robin") {
                             u.balance = upstream_config::balance_kind::round_robin;
                         } else if (text == "least_conn") {
                             u.balance = upstream_config::balance_kind::least_conn;
                         } else {
                             fail(v.what(),
                                  "expected \"round_robin\" or \"least_conn\", got " + quote(text));
                         }
                     }},
    upstream_setting{"max_idle", "", "N",
                     "The most idle pooled connections kept per server per worker, up to 65535 "
                     "(0: no pooling). Within it the pool follows demand: every 5 s, half of the "
                     "idle connections beyond the most that were busy at once are closed.",
                     "1024", false, false,
                     [](upstream_config& u, const setting_value& v) {
                         u.max_idle = static_cast<std::size_t>(read_count(v, max_idle_rule));
                     }},
    upstream_setting{"idle_timeout", "", "DUR",
                     "An idle pooled connection is closed after this, or sooner if the server's "
                     "Keep-Alive: timeout says so.",
                     R"("60s")", false, false,
                     apply_upstream_timeout<&upstream_config::idle_timeout>},
    upstream_setting{"connect_timeout", "", "DUR", "Time allowed to connect to a server.",
                     R"("5s")", false, false,
                     apply_upstream_timeout<&upstream_config::connect_timeout>},
    upstream_setting{"send_timeout", "", "DUR",
                     "Gap allowed between two writes of the request to the server.", R"("60s")",
                     false, false, apply_upstream_timeout<&upstream_config::send_timeout>},
    upstream_setting{"response_timeout", "", "DUR",
                     "Time from the end of the request to the first byte of the response.",
                     R"("60s")", false, false,
                     apply_upstream_timeout<&upstream_config::response_timeout>},
    upstream_setting{"read_timeout", "", "DUR",
                     "Gap allowed between two reads of the response body.", R"("60s")", false,
                     false, apply_upstream_timeout<&upstream_config::read_timeout>},
    upstream_setting{"fail_timeout", "", "DUR",
                     "A server that refused a connection or timed out is skipped this long.",
                     R"("10s")", false, false,
                     apply_upstream_timeout<&upstream_config::fail_timeout>},
    upstream_setting{"tunnel_idle_timeout", "", "DUR",
                     "An upgrade tunnel (WebSocket) with no byte either way for this long is "
                     "closed, both sides (HAProxy's timeout tunnel).",
                     R"("1h")", false, false,
                     apply_upstream_timeout<&upstream_config::tunnel_idle_timeout>},
};

// Checks that need the whole configuration. `line_of(route, key)` gives the line of a route's key
// (a top-level key when `route` is empty) in the file, or nothing when the check runs after the
// flags.
template <typename LineOf> void check_whole(const config& c, const LineOf& line_of) {
    const auto raise = [&](std::size_t i, std::string_view key, const std::string& message) {
        if (const std::optional<toml::source_index> line = line_of(std::optional(i), key)) {
            throw located_error(*line, message);
        }
        throw config_error(message);
    };
    std::vector<std::string_view> names;
    for (const upstream_config& u : c.upstreams)
        names.push_back(u.name);
    for (std::size_t i = 0; i < c.routes.size(); ++i) {
        const route_config& r = c.routes[i];
        if (r.what == route_config::kind::proxy &&
            std::find(names.begin(), names.end(), r.upstream) == names.end()) {
            std::string message =
                route_name(i) + ".upstream: no upstream named " + quote(r.upstream);
            if (const auto suggestion = closest(r.upstream, names)) {
                message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
            }
            raise(i, "upstream", message);
        }
    }
    if (const auto root = route_for_root(c); root && c.docroot) {
        std::string message = route_name(*root) + ".prefix: \"/\" conflicts with docroot";
        if (const auto line = line_of(std::optional<std::size_t>{}, "docroot")) {
            message += " (line " + std::to_string(*line) + ")";
        }
        raise(*root, "prefix", message + ", which is shorthand for a route \"/\"; keep one");
    }
}

} // namespace

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

namespace {

// ---------------------------------------------------------------------------------------------
// The command line.

// Each value flag takes exactly one value per occurrence and collects every occurrence, so that
// "given twice" and "missing value" are reported here in our words rather than by CLI11.
struct value_flag {
    std::string name;
    std::vector<std::string> values;

    bool present() const { return !values.empty(); }

    void check_single() const {
        if (values.size() > 1) fail(name, "given more than once");
        if (values.front().empty()) fail(name, "expected a value");
    }
};

bool given(const CLI::Option* flag) {
    for (const std::string& result : flag->results()) {
        if (result != "true") fail(flag->get_name(), "takes no value, got " + quote(result));
    }
    return flag->count() > 0;
}

bool is_switch(const setting& s) {
    return s.type.empty() || s.type == "BOOL";
}

std::vector<std::string_view> flag_names() {
    std::vector<std::string_view> names;
    for (const setting& s : setting_rows) {
        if (!s.flag.empty()) names.push_back(s.flag);
    }
    return names;
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
        const bool file_only =
            std::any_of(setting_rows.begin(), setting_rows.end(),
                        [&](const setting& s) { return s.key == key && s.flag.empty(); });
        if (file_only) {
            message += " (" + key + " can only be set in the config file)";
        } else if (const auto suggestion = closest(name, flag_names())) {
            message += " (did you mean " + std::string(*suggestion) + "?)";
        }
        throw config_error(message);
    }
}

// "65s" rather than "\"65s\"", "127.0.0.1:8080" rather than "[\"127.0.0.1:8080\"]".
std::string plain(std::string_view toml_text) {
    std::string out;
    for (const char c : toml_text) {
        if (c != '"' && c != '[' && c != ']') out += c;
    }
    return out;
}

// CLI11 prints descriptions unwrapped but indents after each newline, so wrapping here keeps
// --help within 100 columns beside its 30-column flag column.
std::string wrapped(std::string_view text, std::size_t width) {
    std::string out;
    std::size_t line = 0;
    while (!text.empty()) {
        const std::size_t space = text.find(' ');
        const std::string_view word = text.substr(0, space);
        if (line > 0 && line + 1 + word.size() > width) {
            out += '\n';
            line = 0;
        } else if (line > 0) {
            out += ' ';
            ++line;
        }
        out += word;
        line += word.size();
        text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    }
    return out;
}

std::string help_footer() {
    return "Precedence: built-in defaults < --config FILE < flags; --listen replaces the file's\n"
           "listen list. Durations need a unit: 250ms, 65s, 1.5s, 2m, 1h, 1500us.\n"
           "See tarry.example.toml for every setting and its default.\n";
}

} // namespace

// -------------------------------------------------------------------------------------------------

std::span<const setting> settings() {
    return setting_rows;
}

std::span<const route_setting> route_settings() {
    return route_rows;
}

std::span<const upstream_setting> upstream_settings() {
    return upstream_rows;
}

std::string listen_address::name() const {
    if (!unix_path.empty()) return "unix:" + unix_path.string();
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
           std::to_string(port);
}

namespace {

/// "unix:PATH": the path a socket file may have (sun_path holds 107 bytes and a NUL).
template <typename Bad> std::string unix_socket_path(std::string_view path, const Bad& bad) {
    if (path.empty()) bad("missing the socket's path");
    if (path.find('\0') != std::string_view::npos) bad("contains NUL");
    if (path.size() > 107) bad("a socket path is at most 107 bytes");
    return std::string(path);
}

} // namespace

listen_address parse_listen(const std::string& text, const std::string& what) {
    const auto bad = [&](std::string_view why) {
        fail(what,
             std::string(listen_expected) + ", got " + quote(text) + " (" + std::string(why) + ")");
    };
    // The address, then space-separated parameters, as nginx's `listen` directive has them.
    std::vector<std::string_view> words;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        if (end > at) words.emplace_back(text.data() + at, end - at);
        at = end + 1;
    }
    if (words.empty()) return host_port(text, bad, "0.0.0.0", 0); // says what is missing
    listen_address address;
    constexpr std::string_view unix_scheme = "unix:";
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

upstream_server parse_upstream_server(const std::string& text, const std::string& what) {
    const auto bad = [&](std::string_view why) {
        fail(what,
             std::string(server_expected) + ", got " + quote(text) + " (" + std::string(why) + ")");
    };
    upstream_server server;
    constexpr std::string_view unix_scheme = "unix:";
    if (text.rfind(unix_scheme, 0) == 0) {
        server.unix_path = unix_socket_path(std::string_view(text).substr(unix_scheme.size()), bad);
        return server;
    }
    listen_address address = host_port(text, bad, "", 1);
    server.host = std::move(address.host);
    server.port = address.port;
    return server;
}

std::vector<route_config> effective_routes(const config& cfg) {
    std::vector<route_config> routes = cfg.routes;
    if (!route_for_root(cfg)) {
        route_config root;
        root.prefix = "/";
        if (cfg.docroot) {
            root.what = route_config::kind::files;
            root.docroot = *cfg.docroot;
        }
        routes.push_back(std::move(root));
    }
    return routes;
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

    const std::vector<std::string_view> known = keys_of(setting_rows);
    for (const entry& e : in_file_order(root)) {
        const auto rule = std::find_if(setting_rows.begin(), setting_rows.end(),
                                       [&](const setting& s) { return s.key == e.key; });
        if (e.key.empty() || rule == setting_rows.end()) {
            std::string message = at_line(name, e.where.line) + "unknown key " + quote(e.key);
            if (const auto suggestion = closest(e.key, known)) {
                message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
            } else if (e.value->is_table()) {
                message += " (tarry's settings are all top-level keys, except the [[route]] and "
                           "[upstream.NAME] tables)";
            }
            throw config_error(message);
        }
        try {
            rule->apply(base, setting_value(*e.value, e.key));
        } catch (const located_error& error) {
            throw config_error(at_line(name, error.line()) + error.what());
        } catch (const config_error& error) {
            throw config_error(at_line(name, e.value->source().begin.line) + error.what());
        }
    }

    const auto line_of = [&](std::optional<std::size_t> route,
                             std::string_view key) -> std::optional<toml::source_index> {
        const toml::node* node = nullptr;
        if (!route) {
            node = root.get(key);
        } else if (const toml::array* routes = root["route"].as_array()) {
            if (const toml::table* table = routes->get_as<toml::table>(*route)) {
                node = table->get(key);
            }
        }
        if (node == nullptr) return {};
        return node->source().begin.line;
    };
    try {
        check_whole(base, line_of);
    } catch (const located_error& error) {
        throw config_error(at_line(name, error.line()) + error.what());
    }
    base.config_file = file;
    return base;
}

command_line parse_command_line(int argc, const char* const* argv) {
    CLI::App app{"tarry: an HTTP/1.1 keep-alive server.", "tarry"};
    app.allow_extras();
    app.footer(help_footer());

    // One CLI11 option per flag of the table, in the table's order. A deque: CLI11 keeps
    // pointers to each `values`.
    std::deque<value_flag> values;
    std::vector<value_flag*> value_of(setting_rows.size(), nullptr);
    std::vector<CLI::Option*> switch_of(setting_rows.size(), nullptr);
    for (std::size_t i = 0; i < setting_rows.size(); ++i) {
        const setting& s = setting_rows[i];
        if (s.flag.empty() || s.flag == "--help") continue; // CLI11 provides -h, --help
        std::string description(s.help);
        if (!s.default_text.empty() && !is_switch(s)) {
            description += " Default " + plain(s.default_text) + ".";
        }
        description = wrapped(description, 68);
        CLI::Option* option = nullptr;
        if (is_switch(s)) {
            // A non-const string as add_flag's second argument would be the flag's variable.
            option = app.add_flag(std::string(s.flag), std::as_const(description))
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            switch_of[i] = option;
        } else {
            value_flag& flag = values.emplace_back(value_flag{std::string(s.flag), {}});
            option = app.add_option(flag.name, flag.values, description)
                         ->type_name(std::string(s.type))
                         ->expected(0, 1)
                         ->allow_extra_args(false)
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            value_of[i] = &flag;
        }
        if (s.hidden) option->group("");
    }

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

    std::vector<bool> switched(setting_rows.size(), false);
    for (std::size_t i = 0; i < setting_rows.size(); ++i) {
        if (switch_of[i] != nullptr) switched[i] = given(switch_of[i]);
    }
    const auto action_given = [&](std::string_view flag) {
        for (std::size_t i = 0; i < setting_rows.size(); ++i) {
            if (setting_rows[i].flag == flag) return static_cast<bool>(switched[i]);
        }
        return false;
    };
    if (action_given("--version")) {
        result.what = command_line::action::version;
        return result;
    }
    if (action_given("--man")) {
        result.what = command_line::action::man;
        return result;
    }

    config& cfg = result.cfg;
    for (std::size_t i = 0; i < setting_rows.size(); ++i) {
        const value_flag* flag = value_of[i];
        if (flag == nullptr || flag->name != "--config" || !flag->present()) continue;
        flag->check_single();
        cfg = load_config_file(path_value(flag->values.front(), flag->name, "a file path"));
    }
    for (std::size_t i = 0; i < setting_rows.size(); ++i) {
        const setting& s = setting_rows[i];
        if (s.apply == nullptr) continue;
        if (const value_flag* flag = value_of[i]; flag != nullptr && flag->present()) {
            if (!s.repeatable) flag->check_single();
            s.apply(cfg, setting_value(flag->values, flag->name));
        } else if (switched[i]) {
            const std::vector<std::string> none;
            s.apply(cfg, setting_value(none, std::string(s.flag)));
        }
    }
    check_whole(cfg, [](std::optional<std::size_t>, std::string_view) {
        return std::optional<toml::source_index>{};
    });

    result.what = action_given("--check-config") ? command_line::action::check_config
                                                 : command_line::action::run;
    return result;
}

config reload_config(const config& /*current*/, int argc, const char* const* argv) {
    command_line again = parse_command_line(argc, argv);
    // Help, version and the manual never read the file, so their cfg is all defaults: applying
    // it would silently undo the whole configuration of a running server.
    if (again.what == command_line::action::help || again.what == command_line::action::version) {
        throw config_error("reload: the command line asks for --help or --version, not a server");
    }
    if (again.what == command_line::action::man) {
        throw config_error("reload: the command line asks for --man, not a server");
    }
    return std::move(again.cfg);
}

} // namespace tarry::server

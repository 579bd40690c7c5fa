#pragma once

// The TOML front end's side of the settings table, internal to the configuration units: a value
// as the table's `apply` functions receive it, how they read it (from a TOML node or from a
// flag's text, with the same grammar), the settings that only a file can give, and the checks
// that need the whole configuration.

#include "config.hpp"

#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tarry::server {

/// One value, from either side: a node of the TOML file, or every text a flag was given (the
/// command line has already checked that a flag which is not repeatable was given once, with a
/// value). `what` names it in messages: "keep_alive_timeout", "route[2].prefix", "--workers".
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

namespace config_detail {

struct count_rule;

/// Carries the line of an array element, which is more precise than the line of its key.
class located_error : public config_error {
public:
    located_error(toml::source_index line, const std::string& message)
        : config_error(message), line_(line) {}
    toml::source_index line() const { return line_; }

private:
    toml::source_index line_;
};

/// A node as messages show it: a quoted string, a number, "an array", "a table".
std::string describe(const toml::node& node);

// Readers for the table's `apply` functions. `zero_ok` allows 0; a BOOL flag is a switch, and
// giving it means `flag_means`; `kind` names a path ("a directory path") and `expected` is said
// of a file value of the wrong type.
duration read_timeout(const setting_value& v, bool zero_ok);
std::size_t read_size(const setting_value& v, bool zero_ok);
std::uint64_t read_count(const setting_value& v, const count_rule& rule);
std::filesystem::path read_path(const setting_value& v, std::string_view kind,
                                std::string_view expected);
const std::string& read_string(const setting_value& v, std::string_view expected);
bool read_bool(const setting_value& v, bool flag_means);
/// A server name or an array of them: letters, digits, '-' and '.', "*." first at most.
std::vector<std::string> read_names(const setting_value& v);

// Settings whose values are lists or tables.
void apply_listen(config& c, const setting_value& v);
void apply_servers(upstream_config& u, const setting_value& v);
void apply_routes(config& c, const setting_value& v);
void apply_upstreams(config& c, const setting_value& v);
/// listen (Tls false) or tls_listen (true): replaces the entries of its kind.
template <bool Tls> void apply_listen_of(config& c, const setting_value& v);
void apply_tls_tables(config& c, const setting_value& v);
/// `[[route]]` tables, or a site's `[[site.route]]` (v.what() names them in messages).
std::vector<route_config> read_routes(const setting_value& v);
void apply_sites(config& c, const setting_value& v);
/// `headers = { Name = "value" }`: fields an answer gets.
std::vector<header_config> read_headers(const setting_value& v);
/// `hide_headers = ["Name"]`: fields taken out of answers.
std::vector<std::string> read_field_names(const setting_value& v);
/// `error_pages = { 404 = "/srv/404.html" }`: each file read now.
std::vector<error_page_config> read_error_pages(const setting_value& v);
/// A whole file; `kind` says what it is in the message if it cannot be read.
std::string read_whole_file(const std::filesystem::path& file, const std::string& name,
                            std::string_view kind);

/// "route[1]" for the first route, as messages name it.
std::string route_name(std::size_t index);
/// The configured route whose prefix is "/", if any.
std::optional<std::size_t> route_for_root(const config& c);

/// Checks that need the whole configuration: every proxy route names an upstream, and docroot
/// and a route "/" are not both given. `file` is the file's root table, to give the lines of
/// the keys at fault; null when the check runs after the flags.
void check_whole(const config& c, const toml::table* file);

} // namespace config_detail
} // namespace tarry::server

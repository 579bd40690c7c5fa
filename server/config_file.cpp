// The TOML front end: the file read whole and its keys applied in file order, so that the first
// problem in the file is the one reported, with its line; the [[route]] and [upstream.NAME]
// tables; and how a TOML node reads as a setting's value.

#include "config_file.hpp"
#include "config_diff.hpp"

#include "config_values.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <system_error>
#include <tuple>

namespace tarry::server {
namespace config_detail {
namespace {

namespace fs = std::filesystem;
using namespace std::string_view_literals;

[[noreturn]] void wrong_type(const toml::node& node, const std::string& key,
                             std::string_view expected) {
    fail(key, std::string(expected) + ", got " + describe(node));
}

const std::string& string_of(const toml::node& node, const std::string& key,
                             std::string_view expected) {
    if (!node.is_string()) wrong_type(node, key, expected);
    return node.as_string()->get();
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

} // namespace

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

// --- Reading one value ---------------------------------------------------------------------------

duration read_timeout(const setting_value& v, bool zero_ok) {
    if (const toml::node* n = v.node()) {
        return timeout_value(string_of(*n, v.what(), duration_expected), v.what(), zero_ok);
    }
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

bool read_bool(const setting_value& v, bool flag_means) {
    const toml::node* n = v.node();
    if (n == nullptr) return flag_means;
    if (!n->is_boolean()) wrong_type(*n, v.what(), "expected true or false");
    return n->as_boolean()->get();
}

std::vector<std::string> read_names(const setting_value& v) {
    const toml::node& node = *v.node();
    std::vector<const toml::node*> items;
    if (const toml::array* array = node.as_array()) {
        for (const toml::node& e : *array)
            items.push_back(&e);
    } else {
        items.push_back(&node);
    }
    std::vector<std::string> names;
    for (const toml::node* e : items) {
        const std::string name = string_of(*e, v.what(), "expected a server name string");
        std::string_view rest = name;
        if (rest.starts_with("*.")) rest.remove_prefix(2);
        const bool ok =
            !rest.empty() && rest.size() < 254 && std::all_of(rest.begin(), rest.end(), [](char c) {
                return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       c == '-' || c == '.';
            });
        if (!ok)
            fail(v.what(), "expected a server name such as \"example.com\", got " + quote(name));
        names.push_back(name);
    }
    if (names.empty()) fail(v.what(), "needs at least one server name");
    return names;
}

// --- Lists and tables ----------------------------------------------------------------------------

void apply_listen(config& c, const setting_value& v) {
    apply_listen_of<false>(c, v);
}

template <bool Tls> void apply_listen_of(config& c, const setting_value& v) {
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
    // The other kind's entries stay; one socket cannot be both.
    std::erase_if(c.listen, [](const listen_address& a) { return a.tls == Tls; });
    for (listen_address& a : list) {
        a.tls = Tls;
        for (const listen_address& other : c.listen)
            if (other.same_socket(a))
                fail(v.what(), a.name() + " is also a " + (Tls ? "listen" : "tls_listen") +
                                   " address; a socket is plain or TLS, not both");
        if (Tls && !a.unix_path.empty()) fail(v.what(), a.name() + ": TLS is for TCP addresses");
    }
    c.listen.insert(c.listen.end(), list.begin(), list.end());
}

template void apply_listen_of<false>(config&, const setting_value&);
template void apply_listen_of<true>(config&, const setting_value&);

void apply_servers(upstream_config& u, const setting_value& v) {
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
}

namespace {

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

// TOML puts every key written after a [table] header into that table, so a top-level key added at
// the end of a file lands in the last table: the message says so instead of only "unknown".
template <typename Rules>
std::string unknown_in_table(const std::string& key, const std::string& name, const Rules& rules) {
    std::string message = name + ": unknown key " + quote(key);
    const std::vector<std::string_view> top_level = keys_of(settings());
    const auto move_it = " above the first [table] or [[table]] of the file (TOML puts every key "
                         "after a table header into that table)";
    if (std::find(top_level.begin(), top_level.end(), key) != top_level.end()) {
        message += ": it is a top-level key, move it";
        message += move_it;
    } else if (const auto suggestion = closest(key, keys_of(rules))) {
        message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
    } else if (const auto top = closest(key, top_level)) {
        message += " (did you mean the top-level key \"" + std::string(*top) + "\"? it belongs";
        message += move_it;
        message += ")";
    }
    return message;
}

// Applies every key of `table` through `rules`; `name` prefixes the keys in messages.
template <typename Target>
void apply_table(Target& target, const toml::table& table, const std::string& name,
                 std::span<const basic_setting<Target>> rules) {
    for (const entry& e : in_file_order(table)) {
        const auto rule =
            std::find_if(rules.begin(), rules.end(), [&](const auto& r) { return r.key == e.key; });
        if (rule == rules.end())
            throw located_error(e.where.line, unknown_in_table(e.key, name, rules));
        try {
            rule->apply(target, setting_value(*e.value, name + "." + e.key));
        } catch (const located_error&) {
            throw;
        } catch (const config_error& error) {
            throw located_error(e.value->source().begin.line, error.what());
        }
    }
}

bool valid_upstream_name(std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
               c == '-';
    });
}

} // namespace

std::vector<route_config> read_routes(const setting_value& v) {
    const toml::node& node = *v.node();
    const toml::array* array = node.as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
        wrong_type(node, v.what(), "expected [[" + v.what() + "]] tables");
    }
    // "route[2]", or "site[1].route[2]" for a site's.
    const auto name_of = [&](std::size_t i) {
        return v.what() + "[" + std::to_string(i + 1) + "]";
    };
    std::vector<route_config> routes;
    for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::table& table = *array->get(i)->as_table();
        const std::string name = name_of(i);
        const toml::source_index line = table.source().begin.line;
        route_config route;
        apply_table(route, table, name, route_settings());

        const std::array choices{"upstream"sv, "docroot"sv, "respond"sv, "redirect"sv};
        std::vector<std::string_view> given;
        for (const std::string_view choice : choices) {
            if (table.contains(choice)) given.push_back(choice);
        }
        if (given.size() != 1) {
            std::string message =
                name + ": needs exactly one of upstream, docroot, respond or redirect";
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
        // Keys that belong to one kind of route, and the kind.
        using k = route_config::kind;
        for (const auto& [key, kind, says] :
             {std::tuple{"cache_control"sv, k::files, "only a docroot route sends Cache-Control"sv},
              std::tuple{"upgrade"sv, k::proxy, "only an upstream route passes upgrades on"sv},
              std::tuple{"strip_prefix"sv, k::proxy, "only an upstream route strips its prefix"sv},
              std::tuple{"intercept_errors"sv, k::proxy,
                         "only an upstream route has an upstream's errors to replace"sv},
              std::tuple{"fallback"sv, k::files, "only a docroot route has a fallback file"sv},
              std::tuple{"status"sv, k::redirect, "only a redirect route has a status"sv}}) {
            if (table.contains(key) && route.what != kind) {
                throw located_error(table.get(key)->source().begin.line,
                                    name + "." + std::string(key) + ": " + std::string(says));
            }
        }
        for (std::size_t j = 0; j < routes.size(); ++j) {
            if (routes[j].prefix == route.prefix) {
                throw located_error(table.get("prefix")->source().begin.line,
                                    name + ".prefix: " + quote(route.prefix) +
                                        " is already the prefix of " + name_of(j));
            }
        }
        routes.push_back(std::move(route));
    }
    return routes;
}

void apply_routes(config& c, const setting_value& v) {
    c.routes = read_routes(v);
}

void apply_sites(config& c, const setting_value& v) {
    const toml::node& node = *v.node();
    const toml::array* array = node.as_array();
    if (array == nullptr || !array->is_array_of_tables())
        wrong_type(node, v.what(), "expected [[site]] tables");
    std::vector<site_config> sites;
    for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::table& table = *array->get(i)->as_table();
        const std::string name = "site[" + std::to_string(i + 1) + "]";
        const toml::source_index line = table.source().begin.line;
        site_config site;
        apply_table(site, table, name, site_settings());
        if (!table.contains("server_names") && !site.is_default)
            throw located_error(line, name + ".server_names: required (or default = true)");
        if (site.routes.empty())
            throw located_error(line, name + ".route: required: at least one [[site.route]] "
                                             "table after the [[site]] it belongs to");
        for (std::size_t j = 0; j < sites.size(); ++j) {
            if (site.is_default && sites[j].is_default)
                throw located_error(table.get("default")->source().begin.line,
                                    name + ".default: site[" + std::to_string(j + 1) +
                                        "] is already the default site");
            for (const std::string& n : site.server_names)
                for (const std::string& other : sites[j].server_names)
                    if (normalize_name(n) == normalize_name(other))
                        throw located_error(table.get("server_names")->source().begin.line,
                                            name + ".server_names: " + quote(n) +
                                                " is already a name of site[" +
                                                std::to_string(j + 1) + "]");
        }
        sites.push_back(std::move(site));
    }
    c.sites = std::move(sites);
}

std::vector<header_config> read_headers(const setting_value& v) {
    const toml::table* table = v.node()->as_table();
    if (table == nullptr)
        wrong_type(*v.node(), v.what(),
                   "expected a table of fields, such as { \"X-Frame-Options\" = \"DENY\" }");
    std::vector<header_config> headers;
    for (const entry& e : in_file_order(*table)) {
        const std::string what = v.what() + "." + e.key;
        try {
            field_name(e.key, v.what(), true);
            headers.push_back(
                {e.key, header_value(string_of(*e.value, what, "expected a string"), what)});
        } catch (const config_error& error) {
            throw located_error(e.where.line, error.what());
        }
    }
    return headers;
}

std::vector<std::string> read_field_names(const setting_value& v) {
    const toml::array* array = v.node()->as_array();
    if (array == nullptr)
        wrong_type(*v.node(), v.what(),
                   "expected an array of field names, such as [\"X-Powered-By\"]");
    std::vector<std::string> names;
    for (const toml::node& e : *array) {
        try {
            names.push_back(field_name(string_of(e, v.what(), "expected a field name string"),
                                       v.what(), false));
        } catch (const config_error& error) {
            throw located_error(e.source().begin.line, error.what());
        }
    }
    return names;
}

std::vector<error_page_config> read_error_pages(const setting_value& v) {
    const toml::table* table = v.node()->as_table();
    if (table == nullptr)
        wrong_type(*v.node(), v.what(),
                   "expected a table of statuses and files, such as { 404 = \"/srv/404.html\" }");
    std::vector<error_page_config> pages;
    for (const entry& e : in_file_order(*table)) {
        const std::string what = v.what() + "." + e.key;
        try {
            error_page_config page;
            const bool digits =
                e.key.size() == 3 && std::all_of(e.key.begin(), e.key.end(), is_digit);
            page.status = digits ? static_cast<unsigned>(std::stoul(e.key)) : 0;
            if (page.status < 400 || page.status > 599)
                fail(what, "expected a status from 400 to 599 as the key, got " + quote(e.key));
            page.file = path_value(string_of(*e.value, what, "expected a file path string"), what,
                                   "a file path");
            page.body = read_whole_file(page.file, what, "the file " + page.file.string());
            pages.push_back(std::move(page));
        } catch (const located_error&) {
            throw;
        } catch (const config_error& error) {
            throw located_error(e.where.line, error.what());
        }
    }
    return pages;
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
        if (!upstream.secure()) {
            // A TLS setting on an upstream reached in plain text would do nothing: most likely
            // its servers were meant to be https:// (a default written out is no setting).
            const std::pair<const char*, bool> tls_keys[] = {
                {"tls_verify", !upstream.tls_verify},
                {"tls_ca_file", !upstream.tls_ca_file.empty()},
                {"tls_server_name", !upstream.tls_server_name.empty()},
                {"tls_client_certificate", !upstream.tls_client_certificate.empty()},
                {"tls_client_certificate_key", !upstream.tls_client_certificate_key.empty()}};
            for (const auto& [key, set] : tls_keys) {
                if (const toml::node* n = table->get(key); n != nullptr && set) {
                    throw located_error(n->source().begin.line,
                                        name + "." + key +
                                            ": the upstream is not TLS (write its servers "
                                            "https://HOST:PORT, or set tls = true)");
                }
            }
        }
        upstreams.push_back(std::move(upstream));
    }
    c.upstreams = std::move(upstreams);
}

void apply_tls_tables(config& c, const setting_value& v) {
    const toml::node& node = *v.node();
    const toml::array* array = node.as_array();
    if (array == nullptr || !array->is_array_of_tables())
        wrong_type(node, v.what(), "expected [[tls]] tables");
    std::vector<tls_config> list;
    for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::table& table = *array->get(i)->as_table();
        const std::string name = "tls[" + std::to_string(i + 1) + "]";
        const toml::source_index line = table.source().begin.line;
        tls_config t;
        apply_table(t, table, name, tls_settings());
        for (const std::string_view key : {"server_names"sv, "certificate"sv, "certificate_key"sv})
            if (!table.contains(key))
                throw located_error(line, name + "." + std::string(key) + ": required");
        list.push_back(std::move(t));
    }
    c.tls = std::move(list);
}

// --- The whole configuration ---------------------------------------------------------------------

std::string route_name(std::size_t index) {
    return "route[" + std::to_string(index + 1) + "]";
}

std::optional<std::size_t> route_for_root(const config& c) {
    for (std::size_t i = 0; i < c.routes.size(); ++i) {
        if (c.routes[i].prefix == "/") return i;
    }
    return {};
}

void check_whole(const config& c, const toml::table* file) {
    // The line of a route's key, or of a top-level key when `route` is empty.
    const auto line_of = [&](std::optional<std::size_t> route,
                             std::string_view key) -> std::optional<toml::source_index> {
        if (file == nullptr) return {};
        const toml::node* node = nullptr;
        if (!route) {
            node = file->get(key);
        } else if (const toml::array* routes = file->get_as<toml::array>("route")) {
            if (const toml::table* table = routes->get_as<toml::table>(*route)) {
                node = table->get(key);
            }
        }
        if (node == nullptr) return {};
        return node->source().begin.line;
    };
    const auto raise = [&](std::size_t i, std::string_view key, const std::string& message) {
        if (const std::optional<toml::source_index> line = line_of(i, key)) {
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
    // A site's routes: the line of the route's key, or of the site's table.
    const auto site_raise = [&](std::size_t site, std::size_t route, std::string_view key,
                                const std::string& message) {
        const toml::array* sites = file != nullptr ? file->get_as<toml::array>("site") : nullptr;
        const toml::table* table = sites != nullptr ? sites->get_as<toml::table>(site) : nullptr;
        if (table != nullptr) {
            const toml::node* node = nullptr;
            if (const toml::array* routes = table->get_as<toml::array>("route"))
                if (const toml::table* r = routes->get_as<toml::table>(route)) node = r->get(key);
            throw located_error(
                node != nullptr ? node->source().begin.line : table->source().begin.line, message);
        }
        throw config_error(message);
    };
    const site_config* default_site = nullptr;
    for (std::size_t i = 0; i < c.sites.size(); ++i) {
        const std::string site = "site[" + std::to_string(i + 1) + "]";
        if (c.sites[i].is_default) default_site = &c.sites[i];
        for (std::size_t j = 0; j < c.sites[i].routes.size(); ++j) {
            const route_config& r = c.sites[i].routes[j];
            if (r.what != route_config::kind::proxy ||
                std::find(names.begin(), names.end(), r.upstream) != names.end())
                continue;
            std::string message = site + ".route[" + std::to_string(j + 1) +
                                  "].upstream: no upstream named " + quote(r.upstream);
            if (const auto suggestion = closest(r.upstream, names))
                message += " (did you mean \"" + std::string(*suggestion) + "\"?)";
            site_raise(i, j, "upstream", message);
        }
    }
    const bool has_tls = std::any_of(c.listen.begin(), c.listen.end(),
                                     [](const listen_address& a) { return a.tls; });
    if (default_site != nullptr && (!c.routes.empty() || c.docroot)) {
        const std::size_t i = static_cast<std::size_t>(default_site - c.sites.data());
        site_raise(i, 0, "default",
                   "site[" + std::to_string(i + 1) + "].default: the top-level " +
                       (c.docroot ? "docroot" : "[[route]] tables") +
                       " already make the default site; keep one");
    }
    if (default_site != nullptr && c.unknown_host != 0) {
        const std::size_t i = static_cast<std::size_t>(default_site - c.sites.data());
        site_raise(i, 0, "default",
                   "site[" + std::to_string(i + 1) + "].default: unknown_host = \"" +
                       std::to_string(c.unknown_host) +
                       "\" answers the requests no site names; keep one");
    }
    if (c.https_redirect && !has_tls) {
        if (const auto line = line_of({}, "https_redirect"))
            throw located_error(*line, "https_redirect: needs a tls_listen address to send to");
        throw config_error("https_redirect: needs a tls_listen address to send to");
    }
    const auto top_raise = [&](std::string_view key, const std::string& message) {
        if (const auto line = line_of({}, key)) throw located_error(*line, message);
        throw config_error(message);
    };
    if (c.listen.empty())
        top_raise("listen", "listen: needs at least one address (in listen or tls_listen)");
    if (c.tls_certificate.has_value() != c.tls_certificate_key.has_value())
        top_raise(c.tls_certificate ? "tls_certificate" : "tls_certificate_key",
                  c.tls_certificate ? "tls_certificate_key: required with tls_certificate"
                                    : "tls_certificate: required with tls_certificate_key");
    if (has_tls && !c.tls_certificate && c.tls.empty())
        top_raise("tls_listen", "tls_listen: needs tls_certificate and tls_certificate_key (or a "
                                "[[tls]] table)");
    if (c.resolve_interval_min > c.resolve_interval_max)
        top_raise("resolve_interval_min",
                  "resolve_interval_min: " + duration_text(c.resolve_interval_min) +
                      " is more than resolve_interval_max (" +
                      duration_text(c.resolve_interval_max) + ")");
    if (const auto root = route_for_root(c); root && c.docroot) {
        std::string message = route_name(*root) + ".prefix: \"/\" conflicts with docroot";
        if (const auto line = line_of({}, "docroot")) {
            message += " (line " + std::to_string(*line) + ")";
        }
        raise(*root, "prefix", message + ", which is shorthand for a route \"/\"; keep one");
    }
}

} // namespace config_detail

// --- The file ------------------------------------------------------------------------------------

using namespace config_detail;

namespace config_detail {

std::string read_whole_file(const std::filesystem::path& file, const std::string& name,
                            std::string_view kind) {
    const auto cannot = [&](const std::string& why) -> config_error {
        return config_error(name + ": cannot read " + std::string(kind) + ": " + why);
    };
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(file, ec);
    if (ec) throw cannot(ec.message());
    // Opening a directory succeeds on Linux and only the first read fails, with a vaguer error.
    if (std::filesystem::is_directory(status)) throw cannot("it is a directory");
    errno = 0;
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw cannot(errno != 0 ? std::generic_category().message(errno) : "cannot open it");
    }
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw cannot("read error");
    return text;
}

} // namespace config_detail

namespace {

std::string at_line(const std::string& name, toml::source_index line) {
    return name + ":" + std::to_string(line) + ": ";
}

} // namespace

config load_config_file(const std::filesystem::path& file, config base) {
    const std::string name = file.string();
    if (name.empty()) throw config_error("config file: expected a file name, got an empty string");
    const std::string text = read_whole_file(file, name, "the config file");

    toml::table root;
    try {
        root = toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        throw config_error(at_line(name, e.source().begin.line) +
                           "TOML syntax error: " + one_line(e.description()));
    }

    const std::span<const setting> rows = settings();
    const std::vector<std::string_view> known = keys_of(rows);
    for (const entry& e : in_file_order(root)) {
        const auto rule = std::find_if(rows.begin(), rows.end(),
                                       [&](const setting& s) { return s.key == e.key; });
        if (e.key.empty() || rule == rows.end()) {
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

    try {
        check_whole(base, &root);
    } catch (const located_error& error) {
        throw config_error(at_line(name, error.line()) + error.what());
    }
    base.config_file = file;
    return base;
}

} // namespace tarry::server

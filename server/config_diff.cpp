#include "config_diff.hpp"

#include <algorithm>
#include <functional>

namespace tarry::server {
namespace {

std::string text_of(duration d) {
    return duration_text(d);
}
std::string text_of(const std::string& s) {
    return "\"" + s + "\"";
}
std::string text_of(bool b) {
    return b ? "true" : "false";
}
template <typename Number>
requires std::is_arithmetic_v<Number> std::string text_of(Number n) {
    return std::to_string(n);
}
std::string text_of(const std::filesystem::path& p) {
    return text_of(p.string());
}
std::string text_of(const listen_address& a) {
    return a.name();
}
std::string text_of(const std::vector<std::string>& v) {
    if (v.empty()) return "[] (the system's)";
    std::string out = "[";
    for (const std::string& s : v)
        out += (out.size() > 1 ? ", " : "") + text_of(s);
    return out + "]";
}
template <typename T> std::string text_of(const std::optional<T>& v) {
    return v ? text_of(*v) : "unset";
}

// Entries of two lists matched by a key: "<what> <key> added/removed/changed".
template <typename T, typename Key, typename Name>
void list_changes(std::vector<std::string>& out, const std::string& what,
                  const std::vector<T>& before, const std::vector<T>& after, Key same, Name name) {
    for (const T& b : before) {
        const auto a =
            std::find_if(after.begin(), after.end(), [&](const T& x) { return same(b, x); });
        if (a == after.end()) {
            out.push_back(what + " " + name(b) + " removed");
        } else if (!(*a == b)) {
            out.push_back(what + " " + name(b) + " changed");
        }
    }
    for (const T& a : after)
        if (std::none_of(before.begin(), before.end(), [&](const T& x) { return same(x, a); }))
            out.push_back(what + " " + name(a) + " added");
}

} // namespace

std::string duration_text(duration d) {
    using namespace std::chrono;
    if (d % seconds(1) == duration::zero())
        return std::to_string(duration_cast<seconds>(d).count()) + "s";
    if (d % milliseconds(1) == duration::zero())
        return std::to_string(duration_cast<milliseconds>(d).count()) + "ms";
    return std::to_string(duration_cast<microseconds>(d).count()) + "us";
}

std::vector<std::string> config_changes(const config& before, const config& after) {
    std::vector<std::string> out;
    const auto scalar = [&](const char* key, const auto field) {
        const auto& b = before.*field;
        const auto& a = after.*field;
        if (!(b == a)) out.push_back(std::string(key) + " " + text_of(b) + " -> " + text_of(a));
    };
    // Listeners by socket: a parameter changed on a kept socket (mode, owner) is "changed".
    const auto listeners = [](bool tls) {
        return [tls](const config& c) {
            std::vector<listen_address> v;
            std::copy_if(c.listen.begin(), c.listen.end(), std::back_inserter(v),
                         [tls](const listen_address& a) { return a.tls == tls; });
            return v;
        };
    };
    const auto same_socket = [](const listen_address& a, const listen_address& b) {
        return a.same_socket(b);
    };
    const auto socket_name = [](const listen_address& a) { return a.name(); };
    list_changes(out, "listen", listeners(false)(before), listeners(false)(after), same_socket,
                 socket_name);
    list_changes(out, "tls_listen", listeners(true)(before), listeners(true)(after), same_socket,
                 socket_name);
    scalar("tls_certificate", &config::tls_certificate);
    scalar("tls_certificate_key", &config::tls_certificate_key);
    list_changes(
        out, "tls", before.tls, after.tls,
        [](const tls_config& a, const tls_config& b) { return a.server_names == b.server_names; },
        [](const tls_config& t) {
            return t.server_names.empty() ? std::string("[]") : text_of(t.server_names.front());
        });
    scalar("handshake_timeout", &config::handshake_timeout);
    scalar("docroot", &config::docroot);
    scalar("keep_alive_timeout", &config::keep_alive_timeout);
    scalar("header_timeout", &config::header_timeout);
    scalar("body_timeout", &config::body_timeout);
    scalar("request_timeout", &config::request_timeout);
    scalar("send_timeout", &config::send_timeout);
    scalar("drain_timeout", &config::drain_timeout);
    scalar("lingering_time", &config::lingering_time);
    scalar("lingering_timeout", &config::lingering_timeout);
    scalar("max_connection_age", &config::max_connection_age);
    scalar("close_spread_time", &config::close_spread_time);
    scalar("keep_alive_min_timeout", &config::keep_alive_min_timeout);
    scalar("max_requests_per_connection", &config::max_requests_per_connection);
    scalar("max_header_bytes", &config::max_header_bytes);
    scalar("max_body_bytes", &config::max_body_bytes);
    scalar("workers", &config::workers);
    scalar("max_connections", &config::max_connections);
    scalar("max_connections_per_client", &config::max_connections_per_client);
    scalar("client_prefix_v4", &config::client_prefix_v4);
    scalar("client_prefix_v6", &config::client_prefix_v6);
    scalar("admin_listen", &config::admin_listen);
    scalar("log_level", &config::log_level);
    scalar("pid_file", &config::pid_file);
    scalar("access_log", &config::access_log);
    scalar("access_log_format", &config::access_log_format);
    scalar("expire_batch", &config::expire_batch);
    scalar("timeouts", &config::timeouts);
    scalar("trust_forwarded", &config::trust_forwarded);
    scalar("http2", &config::http2);
    scalar("http2_max_concurrent_streams", &config::http2_max_concurrent_streams);
    scalar("http2_initial_window_size", &config::http2_initial_window_size);
    scalar("http2_ack_timeout", &config::http2_ack_timeout);
    scalar("http2_ping_interval", &config::http2_ping_interval);
    // Upstream servers by name.
    scalar("resolver", &config::resolver);
    scalar("resolve_interval_min", &config::resolve_interval_min);
    scalar("resolve_interval_max", &config::resolve_interval_max);
    list_changes(
        out, "route", before.routes, after.routes,
        [](const route_config& a, const route_config& b) { return a.prefix == b.prefix; },
        [](const route_config& r) { return text_of(r.prefix); });
    list_changes(
        out, "upstream", before.upstreams, after.upstreams,
        [](const upstream_config& a, const upstream_config& b) { return a.name == b.name; },
        [](const upstream_config& u) { return u.name; });
    list_changes(
        out, "site", before.sites, after.sites,
        [](const site_config& a, const site_config& b) {
            return a.server_names == b.server_names && a.is_default == b.is_default;
        },
        [](const site_config& s) {
            return s.server_names.empty() ? std::string("(default)")
                                          : text_of(s.server_names.front());
        });
    scalar("unknown_host", &config::unknown_host);
    scalar("https_redirect", &config::https_redirect);
    return out;
}

} // namespace tarry::server

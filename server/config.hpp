#pragma once

#include <tarry/timeouts/expire_batch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tarry::server {

using namespace std::chrono_literals;
using duration = std::chrono::steady_clock::duration;

/// Where to accept connections, and how: "HOST:PORT" (a numeric IPv4/IPv6 address or
/// "localhost") or "unix:PATH", then parameters as nginx's `listen` takes them:
/// `proxy_protocol`, and for a Unix socket `mode=0660` and `owner=USER[:GROUP]`.
struct listen_address {
    listen_address() = default;
    listen_address(std::string h, std::uint16_t p) : host(std::move(h)), port(p) {}

    std::string host;
    std::uint16_t port = 0;
    std::filesystem::path unix_path; ///< a Unix socket when not empty (host and port unused)
    bool proxy_protocol = false;     ///< every connection starts with a PROXY header (v1 or v2)
    std::optional<unsigned> mode;    ///< unix: the socket file's permission bits
    std::string owner;               ///< unix: USER[:GROUP] given the socket file; empty: ours
    bool tls = false;                ///< from tls_listen: every connection starts with a handshake

    /// Whether both name the same socket, however spelt ("localhost" and "127.0.0.1",
    /// "unix:/a/./x.sock" and "unix:/a/x.sock") and parameters aside: listed twice, it is
    /// refused; kept by a reload, it stays open.
    [[nodiscard]] bool same_socket(const listen_address& o) const;
    /// "127.0.0.1:8080", "[::1]:8080" or "unix:/run/tarry.sock", for messages.
    [[nodiscard]] std::string name() const;
    friend bool operator==(const listen_address&, const listen_address&) = default;
};

/// One server of an upstream: HOST:PORT (numeric IP, localhost or a DNS name), or a Unix socket.
struct upstream_server {
    std::string host;
    std::uint16_t port = 0;
    std::filesystem::path unix_path; ///< a Unix socket when not empty (host and port unused)
    bool tls = false;                ///< written https://HOST:PORT
    friend bool operator==(const upstream_server&, const upstream_server&) = default;
};

/// `[upstream.NAME]`: a pool of servers a route proxies to.
struct upstream_config {
    enum class balance_kind { round_robin, least_conn };

    std::string name;                     ///< [A-Za-z0-9_-]+
    std::vector<upstream_server> servers; ///< at least one, no duplicates
    balance_kind balance = balance_kind::round_robin;
    std::size_t max_idle = 1024; ///< cap on idle pooled connections per server per worker; 0: none
    duration idle_timeout = 60s; ///< idle pooled connection closed (upstream Keep-Alive may cut it)
    duration connect_timeout = 5s;
    duration send_timeout = 60s;       ///< gap between writes of the request to the upstream
    duration response_timeout = 60s;   ///< end of the request to the first byte of the response
    duration read_timeout = 60s;       ///< gap between reads of the response body
    duration fail_timeout = 10s;       ///< a server that refused or timed out is skipped this long
    duration tunnel_idle_timeout = 1h; ///< an upgrade tunnel with no byte either way
    // TLS to the servers: `tls = true`, or servers written https://HOST:PORT.
    bool tls = false;
    bool tls_verify = true;              ///< false: any certificate is taken
    std::filesystem::path tls_ca_file{}; ///< empty: the system's store
    std::string tls_server_name{};       ///< verified (and SNI); empty: each server's host
    std::filesystem::path tls_client_certificate{}; ///< mTLS; empty: none
    std::filesystem::path tls_client_certificate_key{};
    /// Whether its servers are reached over TLS.
    [[nodiscard]] bool secure() const noexcept {
        return tls || std::any_of(servers.begin(), servers.end(),
                                  [](const upstream_server& s) { return s.tls; });
    }
    friend bool operator==(const upstream_config&, const upstream_config&) = default;
};

/// `[[tls]]`: a certificate and its key for the server names it lists, chosen by SNI.
struct tls_config {
    std::vector<std::string> server_names; ///< "example.com", "*.example.com"
    std::filesystem::path certificate;     ///< PEM, the certificate then its chain
    std::filesystem::path certificate_key; ///< PEM
    friend bool operator==(const tls_config&, const tls_config&) = default;
};

/// A response field a route or site sets on every answer (`headers`).
struct header_config {
    std::string name;
    std::string value;
    friend bool operator==(const header_config&, const header_config&) = default;
};

/// `error_pages`: a file that replaces the server's own answer of one status.
struct error_page_config {
    unsigned status = 0;
    std::filesystem::path file;
    std::string body; ///< the file as the configuration was read (a reload reads it again)
    friend bool operator==(const error_page_config&, const error_page_config&) = default;
};

/// `[[route]]`: what answers requests whose target starts with `prefix` (longest prefix wins).
struct route_config {
    enum class kind { hello, files, proxy, redirect };

    std::string prefix; ///< starts with "/"
    kind what = kind::hello;
    std::filesystem::path docroot;        ///< kind::files
    std::string upstream;                 ///< kind::proxy: an upstream_config::name
    std::string cache_control;            ///< kind::files: sent as Cache-Control when not empty
    bool upgrade = true;                  ///< kind::proxy: pass requests to switch protocols on
    std::string redirect{};               ///< kind::redirect: the Location, {scheme} {host} {uri}
    unsigned status = 302;                ///< kind::redirect: 301, 302, 303, 307 or 308
    bool strip_prefix = false;            ///< kind::proxy: the prefix is taken off the target
    std::string fallback{};               ///< kind::files: the target a 404 is answered for instead
    std::vector<header_config> headers{}; ///< set on every answer
    std::vector<std::string> hide_headers{};      ///< taken out of every answer
    std::vector<error_page_config> error_pages{}; ///< the server's own answers replaced
    bool intercept_errors = false; ///< kind::proxy: error_pages replace the upstream's answers too
    friend bool operator==(const route_config&, const route_config&) = default;
};

/// `[[site]]`: the routes that answer the requests whose Host is one of `server_names`.
struct site_config {
    std::vector<std::string> server_names;      ///< "example.com", "*.example.com"
    bool is_default = false;                    ///< takes the requests whose Host names no site
    std::vector<header_config> headers;         ///< set on every answer of its routes
    std::vector<std::string> hide_headers;      ///< taken out of every answer of its routes
    std::vector<error_page_config> error_pages; ///< for every route (a route's own win)
    std::vector<route_config> routes;           ///< [[site.route]]
    friend bool operator==(const site_config&, const site_config&) = default;
};

/// Everything a user can tune, with the defaults users of nginx and Node.js expect.
struct config {
    std::vector<listen_address> listen{{"127.0.0.1", 8080}};
    std::optional<std::filesystem::path> docroot;

    /// The default certificate of every tls_listen address (for clients without SNI, or with a
    /// name no [[tls]] table lists); without it, the first [[tls]] table's.
    std::optional<std::filesystem::path> tls_certificate;
    std::optional<std::filesystem::path> tls_certificate_key;
    std::vector<tls_config> tls;      ///< [[tls]]: certificates by server name
    duration handshake_timeout = 10s; ///< accept to the end of the TLS handshake; silent close

    duration keep_alive_timeout = 65s; ///< idle between requests; silent close
    duration header_timeout = 60s;     ///< first byte (or accept) to end of headers; total
    duration body_timeout = 60s;       ///< gap between two reads of a request body
    duration send_timeout = 60s;       ///< gap between two writes the client does not drain
    duration drain_timeout = 10s;      ///< graceful stop: how long in-flight requests may take
    duration request_timeout = 300s;   ///< total time to receive a request's body
    duration lingering_time = 30s;     ///< after an error response: total time discarding input
    duration lingering_timeout = 5s;   ///< after an error response: gap between discarding reads
    duration max_connection_age = 0s;  ///< past it the next response closes; 0: off
    duration close_spread_time = 1s;   ///< graceful stop closes idle connections over this window
    duration keep_alive_min_timeout = 1s; ///< never closed for stop or pressure sooner than this
    std::uint32_t max_requests_per_connection = 1000; ///< 0: unlimited
    std::size_t max_header_bytes =
        16 * std::size_t{1024}; ///< request line + headers; over it: 431/414
    std::size_t max_body_bytes = 1024 * std::size_t{1024}; ///< over it: 413

    unsigned workers = 0;                       ///< 0: one per core
    std::size_t max_connections = 0;            ///< per server; 0: derived from the open-file limit
    std::size_t max_connections_per_client = 0; ///< per client address or prefix; 0: no limit
    unsigned client_prefix_v4 = 32;             ///< the bits of an IPv4 address naming one client
    unsigned client_prefix_v6 = 64;             ///< the bits of an IPv6 address naming one client
    std::optional<listen_address> admin_listen; ///< serves /metrics and /healthz; off by default
    std::optional<std::filesystem::path> pid_file; ///< nginx's `pid`: off by default
    std::string log_level = "info"; ///< trace, debug, info, warn, error, critical, off
    std::optional<std::filesystem::path> access_log; ///< off by default; "-" is stdout
    std::string access_log_format = "common";        ///< common, combined (nginx's), extended, json
    std::size_t expire_batch = timeouts::default_expire_batch; ///< expiry callbacks per timer wake
    bool timeouts = true;         ///< false only to measure what enforcing them costs
    bool trust_forwarded = false; ///< keep incoming X-Forwarded-* fields and append to them
    bool http2 = true;            ///< HTTP/2: h2c by the client preface on plain listeners
    // HTTP/2's limits (nginx's defaults where it has the same).
    std::uint32_t http2_max_concurrent_streams = 128; ///< streams open at once per connection
    std::uint32_t http2_initial_window_size = 65535;  ///< each stream's receive window
    duration http2_ack_timeout = 10s; ///< our SETTINGS, or the graceful stop's PING, unanswered
    /// A PING to a connection with streams open that sent nothing this long; 0: off.
    duration http2_ping_interval = 0s;

    /// DNS servers for the upstreams' names ("IP" or "IP:PORT"); empty: /etc/resolv.conf's.
    std::vector<std::string> resolver;
    duration resolve_interval_min = 5s;  ///< a name is looked up again no sooner (TTL floor)
    duration resolve_interval_max = 60s; ///< and no later (TTL ceiling)

    std::vector<route_config> routes;       ///< as configured; see effective_routes()
    std::vector<upstream_config> upstreams; ///< every name a proxy route may use

    // Sites: [[site]] tables; the top-level routes are the default site unless one says
    // `default = true`.
    std::vector<site_config> sites;
    unsigned unknown_host = 0;   ///< a Host no site names: 0 the default site, or 421 or 404
    bool https_redirect = false; ///< every request on a plain address: 301 to https://

    std::optional<std::filesystem::path> config_file; ///< where it was read from, for reload
};

/// A configuration error: `what()` is one line naming the key or flag (and the file line).
class config_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Parses "65s", "250ms", "2m", "1h", "1500us" (a bare number is an error: units are required).
/// Throws config_error naming `what` on a bad value.
duration parse_duration(const std::string& text, const std::string& what);

/// Parses "HOST:PORT", "[V6]:PORT", ":PORT" (all addresses) or "unix:PATH", each followed by
/// parameters (see listen_address). Throws config_error naming `what`.
listen_address parse_listen(const std::string& text, const std::string& what);

/// Reads a TOML file over `base`. Unknown keys, wrong types and bad values throw config_error
/// with the key and the file's line.
config load_config_file(const std::filesystem::path& file, config base = {});

/// What the command line asked for.
struct command_line {
    enum class action { run, check_config, help, version, man };
    action what = action::run;
    config cfg;
    std::string help_text; ///< filled for action::help
};

/// One value as the file or the command line gave it, with the name to use in messages. Only
/// the configuration's own units can make one (config_file.hpp): the table below is read-only
/// for everyone else.
class setting_value;

/// One row of the settings table, which drives the file, the flags, --help, --man and the
/// did-you-mean suggestions. `Target` is what `apply` fills: the config, a route or an upstream.
template <typename Target> struct basic_setting {
    std::string_view key;          ///< in the TOML file; empty for a command-line-only flag
    std::string_view flag;         ///< "--keep-alive-timeout"; empty when only the file sets it
    std::string_view type;         ///< the value's type: DUR, SIZE, N, HOST:PORT, BOOL, ...
    std::string_view help;         ///< one sentence
    std::string_view default_text; ///< the default as written in TOML; empty: unset
    bool repeatable = false;       ///< the flag may be given several times
    bool hidden = false;           ///< left out of --help
    void (*apply)(Target&, const setting_value&) = nullptr; ///< parse, check, store; null: action
};

using setting = basic_setting<config>;
using route_setting = basic_setting<route_config>;
using upstream_setting = basic_setting<upstream_config>;

/// Top-level keys and every flag, in the order --help and the man page list them. A BOOL
/// setting's flag takes no value. A null `apply` marks --config (read before every other flag)
/// and the actions, which have no type (--check-config, --version, --help, --man).
std::span<const setting> settings();
/// The keys of a `[[route]]` table.
std::span<const route_setting> route_settings();
/// The keys of an `[upstream.NAME]` table.
std::span<const upstream_setting> upstream_settings();
/// The keys of a `[[tls]]` table.
std::span<const basic_setting<tls_config>> tls_settings();
/// The keys of a `[[site]]` table.
std::span<const basic_setting<site_config>> site_settings();

/// Parses an upstream server: "HOST:PORT" (numeric IP, localhost or a DNS name, port 1-65535,
/// IPv6 in brackets) or "unix:PATH". Throws config_error naming `what`.
upstream_server parse_upstream_server(const std::string& text, const std::string& what);

/// The DNS names among the upstreams' servers (not numeric, not localhost), each once, in the
/// order the configuration first names them.
std::vector<std::string> upstream_dns_names(const config& cfg);

/// The configured routes plus the "/" route the top-level docroot implies (files from docroot
/// if set, else "Hello, World!") when no route has prefix "/". Longest prefix wins, whatever the
/// order.
std::vector<route_config> effective_routes(const config& cfg);

/// Parses argv: reads --config FILE first, then applies every other flag over it. Throws
/// config_error on a bad flag or value (main prints it and exits with status 2).
command_line parse_command_line(int argc, const char* const* argv);

/// For a reload: parses argv again, so the --config file is read as it is now and the flags
/// apply over it. `current` is not consulted: a key dropped from the file returns to its default.
config reload_config(const config& current, int argc, const char* const* argv);

} // namespace tarry::server

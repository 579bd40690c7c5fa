// The settings table: one row per key and flag, which drives the file, the flags, --help, --man
// and the did-you-mean suggestions. A new setting is one row here plus its field in `config`.

#include "config_file.hpp"
#include "config_values.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace tarry::server {

using namespace config_detail;

namespace {

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

// The shape of every file-path row (certificates, keys): the field it sets.
template <typename Target, auto Field> void apply_file(Target& t, const setting_value& v) {
    t.*Field = read_path(v, "a file path", "expected a file path string");
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

// --- Upstream servers by name --------------------------------------------------------------------

/// One DNS server: "IP", "IPV4:PORT" or "[IPV6]:PORT", the port 53 when not given.
std::string dns_server(const std::string& text, const std::string& what) {
    const bad_value bad{what, resolver_expected, text};
    boost::system::error_code ec;
    const auto bare = boost::asio::ip::make_address(text, ec);
    if (!ec) return bare.is_v6() ? "[" + bare.to_string() + "]:53" : bare.to_string() + ":53";
    const listen_address a = host_port(text, bad, "", 1);
    if (a.host == "localhost") bad("the DNS server must be a numeric IP address");
    return (a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host) + ":" +
           std::to_string(a.port);
}

void apply_resolver(config& c, const setting_value& v) {
    std::vector<std::string> list;
    const auto add = [&](const std::string& text) {
        std::string server = dns_server(text, v.what());
        if (std::find(list.begin(), list.end(), server) != list.end())
            fail(v.what(), quote(text) + " is listed twice");
        list.push_back(std::move(server));
    };
    if (const toml::node* node = v.node(); node == nullptr) {
        for (const std::string& text : v.texts())
            add(text);
    } else if (node->is_string()) {
        add(node->as_string()->get());
    } else if (const toml::array* array = node->as_array()) {
        for (const toml::node& element : *array) {
            try {
                const auto* text = element.as_string();
                if (text == nullptr)
                    fail(v.what(), std::string(resolver_expected) + ", got " + describe(element));
                add(text->get());
            } catch (const config_error& e) {
                throw located_error(element.source().begin.line, e.what());
            }
        }
    } else {
        fail(v.what(), "expected an array of DNS server addresses, such as [\"127.0.0.53\"], got " +
                           describe(*node));
    }
    c.resolver = std::move(list);
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

// redirect = "URL": a Location with only the placeholders redirect_handler fills in.
void apply_redirect(route_config& r, const setting_value& v) {
    const std::string& text = read_string(v, R"(expected a URL such as "https://{host}{uri}")");
    const std::string checked = header_value(text, v.what());
    std::string_view rest = checked;
    for (std::size_t open = rest.find('{'); open != std::string_view::npos; open = rest.find('{')) {
        rest.remove_prefix(open);
        const std::size_t close = rest.find('}');
        const std::string_view name =
            rest.substr(0, close == std::string_view::npos ? rest.size() : close + 1);
        if (name != "{scheme}" && name != "{host}" && name != "{uri}")
            fail(v.what(),
                 "unknown placeholder " + quote(name) + " (expected {scheme}, {host} or {uri})");
        rest.remove_prefix(name.size());
    }
    r.redirect = text;
    r.what = route_config::kind::redirect;
}

constexpr count_rule redirect_status_rule{300, 308, {}};

// Each row names only the fields it sets and leaves the rest at their defaults, which GCC's
// -Wextra reports for designated initializers all the same (GCC bug 96868).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

constexpr std::array setting_rows{
    setting{.flag = "--config", .type = "FILE", .help = "Read settings from this TOML file."},
    setting{.key = "listen",
            .flag = "--listen",
            .type = "ADDRESS",
            .help = "Where to accept connections: HOST:PORT (an IPv4 address, an IPv6 address in "
                    "brackets, localhost, or :PORT for all IPv4 addresses) or unix:PATH, then "
                    "parameters: proxy_protocol (each connection starts with a PROXY header, v1 or "
                    "v2, from a balancer), and for a Unix socket mode=0660 and owner=USER[:GROUP]. "
                    "Sockets passed by systemd (LISTEN_FDS) are used for the addresses they match. "
                    "The flag is repeatable and replaces the file's list.",
            .default_text = R"(["127.0.0.1:8080"])",
            .repeatable = true,
            .apply = apply_listen},
    setting{.key = "tls_listen",
            .flag = "--tls-listen",
            .type = "HOST:PORT",
            .help = "Where to accept TLS connections (HTTPS): HOST:PORT as for listen, with "
                    "proxy_protocol behind a TCP balancer (the PROXY header before the "
                    "ClientHello, under header_timeout). TLS 1.2 and 1.3, ALPN http/1.1, the "
                    "certificate by SNI. The flag is repeatable and replaces the file's list. "
                    "Unset: no TLS.",
            .repeatable = true,
            .apply = apply_listen_of<true>},
    setting{.key = "tls_certificate",
            .flag = "--tls-certificate",
            .type = "FILE",
            .help = "The default certificate of the TLS addresses (PEM: the certificate, then its "
                    "chain), for clients that name no server [[tls]] lists. A reload (SIGHUP) "
                    "reads it again.",
            .apply = apply_file<config, &config::tls_certificate>},
    setting{.key = "tls_certificate_key",
            .flag = "--tls-certificate-key",
            .type = "FILE",
            .help = "The private key of tls_certificate (PEM).",
            .apply = apply_file<config, &config::tls_certificate_key>},
    setting{.key = "handshake_timeout",
            .flag = "--handshake-timeout",
            .type = "DUR",
            .help = "Time allowed from accept to the end of the TLS handshake; then a silent "
                    "close.",
            .default_text = R"("10s")",
            .apply = apply_timeout<&config::handshake_timeout, false>},
    setting{.key = "tls",
            .type = "TABLE",
            .help = "[[tls]] tables: a certificate per server name (SNI) (see TLS).",
            .apply = apply_tls_tables},
    setting{
        .key = "docroot",
        .flag = "--docroot",
        .type = "DIR",
        .help =
            "Serve files (GET and HEAD) from this directory: shorthand for a route \"/\" to it. "
            "Unset: every request to \"/\" is answered Hello, World!",
        .apply = apply_docroot},
    setting{
        .key = "keep_alive_timeout",
        .flag = "--keep-alive-timeout",
        .type = "DUR",
        .help =
            "Idle time allowed between requests on a keep-alive connection; then a silent close.",
        .default_text = R"("65s")",
        .apply = apply_timeout<&config::keep_alive_timeout, false>},
    setting{.key = "header_timeout",
            .flag = "--header-timeout",
            .type = "DUR",
            .help =
                "Time allowed to receive a request's line and headers, from its first byte (from "
                "accept, for the first); a total, not reset by trickled bytes. Then 408 and close.",
            .default_text = R"("60s")",
            .apply = apply_timeout<&config::header_timeout, false>},
    setting{.key = "body_timeout",
            .flag = "--body-timeout",
            .type = "DUR",
            .help = "Gap allowed between two reads of a request body. Then 408 and close.",
            .default_text = R"("60s")",
            .apply = apply_timeout<&config::body_timeout, false>},
    setting{.key = "request_timeout",
            .flag = "--request-timeout",
            .type = "DUR",
            .help = "Total time allowed to receive a request's body. Then 408 and close.",
            .default_text = R"("300s")",
            .apply = apply_timeout<&config::request_timeout, false>},
    setting{
        .key = "send_timeout",
        .flag = "--send-timeout",
        .type = "DUR",
        .help =
            "Gap allowed between two writes of a response the client does not drain. Then close.",
        .default_text = R"("60s")",
        .apply = apply_timeout<&config::send_timeout, false>},
    setting{.key = "drain_timeout",
            .flag = "--drain-timeout",
            .type = "DUR",
            .help = "How long a graceful stop waits for in-flight requests; 0s: not at all.",
            .default_text = R"("10s")",
            .apply = apply_timeout<&config::drain_timeout, true>},
    setting{.key = "lingering_time",
            .type = "DUR",
            .help =
                "After an error response, the total time spent reading and discarding the client's "
                "input before closing.",
            .default_text = R"("30s")",
            .apply = apply_timeout<&config::lingering_time, false>},
    setting{.key = "lingering_timeout",
            .type = "DUR",
            .help =
                "After an error response, the gap allowed between two reads of discarded input.",
            .default_text = R"("5s")",
            .apply = apply_timeout<&config::lingering_timeout, false>},
    setting{.key = "max_connection_age",
            .flag = "--max-connection-age",
            .type = "DUR",
            .help = "Past this age a connection's next response says Connection: close; 0s: off.",
            .default_text = R"("0s")",
            .apply = apply_timeout<&config::max_connection_age, true>},
    setting{
        .key = "close_spread_time",
        .flag = "--close-spread-time",
        .type = "DUR",
        .help =
            "On a graceful stop, idle keep-alive connections are closed spread over this window "
            "rather than all at once; 0s: all at once.",
        .default_text = R"("1s")",
        .apply = apply_timeout<&config::close_spread_time, true>},
    setting{.key = "keep_alive_min_timeout",
            .flag = "--keep-alive-min-timeout",
            .type = "DUR",
            .help =
                "An idle connection is never closed for a stop or for descriptor pressure sooner "
                "than this after its last response, nor one that has sent nothing sooner than a "
                "tenth of this after its accept; 0s: no minimum.",
            .default_text = R"("1s")",
            .apply = apply_timeout<&config::keep_alive_min_timeout, true>},
    setting{.key = "max_requests_per_connection",
            .flag = "--max-requests",
            .type = "N",
            .help =
                "Requests served on one connection; the last response says Connection: close. 0: "
                "unlimited.",
            .default_text = "1000",
            .apply =
                [](config& c, const setting_value& v) {
                    c.max_requests_per_connection =
                        static_cast<std::uint32_t>(read_count(v, max_requests_rule));
                }},
    setting{.key = "max_header_bytes",
            .type = "SIZE",
            .help = "Largest request line plus headers; over it 431 (414 for the request line).",
            .default_text = R"("16KiB")",
            .apply = [](config& c,
                        const setting_value& v) { c.max_header_bytes = read_size(v, false); }},
    setting{
        .key = "max_body_bytes",
        .type = "SIZE",
        .help = "Largest request body; over it 413. 0: no body.",
        .default_text = R"("1MiB")",
        .apply = [](config& c, const setting_value& v) { c.max_body_bytes = read_size(v, true); }},
    setting{.key = "workers",
            .flag = "--workers",
            .type = "N",
            .help = "Worker threads, from 0 to 1024. 0: one per core.",
            .default_text = "0",
            .apply =
                [](config& c, const setting_value& v) {
                    c.workers = static_cast<unsigned>(read_count(v, workers_rule));
                }},
    setting{
        .key = "max_connections",
        .flag = "--max-connections",
        .type = "N",
        .help = "Connections open at once; at the limit the oldest idle one is closed. 0: derived "
                "from the open-file limit.",
        .default_text = "0",
        .apply =
            [](config& c, const setting_value& v) {
                c.max_connections = static_cast<std::size_t>(read_count(v, max_connections_rule));
            }},
    setting{.key = "max_connections_per_client",
            .flag = "--max-connections-per-client",
            .type = "N",
            .help = "Connections one client (address, or prefix: client_prefix_v4/v6) may hold; "
                    "over it a new one gets 503. 0: no limit.",
            .default_text = "0",
            .apply =
                [](config& c, const setting_value& v) {
                    c.max_connections_per_client =
                        static_cast<std::size_t>(read_count(v, per_client_rule));
                }},
    setting{.key = "client_prefix_v4",
            .type = "N",
            .help = "How many leading bits of an IPv4 address name one client (1 to 32).",
            .default_text = "32",
            .apply =
                [](config& c, const setting_value& v) {
                    c.client_prefix_v4 = static_cast<unsigned>(read_count(v, prefix_v4_rule));
                }},
    setting{.key = "client_prefix_v6",
            .type = "N",
            .help = "How many leading bits of an IPv6 address name one client (1 to 128).",
            .default_text = "64",
            .apply =
                [](config& c, const setting_value& v) {
                    c.client_prefix_v6 = static_cast<unsigned>(read_count(v, prefix_v6_rule));
                }},
    setting{.key = "admin_listen",
            .flag = "--admin-listen",
            .type = "HOST:PORT",
            .help = "Serve /metrics and /healthz on this address. Unset: off.",
            .apply =
                [](config& c, const setting_value& v) {
                    const std::string text = read_string(v, admin_expected);
                    c.admin_listen =
                        host_port(text, bad_value{v.what(), admin_expected, text}, "0.0.0.0", 0);
                }},
    setting{.key = "log_level",
            .flag = "--log-level",
            .type = "LEVEL",
            .help = "trace, debug, info, warn, error, critical or off.",
            .default_text = R"("info")",
            .apply =
                [](config& c, const setting_value& v) {
                    c.log_level = log_level_value(
                        read_string(
                            v, "expected one of trace, debug, info, warn, error, critical, off"),
                        v.what());
                }},
    setting{.key = "pid_file",
            .flag = "--pid-file",
            .type = "FILE",
            .help = "Write the process id to this file at start, and remove it at exit (nginx's "
                    "pid), for kill -USR1 $(cat FILE) without systemd. Unset: off.",
            .apply =
                [](config& c, const setting_value& v) {
                    c.pid_file = read_path(v, "a file path", "expected a file path string");
                }},
    setting{.key = "access_log",
            .flag = "--access-log",
            .type = "FILE",
            .help = "Append one line per response to this file (\"-\": standard output), in "
                    "access_log_format. SIGUSR1 reopens it (logrotate). Unset: off.",
            .apply =
                [](config& c, const setting_value& v) {
                    c.access_log = read_path(v, R"(a file path or "-")",
                                             R"(expected a file path string or "-")");
                }},
    setting{
        .key = "access_log_format",
        .flag = "--access-log-format",
        .type = "FORMAT",
        .help = "The access log's line: common (the Common Log Format), combined (nginx's default: "
                "common with the Referer and User-Agent), extended (combined, then the request "
                "and upstream times, upstream status, scheme, port and TLS version) or json (one "
                "object per line).",
        .default_text = R"("common")",
        .apply =
            [](config& c, const setting_value& v) {
                constexpr std::string_view expected =
                    R"(expected "common", "combined", "extended" or "json")";
                const std::string& text = read_string(v, expected);
                if (text != "common" && text != "combined" && text != "extended" && text != "json")
                    fail(v.what(), std::string(expected) + ", got " + quote(text));
                c.access_log_format = text;
            }},
    setting{.key = "expire_batch",
            .type = "N",
            .help = "Timeout expiries handled per timer wake-up before other work gets a turn.",
            .default_text = "16",
            .apply =
                [](config& c, const setting_value& v) {
                    c.expire_batch = static_cast<std::size_t>(read_count(v, expire_batch_rule));
                }},
    setting{.key = "timeouts",
            .flag = "--no-timeouts",
            .type = "BOOL",
            .help = "Enforce the timeouts; false (--no-timeouts) only to measure what enforcing "
                    "them costs.",
            .default_text = "true",
            .apply = [](config& c, const setting_value& v) { c.timeouts = read_bool(v, false); }},
    setting{.key = "http2",
            .flag = "--no-http2",
            .type = "BOOL",
            .help = "Speak HTTP/2 as well as HTTP/1.1: on TLS listeners ALPN offers h2 first "
                    "(http/1.1 still served); on plain listeners a connection that opens with "
                    "the HTTP/2 client preface (prior knowledge, h2c) speaks HTTP/2 on the same "
                    "port. false (--no-http2): HTTP/1.1 only. nginx's `http2 on;`.",
            .default_text = "true",
            .apply = [](config& c, const setting_value& v) { c.http2 = read_bool(v, false); }},
    setting{.key = "http2_max_concurrent_streams",
            .type = "N",
            .help = "HTTP/2 streams a client may have open at once on one connection "
                    "(SETTINGS_MAX_CONCURRENT_STREAMS); one past it is refused (REFUSED_STREAM). "
                    "nginx's `http2_max_concurrent_streams`.",
            .default_text = "128",
            .apply =
                [](config& c, const setting_value& v) {
                    c.http2_max_concurrent_streams =
                        static_cast<std::uint32_t>(read_count(v, http2_streams_rule));
                }},
    setting{.key = "http2_initial_window_size",
            .type = "N",
            .help = "Each HTTP/2 stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE): the "
                    "request body bytes a client may send before the handler takes them.",
            .default_text = "65535",
            .apply =
                [](config& c, const setting_value& v) {
                    c.http2_initial_window_size =
                        static_cast<std::uint32_t>(read_count(v, http2_window_rule));
                }},
    setting{.key = "http2_ack_timeout",
            .type = "DUR",
            .help = "HTTP/2: how long our SETTINGS may wait for their acknowledgement (then "
                    "GOAWAY(SETTINGS_TIMEOUT)), and a graceful stop's PING for its answer (then "
                    "the final GOAWAY at once).",
            .default_text = R"("10s")",
            .apply = apply_timeout<&config::http2_ack_timeout, false>},
    setting{.key = "http2_ping_interval",
            .type = "DUR",
            .help = "HTTP/2: a connection with streams open (WebSockets among them) that sent "
                    "nothing for this long is sent a PING, and closed if nothing comes back "
                    "within http2_ack_timeout (a peer gone without a FIN); 0s: off.",
            .default_text = R"("0s")",
            .apply = apply_timeout<&config::http2_ping_interval, true>},
    setting{
        .key = "trust_forwarded",
        .type = "BOOL",
        .help = "Keep incoming X-Forwarded-For, -Proto and -Host fields and append to them when "
                "proxying; false: replace them.",
        .default_text = "false",
        .apply = [](config& c, const setting_value& v) { c.trust_forwarded = read_bool(v, true); }},
    // Upstream servers by name.
    setting{.key = "resolver",
            .flag = "--resolver",
            .type = "ADDRESS",
            .help = "The DNS servers that resolve upstream servers given by name: \"IP\" or "
                    "\"IP:PORT\" (IPv6 in brackets), tried in order. Unset: the system's, from "
                    "/etc/resolv.conf (and /etc/hosts first). The flag is repeatable and replaces "
                    "the file's list.",
            .repeatable = true,
            .apply = apply_resolver},
    setting{.key = "resolve_interval_min",
            .type = "DUR",
            .help = "A name is looked up again when its answer's TTL runs out, but no sooner than "
                    "this; and this long after a lookup that failed (the last good answer stays in "
                    "use meanwhile).",
            .default_text = R"("5s")",
            .apply = apply_timeout<&config::resolve_interval_min, false>},
    setting{.key = "resolve_interval_max",
            .type = "DUR",
            .help = "A name is looked up again at least this often, whatever its TTL.",
            .default_text = R"("60s")",
            .apply = apply_timeout<&config::resolve_interval_max, false>},
    setting{.flag = "--proxy",
            .type = "HOST:PORT",
            .help =
                "Proxy every request to this server: an upstream named \"default\" with this one "
                "server and a route \"/\" to it.",
            .apply = apply_proxy},
    setting{.key = "route",
            .type = "TABLE",
            .help = "[[route]] tables: what answers each path prefix (see ROUTES).",
            .apply = apply_routes},
    setting{.key = "upstream",
            .type = "TABLE",
            .help = "[upstream.NAME] tables: the servers a route proxies to (see UPSTREAMS).",
            .apply = apply_upstreams},
    // Sites, redirects and headers.
    setting{.key = "site",
            .type = "TABLE",
            .help = "[[site]] tables: the routes for the requests whose Host is one of a site's "
                    "server_names (see SITES).",
            .apply = apply_sites},
    setting{.key = "unknown_host",
            .type = "STRING",
            .help = "What answers a request whose Host names no [[site]]: \"default\" (the "
                    "default site: the one with default = true, else the top-level routes), "
                    "\"421\" (Misdirected Request) or \"404\".",
            .default_text = R"("default")",
            .apply =
                [](config& c, const setting_value& v) {
                    constexpr std::string_view expected = R"(expected "default", "421" or "404")";
                    const std::string& text = read_string(v, expected);
                    if (text == "default")
                        c.unknown_host = 0;
                    else if (text == "421")
                        c.unknown_host = 421;
                    else if (text == "404")
                        c.unknown_host = 404;
                    else
                        fail(v.what(), std::string(expected) + ", got " + quote(text));
                }},
    setting{
        .key = "https_redirect",
        .type = "BOOL",
        .help = "Answer every request on a plain (listen) address with a 301 to the same "
                "host and URI over https://, at the port of the first tls_listen address "
                "(nginx's `return 301 https://$host$request_uri;` in a server on port 80).",
        .default_text = "false",
        .apply = [](config& c, const setting_value& v) { c.https_redirect = read_bool(v, true); }},
    setting{.flag = "--check-config", .help = "Validate the configuration and exit."},
    setting{.flag = "--version", .help = "Print the version and exit."},
    setting{.flag = "--help", .help = "Print this help and exit."},
    setting{.flag = "--man", .help = "Print the tarry(8) manual page in roff and exit."},
};

constexpr std::array route_rows{
    route_setting{.key = "prefix",
                  .type = "STRING",
                  .help = "Required. The path prefix this route answers, starting with \"/\"; the "
                          "longest matching prefix wins.",
                  .apply =
                      [](route_config& r, const setting_value& v) {
                          const std::string& text =
                              read_string(v, R"(expected a string such as "/api/")");
                          if (text.empty() || text.front() != '/') {
                              fail(v.what(), "must start with \"/\", got " + quote(text));
                          }
                          r.prefix = header_value(text, v.what());
                      }},
    route_setting{.key = "upstream",
                  .type = "NAME",
                  .help = "Proxy to the upstream of this name.",
                  .apply =
                      [](route_config& r, const setting_value& v) {
                          r.upstream = read_string(v, "expected an upstream name string");
                          r.what = route_config::kind::proxy;
                      }},
    route_setting{.key = "docroot",
                  .type = "DIR",
                  .help = "Serve files from this directory.",
                  .apply =
                      [](route_config& r, const setting_value& v) {
                          r.docroot = read_path(v, dir_kind, dir_expected);
                          r.what = route_config::kind::files;
                      }},
    route_setting{.key = "respond",
                  .type = "STRING",
                  .help = "Answer with a fixed response; \"hello\" is the one "
                          "there is (Hello, World!).",
                  .apply =
                      [](route_config& r, const setting_value& v) {
                          const std::string& text = read_string(v, R"(expected "hello")");
                          if (text != "hello")
                              fail(v.what(), "expected \"hello\", got " + quote(text));
                          r.what = route_config::kind::hello;
                      }},
    route_setting{
        .key = "upgrade",
        .type = "BOOL",
        .help = "Only with upstream: pass a request to switch protocols (Upgrade, such as "
                "WebSocket) on, and tunnel the connection after the server's 101. false: the "
                "request goes up as an ordinary one, without its Upgrade field.",
        .default_text = "true",
        .apply = [](route_config& r, const setting_value& v) { r.upgrade = read_bool(v, true); }},
    route_setting{
        .key = "cache_control",
        .type = "STRING",
        .help = "Only with docroot: sent as the Cache-Control field of every file. Unset: "
                "none.",
        .apply =
            [](route_config& r, const setting_value& v) {
                r.cache_control = header_value(
                    read_string(v, R"(expected a string such as "public, max-age=60")"), v.what());
            }},
    // Redirects, headers and nginx's routing idioms.
    route_setting{.key = "redirect",
                  .type = "URL",
                  .help = "Answer with a redirect to this Location: a URL in which {scheme}, "
                          "{host} (the request's, without the port) and {uri} (path and query) "
                          "are filled in, such as \"https://{host}{uri}\".",
                  .apply = apply_redirect},
    route_setting{.key = "status",
                  .type = "N",
                  .help = "Only with redirect: 301, 302, 303, 307 or 308.",
                  .default_text = "302",
                  .apply =
                      [](route_config& r, const setting_value& v) {
                          const auto n = read_count(v, redirect_status_rule);
                          if (n != 301 && n != 302 && n != 303 && n != 307 && n != 308)
                              fail(v.what(),
                                   "expected 301, 302, 303, 307 or 308, got " + std::to_string(n));
                          r.status = static_cast<unsigned>(n);
                      }},
    route_setting{.key = "strip_prefix",
                  .type = "BOOL",
                  .help = "Only with upstream: the route's prefix is taken off the target before "
                          "it goes upstream (\"/api/x\" goes as \"/x\"), as nginx's "
                          "`proxy_pass http://app/;` does.",
                  .default_text = "false",
                  .apply = [](route_config& r,
                              const setting_value& v) { r.strip_prefix = read_bool(v, true); }},
    route_setting{.key = "intercept_errors",
                  .type = "BOOL",
                  .help = "Only with upstream: error_pages replace the upstream's answers of "
                          "their statuses too, its body read and dropped (nginx's "
                          "proxy_intercept_errors on).",
                  .default_text = "false",
                  .apply = [](route_config& r,
                              const setting_value& v) { r.intercept_errors = read_bool(v, true); }},
    route_setting{.key = "fallback",
                  .type = "PATH",
                  .help = "Only with docroot: a GET or HEAD for a file that does not exist is "
                          "answered with this one (\"/index.html\" for a single-page "
                          "application: nginx's `try_files $uri /index.html`).",
                  .apply =
                      [](route_config& r, const setting_value& v) {
                          const std::string& text =
                              read_string(v, R"(expected a path such as "/index.html")");
                          if (!text.starts_with('/'))
                              fail(v.what(), "must start with \"/\", got " + quote(text));
                          r.fallback = header_value(text, v.what());
                      }},
    route_setting{
        .key = "headers",
        .type = "TABLE",
        .help = "Fields set on every answer of the route, errors included: "
                "{ \"Strict-Transport-Security\" = \"max-age=63072000\" }. A field "
                "of the same name in the answer (an upstream's) is replaced.",
        .apply = [](route_config& r, const setting_value& v) { r.headers = read_headers(v); }},
    route_setting{.key = "hide_headers",
                  .type = "NAMES",
                  .help = "Fields taken out of every answer of the route, such as an upstream's "
                          "[\"X-Powered-By\"] (nginx's proxy_hide_header).",
                  .apply = [](route_config& r,
                              const setting_value& v) { r.hide_headers = read_field_names(v); }},
    route_setting{.key = "error_pages",
                  .type = "TABLE",
                  .help = "Files that replace the server's own answers of these statuses (not an "
                          "upstream's): { 404 = \"/srv/www/404.html\" }. Read at start and "
                          "on reload.",
                  .apply = [](route_config& r,
                              const setting_value& v) { r.error_pages = read_error_pages(v); }},
};

constexpr std::array site_rows{
    basic_setting<site_config>{
        .key = "server_names",
        .type = "NAMES",
        .help = "The names whose requests this site answers (the Host, or HTTP/2's :authority, "
                "without port, case or a trailing dot): \"example.com\", or \"*.example.com\" "
                "for one label more. Required unless default = true.",
        .apply = [](site_config& s, const setting_value& v) { s.server_names = read_names(v); }},
    basic_setting<site_config>{
        .key = "default",
        .type = "BOOL",
        .help = "This site answers the requests whose Host names no site (in place of the "
                "top-level routes, which must then be absent).",
        .default_text = "false",
        .apply = [](site_config& s, const setting_value& v) { s.is_default = read_bool(v, true); }},
    basic_setting<site_config>{
        .key = "headers",
        .type = "TABLE",
        .help = "Fields set on every answer of the site's routes (a route's own win).",
        .apply = [](site_config& s, const setting_value& v) { s.headers = read_headers(v); }},
    basic_setting<site_config>{
        .key = "hide_headers",
        .type = "NAMES",
        .help = "Fields taken out of every answer of the site's routes.",
        .apply = [](site_config& s,
                    const setting_value& v) { s.hide_headers = read_field_names(v); }},
    basic_setting<site_config>{
        .key = "error_pages",
        .type = "TABLE",
        .help = "Error pages for every route of the site (a route's own win).",
        .apply = [](site_config& s,
                    const setting_value& v) { s.error_pages = read_error_pages(v); }},
    basic_setting<site_config>{
        .key = "route",
        .type = "TABLE",
        .help = "[[site.route]] tables: the site's routes, with the keys of [[route]].",
        .apply = [](site_config& s, const setting_value& v) { s.routes = read_routes(v); }},
};

constexpr std::array upstream_rows{
    upstream_setting{.key = "servers",
                     .type = "HOST:PORT",
                     .help =
                         "Required. An array of HOST:PORT or unix:PATH, each listed once. HOST is "
                         "a numeric IP, localhost (127.0.0.1 and ::1) or a DNS name: every address "
                         "it resolves to is a server, looked up again by its TTL (resolver).",
                     .apply = apply_servers},
    upstream_setting{.key = "balance",
                     .type = "STRING",
                     .help =
                         "How a server is chosen: round_robin, or least_conn (fewest requests in "
                         "flight).",
                     .default_text = R"("round_robin")",
                     .apply =
                         [](upstream_config& u, const setting_value& v) {
                             const std::string& text =
                                 read_string(v, "expected \"round_robin\" or \"least_conn\"");
                             if (text == "round_robin") {
                                 u.balance = upstream_config::balance_kind::round_robin;
                             } else if (text == "least_conn") {
                                 u.balance = upstream_config::balance_kind::least_conn;
                             } else {
                                 fail(v.what(), "expected \"round_robin\" or \"least_conn\", got " +
                                                    quote(text));
                             }
                         }},
    upstream_setting{
        .key = "max_idle",
        .type = "N",
        .help = "The most idle pooled connections kept per server per worker, up to 65535 "
                "(0: no pooling). Within it the pool follows demand: every 5 s, half of the "
                "idle connections beyond the most that were busy at once are closed.",
        .default_text = "1024",
        .apply =
            [](upstream_config& u, const setting_value& v) {
                u.max_idle = static_cast<std::size_t>(read_count(v, max_idle_rule));
            }},
    upstream_setting{
        .key = "idle_timeout",
        .type = "DUR",
        .help = "An idle pooled connection is closed after this, or sooner if the server's "
                "Keep-Alive: timeout says so.",
        .default_text = R"("60s")",
        .apply = apply_upstream_timeout<&upstream_config::idle_timeout>},
    upstream_setting{.key = "connect_timeout",
                     .type = "DUR",
                     .help = "Time allowed to connect to a server.",
                     .default_text = R"("5s")",
                     .apply = apply_upstream_timeout<&upstream_config::connect_timeout>},
    upstream_setting{.key = "send_timeout",
                     .type = "DUR",
                     .help = "Gap allowed between two writes of the request to the server.",
                     .default_text = R"("60s")",
                     .apply = apply_upstream_timeout<&upstream_config::send_timeout>},
    upstream_setting{.key = "response_timeout",
                     .type = "DUR",
                     .help = "Time from the end of the request to the first byte of the response.",
                     .default_text = R"("60s")",
                     .apply = apply_upstream_timeout<&upstream_config::response_timeout>},
    upstream_setting{.key = "read_timeout",
                     .type = "DUR",
                     .help = "Gap allowed between two reads of the response body.",
                     .default_text = R"("60s")",
                     .apply = apply_upstream_timeout<&upstream_config::read_timeout>},
    upstream_setting{.key = "fail_timeout",
                     .type = "DUR",
                     .help =
                         "A server that refused a connection or timed out is skipped this long.",
                     .default_text = R"("10s")",
                     .apply = apply_upstream_timeout<&upstream_config::fail_timeout>},
    upstream_setting{.key = "tunnel_idle_timeout",
                     .type = "DUR",
                     .help =
                         "An upgrade tunnel (WebSocket) with no byte either way for this long is "
                         "closed, both sides (HAProxy's timeout tunnel).",
                     .default_text = R"("1h")",
                     .apply = apply_upstream_timeout<&upstream_config::tunnel_idle_timeout>},
    upstream_setting{
        .key = "tls",
        .type = "BOOL",
        .help = "TLS to every server (as writing each https://HOST:PORT), its "
                "certificate verified.",
        .default_text = "false",
        .apply = [](upstream_config& u, const setting_value& v) { u.tls = read_bool(v, true); }},
    upstream_setting{.key = "tls_verify",
                     .type = "BOOL",
                     .help = "Verify each server's certificate against tls_ca_file (or the "
                             "system's store) and its name. false takes ANY certificate: "
                             "whoever is on the path can read and change the traffic.",
                     .default_text = "true",
                     .apply = [](upstream_config& u,
                                 const setting_value& v) { u.tls_verify = read_bool(v, true); }},
    upstream_setting{.key = "tls_ca_file",
                     .type = "FILE",
                     .help = "The certificates (PEM) a server's chain must lead to, instead of "
                             "the system's store.",
                     .apply = apply_file<upstream_config, &upstream_config::tls_ca_file>},
    upstream_setting{.key = "tls_server_name",
                     .type = "NAME",
                     .help = "The name sent as SNI and verified in every server's certificate, "
                             "instead of the host each server is written with (for servers "
                             "written as addresses).",
                     .apply =
                         [](upstream_config& u, const setting_value& v) {
                             u.tls_server_name = read_string(v, "expected a DNS name string");
                             if (u.tls_server_name.empty())
                                 fail(v.what(), "expected a DNS name, got an empty string");
                         }},
    upstream_setting{
        .key = "tls_client_certificate",
        .type = "FILE",
        .help = "A client certificate (PEM, then its chain) for servers that ask for one (mTLS).",
        .apply = apply_file<upstream_config, &upstream_config::tls_client_certificate>},
    upstream_setting{.key = "tls_client_certificate_key",
                     .type = "FILE",
                     .help = "The private key of tls_client_certificate (PEM).",
                     .apply =
                         apply_file<upstream_config, &upstream_config::tls_client_certificate_key>},
};

constexpr std::array tls_rows{
    basic_setting<tls_config>{
        .key = "server_names",
        .type = "NAMES",
        .help = "Required. The names this certificate answers: \"example.com\", or "
                "\"*.example.com\" for one label more.",
        .apply = [](tls_config& t, const setting_value& v) { t.server_names = read_names(v); }},
    basic_setting<tls_config>{.key = "certificate",
                              .type = "FILE",
                              .help = "Required. The certificate (PEM, then its chain).",
                              .apply = apply_file<tls_config, &tls_config::certificate>},
    basic_setting<tls_config>{.key = "certificate_key",
                              .type = "FILE",
                              .help = "Required. Its private key (PEM).",
                              .apply = apply_file<tls_config, &tls_config::certificate_key>},
};

#pragma GCC diagnostic pop

} // namespace

std::span<const setting> settings() {
    return setting_rows;
}

std::span<const route_setting> route_settings() {
    return route_rows;
}

std::span<const upstream_setting> upstream_settings() {
    return upstream_rows;
}

std::span<const basic_setting<tls_config>> tls_settings() {
    return tls_rows;
}

std::span<const basic_setting<site_config>> site_settings() {
    return site_rows;
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

} // namespace tarry::server

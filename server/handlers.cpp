#include "handlers.hpp"

#include <tarry/http/field_writer.hpp>
#include <tarry/http/files_handler.hpp>
#include <tarry/http/hello_handler.hpp>
#include <tarry/http/mime_types.hpp>
#include <tarry/http/redirect_handler.hpp>
#include <tarry/http/route_handler.hpp>
#include <tarry/upstream/proxy_handler.hpp>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>

#include <array>
#include <map>
#include <utility>

namespace tarry::server {
namespace {

using kind = route_config::kind;

/// The proxy's view of an [upstream.NAME] table.
upstream::upstream_settings settings_of(const upstream_config& u, const config& cfg) {
    upstream::upstream_settings s;
    for (const upstream_server& server : u.servers) {
        if (!server.unix_path.empty()) {
            s.servers.push_back(upstream::server_address::unix_socket(server.unix_path));
            continue;
        }
        // A numeric address, localhost (127.0.0.1 and ::1), or a DNS name (its addresses come
        // from ctx.names).
        for (auto& a : upstream::server_address::of_host(server.host, server.port)) {
            if (!u.tls_server_name.empty()) a.tls_name = u.tls_server_name;
            s.servers.push_back(std::move(a));
        }
    }
    s.tls = upstream_tls(u);
    s.balance = u.balance == upstream_config::balance_kind::least_conn
                    ? upstream::upstream_settings::balance_mode::least_conn
                    : upstream::upstream_settings::balance_mode::round_robin;
    s.max_idle = u.max_idle;
    s.idle_timeout = u.idle_timeout;
    s.connect_timeout = u.connect_timeout;
    s.send_timeout = u.send_timeout;
    s.response_timeout = u.response_timeout;
    s.read_timeout = u.read_timeout;
    s.fail_timeout = u.fail_timeout;
    s.tunnel_idle_timeout = u.tunnel_idle_timeout;
    s.trust_forwarded = cfg.trust_forwarded;
    return s;
}
/// What one build of a worker's router shares between its routes: one group per upstream, so
/// that routes naming one upstream share its pools and its view of which servers are down.
struct router_build {
    std::map<std::string, std::shared_ptr<upstream::upstream_group>> groups;
    std::shared_ptr<const http::name_table> certificates; ///< see certificate_names
};

using make_fn = std::shared_ptr<http::handler> (*)(const route_config&, const config&,
                                                   handler_context&, router_build&);

// One line per kind of route: adding a handler is its own file plus a line here.
constexpr std::array<std::pair<kind, make_fn>, 4> makers{{
    {kind::hello,
     [](const route_config&, const config&, handler_context&, router_build&)
         -> std::shared_ptr<http::handler> { return std::make_shared<http::hello_handler>(); }},
    {kind::files,
     [](const route_config& r, const config&, handler_context&,
        router_build&) -> std::shared_ptr<http::handler> {
         return std::make_shared<http::files_handler>(r.docroot, r.cache_control);
     }},
    {kind::proxy,
     [](const route_config& r, const config& cfg, handler_context& ctx,
        router_build& b) -> std::shared_ptr<http::handler> {
         auto& group = b.groups[r.upstream];
         if (!group) {
             const auto u =
                 std::find_if(cfg.upstreams.begin(), cfg.upstreams.end(),
                              [&](const upstream_config& c) { return c.name == r.upstream; });
             if (u == cfg.upstreams.end()) // the configuration checks this; a custom one may not
                 throw config_error("route " + r.prefix + ": no upstream named " + r.upstream);
             group = std::make_shared<upstream::upstream_group>(
                 ctx.io, ctx.poll, ctx.registry, settings_of(*u, cfg), ctx.upstreams, ctx.names);
         }
         return std::make_shared<upstream::proxy_handler>(group, r.upgrade);
     }},
    {kind::redirect,
     [](const route_config& r, const config&, handler_context&,
        router_build&) -> std::shared_ptr<http::handler> {
         return std::make_shared<http::redirect_handler>(r.redirect, r.status);
     }},
}};

/// "https://{host}{uri}", with the port of the first TLS address unless it is 443.
std::string https_location(const config& cfg) {
    for (const listen_address& a : cfg.listen) {
        if (!a.tls) continue;
        if (a.port == 443) break;
        return "https://{host}:" + std::to_string(a.port) + "{uri}";
    }
    return "https://{host}{uri}";
}

/// The certificate each server name gets, numbered as make_tls_context loads them (the default
/// tls_certificate first); null when there is one certificate or none (nothing to check).
std::shared_ptr<const http::name_table> certificate_names(const config& cfg) {
    const bool tls = std::any_of(cfg.listen.begin(), cfg.listen.end(),
                                 [](const listen_address& a) { return a.tls; });
    const std::size_t first = cfg.tls_certificate ? 1 : 0;
    if (!tls || first + cfg.tls.size() < 2) return nullptr;
    auto names = std::make_shared<http::name_table>();
    for (std::size_t i = 0; i < cfg.tls.size(); ++i)
        for (const std::string& n : cfg.tls[i].server_names)
            names->add(n, first + i);
    return names;
}

/// What a route changes around its handler: its own headers, hidden fields and error pages
/// with its site's under them, and the server-wide redirect of plain requests.
http::route_options options_of(const route_config& r, const site_config* site, const config& cfg,
                               const std::shared_ptr<const http::name_table>& certificates) {
    http::route_options o;
    o.certificates = certificates;
    const auto same = [](std::string_view a, std::string_view b) {
        return boost::beast::iequals(a, b);
    };
    std::vector<header_config> headers = r.headers;
    std::vector<std::string> hidden = r.hide_headers;
    std::vector<error_page_config> pages = r.error_pages;
    if (site != nullptr) {
        for (const header_config& h : site->headers)
            if (std::none_of(headers.begin(), headers.end(),
                             [&](const header_config& own) { return same(own.name, h.name); }))
                headers.push_back(h);
        hidden.insert(hidden.end(), site->hide_headers.begin(), site->hide_headers.end());
        for (const error_page_config& p : site->error_pages)
            if (std::none_of(pages.begin(), pages.end(),
                             [&](const error_page_config& own) { return own.status == p.status; }))
                pages.push_back(p);
    }
    for (const header_config& h : headers) {
        http::append_field(o.add_fields, h.name, h.value);
        o.remove_fields.push_back(h.name); // an upstream's field of the name is replaced
    }
    o.remove_fields.insert(o.remove_fields.end(), hidden.begin(), hidden.end());
    for (const error_page_config& p : pages)
        o.error_pages.push_back(
            {p.status, std::string(http::mime_type(p.file.filename().string())), p.body});
    if (r.strip_prefix && r.prefix != "/") o.strip_prefix = r.prefix;
    o.fallback = r.fallback;
    o.intercept_upstream = r.intercept_errors;
    if (cfg.https_redirect) o.plain_redirect = https_location(cfg);
    return o;
}

/// The route's handler, wrapped in its options when it has any.
std::shared_ptr<http::handler> with_options(std::shared_ptr<http::handler> h, const route_config& r,
                                            const site_config* site, const config& cfg,
                                            router_build& b) {
    http::route_options o = options_of(r, site, cfg, b.certificates);
    if (o.empty()) return h;
    return std::make_shared<http::route_handler>(std::move(h), std::move(o));
}

std::shared_ptr<http::handler> make_handler(const route_config& route, const site_config* site,
                                            const config& cfg, handler_context& ctx,
                                            router_build& b) {
    for (const auto& [what, make] : makers)
        if (what == route.what) return with_options(make(route, cfg, ctx, b), route, site, cfg, b);
    return nullptr;
}

} // namespace

std::shared_ptr<const tls::client_context> upstream_tls(const upstream_config& u) {
    if (!u.secure()) return nullptr;
    tls::client_settings t;
    t.verify = u.tls_verify;
    t.ca_file = u.tls_ca_file;
    t.certificate = u.tls_client_certificate;
    t.certificate_key = u.tls_client_certificate_key;
    const std::string prefix = "upstream." + u.name + ".";
    t.ca_file_setting = prefix + "tls_ca_file";
    t.certificate_setting = prefix + "tls_client_certificate";
    t.key_setting = prefix + "tls_client_certificate_key";
    try {
        return std::make_shared<const tls::client_context>(t);
    } catch (const tls::error& e) {
        throw config_error(e.what());
    }
}

std::shared_ptr<http::router>
build_router(const config& cfg, const std::vector<custom_route>& custom, handler_context& ctx) {
    auto r = std::make_shared<http::router>();
    router_build b;
    b.certificates = certificate_names(cfg);
    for (const route_config& route : effective_routes(cfg))
        r->add(route.prefix, make_handler(route, nullptr, cfg, ctx, b),
               &ctx.routes.of(route.prefix));
    for (const site_config& site : cfg.sites) {
        const std::size_t index = r->add_site(site.server_names);
        if (site.is_default) r->set_default_site(index);
        // Metrics: a site's routes under its first name (the labels stay those configured).
        const std::string label = site.server_names.empty() ? "*" : site.server_names.front();
        bool root = false;
        for (const route_config& route : site.routes) {
            root = root || route.prefix == "/";
            r->add(index, route.prefix, make_handler(route, &site, cfg, ctx, b),
                   &ctx.routes.of(label + route.prefix));
        }
        if (!root) { // what no route takes is the site's 404, with the site's headers
            route_config none;
            none.prefix = "/";
            r->add(index, "/",
                   with_options(std::make_shared<http::status_handler>(404), none, &site, cfg, b),
                   &ctx.routes.of(label + "/"));
        }
    }
    if (cfg.unknown_host != 0) {
        route_config none;
        r->set_unknown_host(with_options(std::make_shared<http::status_handler>(cfg.unknown_host),
                                         none, nullptr, cfg, b),
                            &ctx.routes.of("(unknown host)"));
    }
    for (const custom_route& c : custom)
        r->add(c.prefix, c.make(ctx), &ctx.routes.of(c.prefix));
    return r;
}

} // namespace tarry::server

#include "handlers.hpp"

#include <tarry/http/files_handler.hpp>
#include <tarry/http/hello_handler.hpp>
#include <tarry/upstream/proxy_handler.hpp>

#include <boost/asio/ip/address.hpp>

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
        for (auto& a : upstream::server_address::of_host(server.host, server.port))
            s.servers.push_back(std::move(a));
    }
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
};

using make_fn = std::shared_ptr<http::handler> (*)(const route_config&, const config&,
                                                   handler_context&, router_build&);

// One line per kind of route: adding a handler is its own file plus a line here.
constexpr std::array<std::pair<kind, make_fn>, 3> makers{{
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
}};

} // namespace

std::shared_ptr<http::router>
build_router(const config& cfg, const std::vector<custom_route>& custom, handler_context& ctx) {
    auto r = std::make_shared<http::router>();
    router_build b;
    for (const route_config& route : effective_routes(cfg)) {
        for (const auto& [what, make] : makers) {
            if (what == route.what)
                r->add(route.prefix, make(route, cfg, ctx, b), &ctx.routes.of(route.prefix));
        }
    }
    for (const custom_route& c : custom)
        r->add(c.prefix, c.make(ctx), &ctx.routes.of(c.prefix));
    return r;
}

} // namespace tarry::server

#include "handlers.hpp"

#include <tarry/http/files_handler.hpp>
#include <tarry/http/hello_handler.hpp>

#include <array>
#include <utility>

namespace tarry::server {
namespace {

using kind = route_config::kind;
using make_fn = std::shared_ptr<http::handler> (*)(const route_config&, const config&,
                                                   handler_context&);

// One line per kind of route: adding a handler is its own file plus a line here.
constexpr std::array<std::pair<kind, make_fn>, 3> makers{{
    {kind::hello,
     [](const route_config&, const config&, handler_context&) -> std::shared_ptr<http::handler> {
         return std::make_shared<http::hello_handler>();
     }},
    {kind::files,
     [](const route_config& r, const config&, handler_context&) -> std::shared_ptr<http::handler> {
         return std::make_shared<http::files_handler>(r.docroot, r.cache_control);
     }},
    {kind::proxy,
     [](const route_config& r, const config&, handler_context&) -> std::shared_ptr<http::handler> {
         throw config_error("route " + r.prefix + ": proxying is not built into this binary");
     }},
}};

} // namespace

std::shared_ptr<http::router>
build_router(const config& cfg, const std::vector<custom_route>& custom, handler_context& ctx) {
    auto r = std::make_shared<http::router>();
    for (const route_config& route : effective_routes(cfg)) {
        for (const auto& [what, make] : makers) {
            if (what == route.what) r->add(route.prefix, make(route, cfg, ctx));
        }
    }
    for (const custom_route& c : custom)
        r->add(c.prefix, c.make(ctx));
    return r;
}

} // namespace tarry::server

#include "handlers.hpp"

#include <tarry/http/files_handler.hpp>
#include <tarry/http/hello_handler.hpp>

namespace tarry::server {

std::shared_ptr<http::router>
build_router(const config& cfg, const std::vector<custom_route>& custom, handler_context& ctx) {
    auto r = std::make_shared<http::router>();
    if (cfg.docroot) {
        r->add("/", std::make_shared<http::files_handler>(*cfg.docroot));
    } else {
        r->add("/", std::make_shared<http::hello_handler>());
    }
    for (const custom_route& c : custom)
        r->add(c.prefix, c.make(ctx));
    return r;
}

} // namespace tarry::server

#include "proxy_handler.hpp"

#include "proxy_exchange.hpp"

#include <tarry/http/session.hpp>

#include <stdexcept>

namespace tarry::upstream {

proxy_handler::proxy_handler(boost::asio::io_context& io, timeouts::timeout_registry& registry,
                             upstream_settings settings)
    : io_(io), settings_(std::move(settings)) {
    if (settings_.servers.empty()) throw std::invalid_argument("upstream has no server");
    for (const auto& s : settings_.servers)
        pools_.push_back(std::make_shared<upstream_pool>(io, registry, settings_, s));
}

std::shared_ptr<upstream_pool> proxy_handler::pick(const upstream_pool* except) {
    const std::size_t n = pools_.size();
    std::shared_ptr<upstream_pool> best;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& p = pools_[(next_ + i) % n];
        if (p.get() == except || p->down()) continue;
        if (settings_.balance == upstream_settings::balance_mode::round_robin) {
            next_ = (next_ + i + 1) % n;
            return p;
        }
        if (!best || p->busy_count() < best->busy_count()) best = p;
    }
    if (best) next_ = (next_ + 1) % n; // ties rotate
    return best;
}

void proxy_handler::on_request(http::exchange& ex) {
    auto p = std::make_shared<proxy_exchange>(io_, shared_from_this(), ex);
    p->start(p);
}

void proxy_handler::stop() noexcept {
    for (auto& p : pools_)
        p->stop();
}

std::shared_ptr<proxy_handler> make_proxy_handler(boost::asio::io_context& io,
                                                  timeouts::timeout_registry& registry,
                                                  const upstream_settings& settings) {
    return std::make_shared<proxy_handler>(io, registry, settings);
}

} // namespace tarry::upstream

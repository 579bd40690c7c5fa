#include "proxy_handler.hpp"

#include "proxy_exchange.hpp"

#include <tarry/http/session.hpp>

namespace tarry::upstream {

proxy_handler::proxy_handler(std::shared_ptr<upstream_group> group, bool upgrades) noexcept
    : group_(std::move(group)), upgrades_(upgrades) {}

void proxy_handler::on_request(http::exchange& ex) {
    auto p = std::make_shared<proxy_exchange>(shared_from_this(), ex);
    p->start(p);
}

void proxy_handler::stop() noexcept {
    group_->stop();
}

std::shared_ptr<proxy_handler> make_proxy_handler(boost::asio::io_context& io, net::poller& poll,
                                                  timeouts::timeout_registry& registry,
                                                  const upstream_settings& settings,
                                                  upstream_counters* counters) {
    return std::make_shared<proxy_handler>(
        std::make_shared<upstream_group>(io, poll, registry, settings, counters));
}

} // namespace tarry::upstream

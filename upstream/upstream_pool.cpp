#include "upstream_pool.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <charconv>
#include <stdexcept>

namespace tarry::upstream {

upstream_connection::endpoint_type parse_endpoint(const std::string& server) {
    if (server.starts_with("unix:"))
        return boost::asio::local::stream_protocol::endpoint(server.substr(5));
    const auto colon = server.rfind(':');
    if (colon == std::string::npos || colon == 0)
        throw std::invalid_argument("upstream server needs host:port: " + server);
    std::string host = server.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    unsigned port = 0;
    const char* p = server.data() + colon + 1;
    const char* end = server.data() + server.size();
    const auto r = std::from_chars(p, end, port);
    if (r.ec != std::errc{} || r.ptr != end || port == 0 || port > 65535)
        throw std::invalid_argument("upstream server has a bad port: " + server);
    boost::system::error_code ec;
    const auto addr = boost::asio::ip::make_address(host, ec);
    if (ec) throw std::invalid_argument("upstream server needs a numeric address: " + server);
    return boost::asio::ip::tcp::endpoint(addr, static_cast<unsigned short>(port));
}

upstream_pool::upstream_pool(boost::asio::io_context& io, timeouts::timeout_registry& registry,
                             const upstream_settings& settings, std::string name)
    : io_(io), registry_(registry), settings_(settings), name_(std::move(name)),
      endpoint_(parse_endpoint(name_)) {}

upstream_pool::~upstream_pool() {
    for (auto& i : idle_)
        i.conn->close();
}

std::shared_ptr<upstream_connection> upstream_pool::take() {
    if (idle_.empty()) return nullptr;
    auto c = std::move(idle_.back().conn);
    idle_.pop_back();
    c->disarm();
    metrics_.idle.add(-1);
    metrics_.busy.add();
    metrics_.reused.add();
    ++busy_;
    return c;
}

std::shared_ptr<upstream_connection> upstream_pool::open() {
    auto c = std::make_shared<upstream_connection>(io_, registry_, weak_from_this());
    metrics_.opened.add();
    metrics_.busy.add();
    ++busy_;
    return c;
}

void upstream_pool::give_back(std::shared_ptr<upstream_connection> c,
                              timeouts::clock::duration keep, bool hinted) {
    c->set_user(nullptr);
    --busy_;
    metrics_.busy.add(-1);
    if (stopped_) {
        c->close();
        metrics_.closed(upstream_close::idle_timeout);
        return;
    }
    if (keep <= timeouts::clock::duration::zero() || settings_.max_idle == 0) {
        c->close();
        metrics_.closed(hinted ? upstream_close::keep_alive_hint : upstream_close::max_idle);
        return;
    }
    if (idle_.size() >= settings_.max_idle) {
        idle_.front().conn->close();
        idle_.erase(idle_.begin());
        metrics_.idle.add(-1);
        metrics_.closed(upstream_close::max_idle);
    }
    c->arm(upstream_kinds::pooled, keep);
    c->read(); // an upstream close is seen at once
    idle_.push_back({std::move(c), hinted});
    metrics_.idle.add();
}

void upstream_pool::discard(upstream_connection& c, upstream_close why) noexcept {
    c.set_user(nullptr);
    c.close();
    --busy_;
    metrics_.busy.add(-1);
    metrics_.closed(why);
}

void upstream_pool::stop() noexcept {
    stopped_ = true;
    for (auto& i : idle_) {
        i.conn->close(); // its pending read completes as aborted, and the pool forgets it
        metrics_.idle.add(-1);
        metrics_.closed(upstream_close::idle_timeout);
    }
    idle_.clear();
}

bool upstream_pool::shed(upstream_connection& c) noexcept {
    return remove_idle(c, upstream_close::pressure);
}

void upstream_pool::mark_failed() noexcept {
    down_until_ = timeouts::clock::now() + settings_.fail_timeout;
}

bool upstream_pool::down() const noexcept {
    return timeouts::clock::now() < down_until_;
}

bool upstream_pool::remove_idle(upstream_connection& c, upstream_close why) noexcept {
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (it->conn.get() != &c) continue;
        auto keep = std::move(it->conn); // c stays alive until this returns
        idle_.erase(it);
        keep->close();
        metrics_.idle.add(-1);
        metrics_.closed(why);
        return true;
    }
    return false;
}

void upstream_pool::on_idle_event(upstream_connection& c,
                                  const boost::system::error_code&) noexcept {
    remove_idle(c, upstream_close::upstream_close);
}

void upstream_pool::on_idle_expired(upstream_connection& c) noexcept {
    for (const auto& i : idle_) {
        if (i.conn.get() != &c) continue;
        remove_idle(c, i.hinted ? upstream_close::keep_alive_hint : upstream_close::idle_timeout);
        return;
    }
}

} // namespace tarry::upstream

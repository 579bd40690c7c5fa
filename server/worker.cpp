#include "worker.hpp"

#include "client_kinds.hpp"
#include "client_refusal.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

#include <unistd.h>

namespace tarry::server {

worker::worker(unsigned index, const config& cfg, unsigned workers,
               std::shared_ptr<access_log> access, std::shared_ptr<const tls::context> tls)
    // Only this worker's thread touches its sockets, so the reactor may skip its per-descriptor
    // locks; other threads still post to the scheduler, which stays locked.
    : index_(index), io_(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO), registry_(io_, cfg.expire_batch),
      date_(io_), poller_(io_, &connection::on_poll, &connection::reads),
      settings_(worker_settings::from(cfg, nullptr, workers, access.get(), std::move(tls))),
      access_(std::move(access)), ctx_{io_,
                                       registry_,
                                       date_,
                                       poller_,
                                       settings_,
                                       metrics_,
                                       proxied_v6_,
                                       tls_,
                                       h2_,
                                       clients_,
                                       &worker::on_connection_closed,
                                       this},
      handlers_{io_, registry_, poller_, metrics_.routes, &metrics_.upstreams},
      pressure_(registry_, settings_, live_, clients_, metrics_), trimmer_(io_), drain_timer_(io_),
      spread_timer_(io_) {}

void worker::set_router(std::shared_ptr<http::router> r) {
    router_ = std::move(r);
    settings_.session.routes = router_.get();
}

worker::~worker() {
    join();
    // Close what is left and let the aborted waits run while everything they touch exists.
    for (auto& c : all_connections())
        c->close(close_reason::shutdown);
    for (auto& l : listeners_)
        l->close();
    listeners_.clear();
    poller_.stop();
    date_.stop();
    io_.restart();
    io_.poll(); // frees the connections closed above
}

std::shared_ptr<listener> worker::make_listener(const listen_address& addr) {
    return std::make_shared<listener>(io_, poller_, metrics_, *this, addr);
}

std::shared_ptr<listener> worker::make_listener(const listen_address& addr,
                                                std::shared_ptr<shared_socket> shared) {
    return std::make_shared<listener>(io_, poller_, metrics_, *this, addr, std::move(shared));
}

std::vector<boost::asio::ip::tcp::endpoint> worker::endpoints() const {
    std::vector<boost::asio::ip::tcp::endpoint> eps;
    for (const auto& l : listeners_)
        if (const auto ep = l->local_endpoint()) eps.push_back(*ep);
    return eps;
}

void worker::start() {
    poller_.start();
    for (auto& l : listeners_)
        l->start();
    thread_ = std::thread([this] { io_.run(); });
}

void worker::join() {
    if (thread_.joinable()) thread_.join();
}

void worker::post(std::function<void()> f) {
    boost::asio::post(io_, std::move(f));
}

void worker::accept(int fd, const listen_address& addr, const sockaddr_storage& peer) noexcept {
    metrics_.accepted.add();
    // Counted against its client from now; behind a balancer, once its PROXY header names the
    // client. Over the limit: refused before anything is spent on it.
    std::optional<client_key> client;
    if (!addr.proxy_protocol) client = settings_.clients.of(peer);
    try {
        if (client && !clients_.admit(*client, settings_.max_per_client)) {
            if (!addr.tls) {
                date_.hold();
                answer_over_client_limit(fd, date_.value());
                date_.release();
            }
            ::close(fd);
            metrics_.closed(close_reason::per_client);
            return;
        }
    } catch (...) {
        ::close(fd); // no memory for a new client's entry
        metrics_.accept_errors.add();
        return;
    }
    ++connections_;
    connection* c = nullptr;
    try {
        c = new connection(ctx_, fd, addr.proxy_protocol, addr.tls);
    } catch (...) {
        ::close(fd);
        --connections_;
        if (client) clients_.leave(*client);
        return;
    }
    if (client) c->counted_at_accept(peer);
    intrusive_ptr_add_ref(c); // the connection's own reference, handed back by close()
    live_.push_back(*c);
    trimmer_.opened(connections_);
    try {
        c->start();
    } catch (...) {
        c->close(close_reason::error); // out of memory enrolling it: refuse this one, live on
    }
}

void worker::on_connection_closed(void* self, std::size_t freed) noexcept {
    auto& w = *static_cast<worker*>(self);
    --w.connections_;
    w.trimmer_.closed(w.connections_, freed);
    if (w.stopping_ && w.connections_ == 0) {
        w.finish_stop();
        return;
    }
    // A descriptor came back: a listener waiting for one accepts now rather than at its
    // next retry (posted: this close may come from inside that listener's accept loop).
    for (const auto& l : w.listeners_)
        if (l->paused()) l->resume_soon();
}

std::vector<connection_ptr> worker::all_connections() {
    // References first: closing one may free it, and unlinks it from the list being walked.
    std::vector<connection_ptr> all;
    all.reserve(connections_);
    for (connection& c : live_)
        all.emplace_back(&c);
    return all;
}

void worker::stop(duration drain) {
    post([this, drain] {
        if (stopping_) return;
        stopping_ = true;
        drain_.at_stop = connections_;
        // New connections go elsewhere at once (a balancer's health check fails too).
        for (auto& l : listeners_)
            l->close();
        // Every connection's next response says Connection: close. Idle ones are closed spread
        // over close_spread_time, each after keep_alive_min_timeout of quiet, rather than all
        // in one instant: a balancer that has not yet marked this instance down may be sending
        // a request on any of them, and the later each closes, the likelier it has.
        spread_.clear();
        for (auto& c : all_connections()) {
            c->retire();
            if (!c->idle()) continue;
            if (settings_.close_spread == duration::zero()) {
                c->drain();
            } else {
                spread_.push_back({{}, std::move(c)});
            }
        }
        if (connections_ == 0) {
            finish_stop();
            return;
        }
        // The i-th of n idle connections is due at start + spread * i / n, and never before
        // keep_alive_min_timeout of quiet since its last response.
        const auto start = timeouts::clock::now();
        const auto n = static_cast<std::int64_t>(spread_.size());
        for (std::int64_t i = 0; i < n; ++i) {
            spread_close& s = spread_[static_cast<std::size_t>(i)];
            const auto slot = start + settings_.close_spread * (i + 1) / n;
            s.due = std::max(slot, s.conn->last_active() + settings_.min_quiet);
        }
        std::stable_sort(
            spread_.begin(), spread_.end(),
            [](const spread_close& a, const spread_close& b) { return a.due < b.due; });
        spread_next_ = 0;
        if (!spread_.empty()) close_spread();
        drain_timer_.expires_after(drain);
        drain_timer_.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            drain_.cut = connections_;
            spread_.clear();
            // Handlers first (their pools stop: a tunnel closed below counts as shutdown).
            if (router_)
                for (const auto& r : router_->routes())
                    r.target->stop();
            for (auto& c : all_connections())
                c->close(close_reason::shutdown);
        });
    });
}

void worker::close_spread() {
    const auto now = timeouts::clock::now();
    while (spread_next_ < spread_.size() && spread_[spread_next_].due <= now) {
        connection_ptr& c = spread_[spread_next_++].conn;
        // Busy again: its response says Connection: close, and it closes after it.
        if (c->idle()) c->close(close_reason::shutdown);
    }
    if (spread_next_ >= spread_.size()) {
        spread_.clear();
        return;
    }
    spread_timer_.expires_at(spread_[spread_next_].due);
    spread_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) close_spread();
    });
}

void worker::finish_stop() noexcept {
    drain_timer_.cancel();
    spread_timer_.cancel();
    spread_.clear();
    if (router_)
        for (const auto& r : router_->routes())
            r.target->stop();
    date_.stop();
    poller_.stop();
}

void worker::reload(const config& cfg, std::shared_ptr<http::router> routes, unsigned workers,
                    std::shared_ptr<access_log> access,
                    std::vector<std::shared_ptr<listener>> added,
                    std::shared_ptr<const tls::context> tls, std::function<void()> applied) {
    post([this, cfg, routes = std::move(routes), workers, access = std::move(access),
          added = std::move(added), tls = std::move(tls), applied = std::move(applied)]() mutable {
        if (stopping_) {
            if (applied) applied();
            return;
        }
        const worker_settings old = settings_;
        settings_ = worker_settings::from(cfg, routes.get(), workers, access.get(), std::move(tls));
        access_ = std::move(access); // the old log is closed once no worker writes to it
        // The old routes go now; a request answered later still holds its own handler.
        router_ = std::move(routes);
        registry_.set_expire_batch(cfg.expire_batch);
        if (old.clients != settings_.clients) {
            // What names one client changed: every connection is counted again, under the new
            // prefixes (a new limit applies to newcomers only: nobody is cut off).
            clients_.clear();
            for (connection& c : live_)
                c.recount();
        }
        if (old.timeouts && !settings_.timeouts) {
            // Nothing is enforced any more: leave every list, or an active connection would
            // still be closed at the deadline it had.
            for (connection& c : live_)
                c.leave_timeouts();
        } else if (!old.timeouts && settings_.timeouts) {
            for (auto& c : all_connections()) {
                try {
                    c->join_timeouts();
                } catch (...) {
                    c->close(close_reason::error); // cannot be bounded: do not keep it
                }
            }
        } else if (settings_.timeouts && old.keep_alive != settings_.keep_alive) {
            // Connections waiting idle between requests move to the new duration keeping the
            // time already waited; nothing else does (another phase, or an upstream connection,
            // may have the old duration too): the others pick up their new durations at their
            // next phase change.
            registry_.retime(client_kinds::keep_alive, old.keep_alive, settings_.keep_alive);
            registry_.retime(client_kinds::retired, old.keep_alive, settings_.keep_alive);
        }
        sync_listeners(cfg.listen, added);
        if (applied) applied();
    });
}

void worker::sync_listeners(const std::vector<listen_address>& wanted,
                            std::vector<std::shared_ptr<listener>>& added) {
    std::erase_if(listeners_, [&](const std::shared_ptr<listener>& l) {
        const auto kept = std::find_if(wanted.begin(), wanted.end(), [&](const listen_address& a) {
            return a.same_socket(l->address());
        });
        if (kept == wanted.end()) {
            l->close();
            return true;
        }
        l->set_address(*kept); // its parameters may have changed (proxy_protocol)
        return false;
    });
    // The server bound these already (all or nothing); starting only registers them.
    for (auto& l : added) {
        try {
            l->start();
            listeners_.push_back(std::move(l));
        } catch (const std::exception&) {
            metrics_.accept_errors.add(); // out of memory registering it: it stays closed
        }
    }
}

} // namespace tarry::server

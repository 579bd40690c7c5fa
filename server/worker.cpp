#include "worker.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

#include <unistd.h>

namespace tarry::server {

worker::worker(unsigned index, const config& cfg, const http::static_files* files, unsigned workers,
               access_log* access)
    // Only this worker's thread touches its sockets, so the reactor may skip its per-descriptor
    // locks; other threads still post to the scheduler, which stays locked.
    : index_(index), io_(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO), registry_(io_, cfg.expire_batch),
      date_(io_), poller_(io_), settings_(worker_settings::from(cfg, files, workers, access)),
      drain_timer_(io_) {}

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

void worker::listen(const listen_address& addr) {
    listeners_.push_back(std::make_shared<listener>(*this, addr));
}

std::vector<boost::asio::ip::tcp::endpoint> worker::endpoints() const {
    std::vector<boost::asio::ip::tcp::endpoint> eps;
    for (const auto& l : listeners_)
        eps.push_back(l->local_endpoint());
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

void worker::accept(int fd) {
    metrics_.accepted.add();
    ++connections_;
    connection* c = nullptr;
    try {
        c = new connection(*this, fd);
    } catch (...) {
        ::close(fd);
        --connections_;
        return;
    }
    intrusive_ptr_add_ref(c); // the connection's own reference, handed back by close()
    c->start();
}

void worker::connection_closed() noexcept {
    --connections_;
    if (stopping_ && connections_ == 0) finish_stop();
}

bool worker::relieve_pressure() noexcept {
    if (!settings_.timeouts) return false;
    // The front of the keep-alive list is the connection that has been idle longest.
    if (timeouts::idle_list* l = registry_.find(settings_.keep_alive)) {
        for (timeouts::idle_entry* e = l->front(); e != nullptr;
             e = timeouts::idle_list::next(*e)) {
            connection& c = connection::from(e->context());
            if (c.phase() == conn_phase::keep_alive) {
                c.close(close_reason::pressure);
                return true;
            }
        }
    }
    return false;
}

std::vector<connection_ptr> worker::all_connections() {
    // Every connection is in exactly one timeout list, so the lists are the connection table.
    std::vector<connection_ptr> all;
    registry_.for_each_list([&](timeouts::idle_list& l) {
        for (timeouts::idle_entry* e = l.front(); e != nullptr; e = timeouts::idle_list::next(*e))
            all.emplace_back(&connection::from(e->context()));
    });
    return all;
}

void worker::stop(duration drain) {
    post([this, drain] {
        if (stopping_) return;
        stopping_ = true;
        for (auto& l : listeners_)
            l->close();
        if (!settings_.timeouts) {
            // Connections are in no list to be found by: nothing to drain gracefully.
            io_.stop();
            return;
        }
        for (auto& c : all_connections())
            c->drain();
        if (connections_ == 0) {
            finish_stop();
            return;
        }
        drain_timer_.expires_after(drain);
        drain_timer_.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            for (auto& c : all_connections())
                c->close(close_reason::shutdown);
        });
    });
}

void worker::finish_stop() noexcept {
    drain_timer_.cancel();
    date_.stop();
    poller_.stop();
}

void worker::reload(const config& cfg, const http::static_files* files, unsigned workers,
                    access_log* access) {
    post([this, cfg, files, workers, access] {
        if (stopping_) return;
        const worker_settings old = settings_;
        settings_ = worker_settings::from(cfg, files, workers, access);
        registry_.set_expire_batch(cfg.expire_batch);
        // Connections waiting idle move to the new duration keeping the time already waited;
        // the others pick up their new durations at their next phase change.
        if (settings_.timeouts && old.keep_alive != settings_.keep_alive)
            registry_.retime(old.keep_alive, settings_.keep_alive);
        sync_listeners(cfg.listen);
    });
}

void worker::sync_listeners(const std::vector<listen_address>& wanted) {
    std::erase_if(listeners_, [&](const std::shared_ptr<listener>& l) {
        if (std::find(wanted.begin(), wanted.end(), l->address()) != wanted.end()) return false;
        l->close();
        return true;
    });
    for (const auto& addr : wanted) {
        const bool have = std::any_of(listeners_.begin(), listeners_.end(),
                                      [&](const auto& l) { return l->address() == addr; });
        if (have) continue;
        try {
            listen(addr);
            listeners_.back()->start();
        } catch (const std::exception&) {
            metrics_.accept_errors.add(); // reported by the server, which checked it first
        }
    }
}

} // namespace tarry::server

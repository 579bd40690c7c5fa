#pragma once

#include "config.hpp"
#include "connection.hpp"
#include "listener.hpp"
#include "poller.hpp"
#include "worker_metrics.hpp"
#include "worker_settings.hpp"

#include <tarry/http/date_clock.hpp>
#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace tarry::server {

/// One thread, one io_context, one timeout registry, one Date clock and one SO_REUSEPORT
/// listener per address: workers share nothing on the hot path. Other threads talk to a worker
/// only by posting to its io_context (stop, reload, metrics snapshots).
///
/// A worker's thread returns from run() by itself once it is stopping and its last connection
/// is gone: nothing idle keeps the loop alive (empty timeout lists hold no timer, the Date
/// clock stops), so a graceful stop needs no io_context::stop().
class worker {
public:
    worker(unsigned index, const config& cfg, const http::static_files* files, unsigned workers,
           access_log* access);
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;
    ~worker();

    /// Before start(): opens a listener. Throws std::system_error if it cannot.
    void listen(const listen_address& addr);
    /// The local endpoint of each listener (after listen(); ports resolved).
    [[nodiscard]] std::vector<boost::asio::ip::tcp::endpoint> endpoints() const;

    void start();
    void join();

    // Thread-safe: posted to the worker's thread.
    void stop(duration drain);
    void reload(const config& cfg, const http::static_files* files, unsigned workers,
                access_log* access);
    void post(std::function<void()> f);

    // The worker's own thread.
    [[nodiscard]] boost::asio::io_context& io() noexcept { return io_; }
    [[nodiscard]] timeouts::timeout_registry& registry() noexcept { return registry_; }
    [[nodiscard]] http::date_clock& date() noexcept { return date_; }
    [[nodiscard]] poller& poll() noexcept { return poller_; }
    [[nodiscard]] const worker_settings& settings() const noexcept { return settings_; }
    [[nodiscard]] worker_metrics& metrics() noexcept { return metrics_; }
    [[nodiscard]] unsigned index() const noexcept { return index_; }
    [[nodiscard]] std::size_t connections() const noexcept { return connections_; }

    /// A new client socket (non-blocking): becomes a connection.
    void accept(int fd);
    void connection_closed() noexcept;
    [[nodiscard]] bool at_connection_limit() const noexcept {
        return settings_.max_connections != 0 && connections_ >= settings_.max_connections;
    }
    /// Closes the longest-idle keep-alive connection, if any. Returns whether it did.
    bool relieve_pressure() noexcept;

private:
    std::vector<connection_ptr> all_connections();
    void finish_stop() noexcept;
    void sync_listeners(const std::vector<listen_address>& wanted);

    unsigned index_;
    boost::asio::io_context io_;
    timeouts::timeout_registry registry_;
    http::date_clock date_;
    poller poller_;
    worker_settings settings_;
    worker_metrics metrics_;
    std::vector<std::shared_ptr<listener>> listeners_;
    boost::asio::steady_timer drain_timer_;
    std::thread thread_;
    std::size_t connections_ = 0;
    bool stopping_ = false;
};

} // namespace tarry::server

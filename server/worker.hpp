#pragma once

#include "config.hpp"
#include "connection.hpp"
#include "connection_context.hpp"
#include "handlers.hpp"
#include "heap_trimmer.hpp"
#include "listener.hpp"
#include "pressure.hpp"
#include "worker_metrics.hpp"
#include "worker_settings.hpp"
#include <tarry/net/poller.hpp>

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
class worker final : public accept_target {
public:
    worker(unsigned index, const config& cfg, unsigned workers, std::shared_ptr<access_log> access,
           std::shared_ptr<const tls::context> tls = nullptr);
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;
    ~worker();

    /// Before start(): takes a listener made by make_listener().
    void adopt(std::shared_ptr<listener> l) { listeners_.push_back(std::move(l)); }
    /// A bound listener for this worker, not yet started (for reload() to adopt). Throws
    /// std::system_error if it cannot be bound.
    [[nodiscard]] std::shared_ptr<listener> make_listener(const listen_address& addr);
    /// A listener for this worker on a socket every worker shares (a Unix socket, or one
    /// systemd passed). Throws std::system_error.
    [[nodiscard]] std::shared_ptr<listener> make_listener(const listen_address& addr,
                                                          std::shared_ptr<shared_socket> shared);
    /// The local endpoint of each TCP listener (after listen(); ports resolved).
    [[nodiscard]] std::vector<boost::asio::ip::tcp::endpoint> endpoints() const;
    [[nodiscard]] const std::vector<std::shared_ptr<listener>>& listeners() const noexcept {
        return listeners_;
    }

    /// Before start(): the routes requests go to. Later, reload() swaps them.
    void set_router(std::shared_ptr<http::router> r);
    /// The context this worker's handlers are built with (they run on its thread only).
    [[nodiscard]] handler_context& handlers() noexcept { return handlers_; }

    void start();
    void join();

    // Thread-safe: posted to the worker's thread.
    void stop(duration drain);
    /// Applies a configuration checked and built by the server: nothing here can fail but the
    /// opening of a new listener address, which the server has bound once already. `applied`
    /// runs on the worker's thread once the change is in force (or dropped: a stopping worker
    /// takes no new configuration).
    void reload(const config& cfg, std::shared_ptr<http::router> routes, unsigned workers,
                std::shared_ptr<access_log> access, std::vector<std::shared_ptr<listener>> added,
                std::shared_ptr<const tls::context> tls = nullptr,
                std::function<void()> applied = {});
    void post(std::function<void()> f);

    // The worker's own thread.
    [[nodiscard]] boost::asio::io_context& io() noexcept { return io_; }
    [[nodiscard]] timeouts::timeout_registry& registry() noexcept { return registry_; }
    [[nodiscard]] http::date_clock& date() noexcept { return date_; }
    [[nodiscard]] net::poller& poll() noexcept { return poller_; }
    [[nodiscard]] const worker_settings& settings() const noexcept { return settings_; }
    [[nodiscard]] worker_metrics& metrics() noexcept { return metrics_; }
    [[nodiscard]] unsigned index() const noexcept { return index_; }
    [[nodiscard]] std::size_t connections() const noexcept { return connections_; }
    [[nodiscard]] bool stopping() const noexcept { return stopping_; }
    /// How a graceful stop ended, for the exit log line; read once the worker's thread is gone.
    struct drain_outcome {
        std::size_t at_stop = 0; ///< connections open when the stop began
        std::size_t cut = 0;     ///< closed at drain_timeout (still busy or in a tunnel)
        std::size_t left = 0;    ///< open when the loop ended (a second signal stopped it)
    };
    [[nodiscard]] drain_outcome drained() const noexcept {
        return {drain_.at_stop, drain_.cut, connections_};
    }

    // accept_target: what the listeners call.
    /// A new client socket (non-blocking): becomes a connection.
    void accept(int fd, const listen_address& addr, const sockaddr_storage& peer) noexcept override;
    [[nodiscard]] bool at_connection_limit() const noexcept override {
        return settings_.max_connections != 0 && connections_ >= settings_.max_connections;
    }
    [[nodiscard]] bool may_exceed_limit() const noexcept override {
        return connections_ < settings_.max_connections + settings_.past_limit;
    }
    /// The oldest quiet connection closes, or the recently used one idle longest is retired.
    bool relieve_pressure() noexcept override { return pressure_.relieve(); }
    bool free_descriptor() noexcept override { return pressure_.free_descriptor(); }

private:
    static void on_connection_closed(void* self, std::size_t freed) noexcept;
    void close_spread();
    std::vector<connection_ptr> all_connections();
    void finish_stop() noexcept;
    void sync_listeners(const std::vector<listen_address>& wanted,
                        std::vector<std::shared_ptr<listener>>& added);

    unsigned index_;
    boost::asio::io_context io_;
    timeouts::timeout_registry registry_;
    http::date_clock date_;
    net::poller poller_;
    worker_settings settings_;
    worker_metrics metrics_;
    std::shared_ptr<http::router> router_; ///< requests in flight keep their handler alive
    std::shared_ptr<access_log> access_;
    std::unordered_map<const connection*, in6_addr> proxied_v6_;
    tls_streams tls_;
    h2_sessions h2_;
    client_table clients_;
    connection_context ctx_;
    handler_context handlers_;
    live_connections live_;
    pressure pressure_;
    heap_trimmer trimmer_;
    std::vector<std::shared_ptr<listener>> listeners_;
    boost::asio::steady_timer drain_timer_;
    boost::asio::steady_timer spread_timer_;
    struct spread_close {
        timeouts::clock::time_point due;
        connection_ptr conn;
    };
    std::vector<spread_close> spread_; ///< idle connections a stop closes, earliest due first
    std::size_t spread_next_ = 0;
    std::thread thread_;
    std::size_t connections_ = 0;
    drain_outcome drain_;
    bool stopping_ = false;
};

} // namespace tarry::server

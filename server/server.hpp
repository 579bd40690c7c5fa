#pragma once

#include "access_log.hpp"
#include "config.hpp"
#include "worker.hpp"

#include <tarry/http/static_files.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>

#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace tarry::server {

class admin;

/// The composition root: builds the workers from a config, opens every listener before
/// anything runs (so bind errors surface at startup), and turns signals into a graceful stop
/// (SIGTERM, SIGINT) or a reload (SIGHUP).
class server {
public:
    /// Throws std::system_error / config_error if a listener cannot be opened.
    explicit server(config cfg, std::vector<std::string> args = {});
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    ~server();

    /// Starts the workers and blocks until a graceful stop has finished.
    void run();
    /// Graceful stop, from any thread (what SIGTERM does).
    void stop();
    /// Re-reads the configuration, from any thread (what SIGHUP does). Resolves to false,
    /// keeping the old settings, if the new configuration is invalid.
    std::future<bool> request_reload();

    /// The addresses the main listeners are bound to (ports resolved), one per address.
    [[nodiscard]] std::vector<boost::asio::ip::tcp::endpoint> endpoints() const;
    [[nodiscard]] std::optional<boost::asio::ip::tcp::endpoint> admin_endpoint() const;
    /// The metrics exposition, gathered from every worker (call on the server's thread).
    [[nodiscard]] std::string metrics();
    [[nodiscard]] const config& current_config() const noexcept { return cfg_; }
    [[nodiscard]] std::vector<std::unique_ptr<worker>>& workers() noexcept { return workers_; }

private:
    void wait_signal();
    bool reload();
    void open_listeners(const std::vector<listen_address>& addrs);
    std::vector<listen_address> resolve_ports(const std::vector<listen_address>& addrs) const;

    config cfg_;
    std::vector<std::string> args_; ///< argv, to re-read the same file and flags on reload
    unsigned worker_count_;
    std::unique_ptr<http::static_files> files_;
    std::unique_ptr<access_log> access_;
    std::vector<std::unique_ptr<access_log>> old_access_;        ///< kept alive across reloads
    std::vector<std::unique_ptr<http::static_files>> old_files_; ///< kept alive across reloads
    boost::asio::io_context io_;                                 ///< signals and the admin endpoint
    boost::asio::signal_set signals_;
    std::vector<std::unique_ptr<worker>> workers_;
    std::unique_ptr<admin> admin_;
    std::thread joiner_;
    bool stopping_ = false;
};

} // namespace tarry::server

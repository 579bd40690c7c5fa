#pragma once

#include "tls_setup.hpp"

#include "access_log.hpp"
#include "config.hpp"
#include "handlers.hpp"
#include "pid_file.hpp"
#include "upstream_names.hpp"
#include "worker.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
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
    /// Throws std::system_error / config_error if a listener cannot be opened. `custom` routes
    /// are added to the configured ones in every worker.
    explicit server(config cfg, std::vector<std::string> args = {},
                    std::vector<custom_route> custom = {});
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    ~server();

    /// Starts the workers and blocks until a graceful stop has finished.
    void run();
    /// Graceful stop, from any thread (what SIGTERM does).
    void stop();
    /// Re-reads the configuration, from any thread (what SIGHUP does). All or nothing: the new
    /// state (routes, listeners, access log, admin endpoint) is built whole first, and applied
    /// only if all of it could be; otherwise it resolves to false and nothing changed. It
    /// resolves to true once every worker has applied the change on its own thread, so a
    /// request sent after it is answered under the new configuration.
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
    /// The exit line: why, and what the drain did (connections finished, cut at drain_timeout).
    void log_exit() const;
    /// `applied` runs (on some worker's thread) once every worker has applied the change; not
    /// at all when it returns false.
    bool reload(std::function<void()> applied = {});
    /// The access log at `path`, its waiting lines flushed within a second by log_flush_.
    std::shared_ptr<access_log> open_access_log(const std::filesystem::path& path,
                                                const std::string& format);
    void flush_soon(std::shared_ptr<access_log> log);
    void open_listeners(const std::vector<listen_address>& addrs);
    /// For each worker, bound listeners for the addresses of `wanted` not in `open` (port 0:
    /// every worker shares the port the first one got). Throws if one cannot be bound; what
    /// was opened is closed again.
    std::vector<std::vector<std::shared_ptr<listener>>>
    new_listeners(const std::vector<listen_address>& wanted,
                  const std::vector<listen_address>& open);
    /// A reload's mode and owner for the Unix sockets it keeps.
    void set_unix_permissions(const std::vector<listen_address>& wanted);
    /// Keeps `resolved`'s names resolved by their TTLs from now on (the watch made on first use).
    void watch_names(const resolved_names& resolved, const config& cfg);

    config cfg_;
    std::vector<std::string> args_; ///< argv, to re-read the same file and flags on reload
    std::vector<custom_route> custom_;
    unsigned worker_count_;
    std::shared_ptr<access_log> access_;
    /// Session ticket keys: one ring for the server's life, so tickets survive reloads.
    std::shared_ptr<tls::ticket_keys> ticket_keys_;
    std::shared_ptr<const tls::context> tls_; ///< null without TLS listeners
    boost::asio::io_context io_; ///< signals, the admin endpoint, the access log's flush
    boost::asio::signal_set signals_;
    boost::asio::steady_timer log_flush_; ///< armed while access log lines wait (at most 1 s)
    bool flush_armed_ = false;
    /// What the upstreams' DNS names resolve to, read by every worker's groups; kept resolved
    /// on io_ by names_watch_ (null while no upstream server is a name).
    std::shared_ptr<upstream::name_table> names_ = std::make_shared<upstream::name_table>();
    std::unique_ptr<resolve::name_watch> names_watch_;
    std::vector<std::unique_ptr<worker>> workers_;
    /// systemd's sockets, kept open for the server's life (a stop leaves them to systemd, which
    /// queues connections for the next start; a reload may name them again).
    std::vector<std::shared_ptr<shared_socket>> inherited_;
    /// The Unix sockets the listeners hold (the last to close one removes its file).
    std::vector<std::weak_ptr<shared_socket>> unix_sockets_;
    std::unique_ptr<admin> admin_;
    std::unique_ptr<pid_file> pid_file_;             ///< removed as the server goes
    std::vector<std::unique_ptr<admin>> old_admins_; ///< closed; their aborted accepts may run
    std::thread joiner_;
    /// Why the process stops ("SIGTERM"; a stop() from the program that embeds the server), and
    /// since when, for the exit line.
    std::string stop_reason_ = "stop requested";
    std::chrono::steady_clock::time_point stop_started_;
    bool stopping_ = false;
    bool stopped_ = false; ///< the workers are gone: no signal is waited for again
};

} // namespace tarry::server

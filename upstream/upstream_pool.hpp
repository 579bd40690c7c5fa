#pragma once

#include "upstream_connection.hpp"
#include "upstream_metrics.hpp"
#include "upstream_settings.hpp"

#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/intrusive/list.hpp>

#include <memory>
#include <string>

namespace tarry::upstream {

/// One worker's connections to one upstream server: the idle ones, and counts of the busy.
///
/// Idle connections are kept in an intrusive list, most recently used last: a request takes the
/// tail (its socket is the warmest, and the upstream is least likely to be closing it), while
/// the oldest, at the head, are the first to expire through their own timeout entry. Every
/// operation on the list is O(1). An idle connection stays in the worker's poller, so an upstream
/// that closes it (EOF, reset) takes it out of the pool at once instead of at the next request.
///
/// Sized by demand, as HAProxy sizes its server pools: a connection that finishes its request
/// is kept (up to max_idle, a cap that protects the application), and every purge period half
/// of the idle connections beyond the most that were busy at once during the last period are
/// closed (upstream_settings::purge_period, 5 s). A burst keeps what it needed, so the next burst
/// opens nothing; a quieter period shrinks the pool gradually; an idle one empties it through
/// idle_timeout. Nothing is shared across threads.
class upstream_pool : public std::enable_shared_from_this<upstream_pool> {
public:
    upstream_pool(boost::asio::io_context& io, net::poller& poll,
                  timeouts::timeout_registry& registry, const upstream_settings& settings,
                  server_address server, std::shared_ptr<upstream_metrics> counters = nullptr);
    upstream_pool(const upstream_pool&) = delete;
    upstream_pool& operator=(const upstream_pool&) = delete;
    ~upstream_pool();

    /// The most recently used idle connection, or null. It counts as busy.
    std::shared_ptr<upstream_connection> take();
    /// A new, unconnected connection. It counts as busy.
    std::shared_ptr<upstream_connection> open();
    /// A busy connection whose exchange completed with keep-alive: idle for `keep` (the
    /// configured idle timeout, shortened by the upstream's hint if `hinted`).
    void give_back(std::shared_ptr<upstream_connection> c, timeouts::clock::duration keep,
                   bool hinted);
    /// A busy connection that will not be reused: closed and counted.
    void discard(upstream_connection& c, upstream_close why) noexcept;

    /// A busy connection switched protocols (an upgrade tunnel): counted as a tunnel from now,
    /// not as busy (a tunnel says nothing about how many connections requests need).
    void to_tunnel() noexcept;
    /// A tunnel's connection, closed and counted.
    void end_tunnel(upstream_connection& c, tunnel_close why) noexcept;

    /// Closes the idle connections, and from now on every connection given back, counted as
    /// `why` (shutdown; removed: its address left its name's answer). Busy connections and
    /// tunnels finish what they carry: a pool is drained, never cut.
    void stop(upstream_close why = upstream_close::shutdown) noexcept;
    [[nodiscard]] bool stopped() const noexcept { return stopped_; }
    /// Closes `c` if it is idle here, to free its descriptor (the worker finds the connection
    /// idle longest through upstream_kinds::pooled). False if it is not idle here.
    bool shed(upstream_connection& c) noexcept;

    /// Passive health (the group decides): skipped for fail_timeout from now.
    void mark_failed() noexcept;
    [[nodiscard]] bool down() const noexcept;
    /// Until when it is marked down (the past if it is not).
    [[nodiscard]] timeouts::clock::time_point down_until() const noexcept { return down_until_; }

    void on_idle_event(upstream_connection& c) noexcept;
    void on_idle_expired(upstream_connection& c) noexcept;

    [[nodiscard]] const upstream_connection::endpoint_type& endpoint() const noexcept {
        return endpoint_;
    }
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] std::size_t idle_count() const noexcept { return idle_count_; }
    [[nodiscard]] std::size_t busy_count() const noexcept { return busy_; }
    [[nodiscard]] upstream_metrics& metrics() noexcept { return *metrics_; }
    /// What a connection to this server makes its TLS with; null: plain TCP.
    [[nodiscard]] const tls_target* tls() const noexcept {
        return tls_.context != nullptr ? &tls_ : nullptr;
    }

private:
    using idle_list = boost::intrusive::list<
        upstream_connection,
        boost::intrusive::member_hook<upstream_connection, decltype(upstream_connection::pool_hook),
                                      &upstream_connection::pool_hook>,
        boost::intrusive::constant_time_size<false>>;

    /// Takes `c` out of the idle list; the returned reference keeps it alive.
    std::shared_ptr<upstream_connection> unlink_idle(upstream_connection& c) noexcept;
    bool remove_idle(upstream_connection& c, upstream_close why) noexcept;
    void purge(timeouts::clock::time_point now) noexcept;

    boost::asio::io_context& io_;
    net::poller& poll_;
    timeouts::timeout_registry& registry_;
    const upstream_settings& settings_;
    std::string name_;
    upstream_connection::endpoint_type endpoint_;
    idle_list idle_; ///< oldest first
    std::size_t idle_count_ = 0;
    std::size_t busy_ = 0;
    std::size_t peak_busy_ = 0; ///< the most busy at once since this period began
    timeouts::clock::time_point period_start_{};
    bool stopped_ = false;
    upstream_close stop_reason_ = upstream_close::shutdown;
    timeouts::clock::time_point down_until_{};
    std::shared_ptr<upstream_metrics> metrics_; ///< its server's (upstream_counters), or its own
    /// The server's last TLS session (this worker's), offered on the next connect. Declared
    /// before tls_, which points to it; freed after every connection's SSL (an SSL lives while
    /// its socket is open, and a pool closes its idle ones as it goes; busy ones keep it alive).
    tls::session_slot session_;
    tls_target tls_;
};

} // namespace tarry::upstream

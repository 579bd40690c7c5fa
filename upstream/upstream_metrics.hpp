#pragma once

#include <tarry/timeouts/expiry_stats.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace tarry::upstream {

/// Why a pooled or busy upstream connection was closed.
enum class upstream_close : std::uint8_t {
    upstream_close,  ///< the upstream closed it (EOF or reset while idle, or no keep-alive)
    idle_timeout,    ///< idle in the pool for idle_timeout
    keep_alive_hint, ///< retired before the upstream's advertised Keep-Alive timeout
    max_idle,        ///< the pool was full
    error,           ///< a failed or abandoned exchange (client gone, timeout, malformed)
    pressure,        ///< idle, closed to free a descriptor for a client
    surplus,         ///< idle beyond what the last purge period needed
    shutdown,        ///< the server is stopping (or reloading: the old routes' pools)
    removed,         ///< its address left its DNS name's answer (drained: idle ones at once,
                     ///< busy ones once their exchange ends)
    count_
};

/// tls: the TLS handshake failed (the certificate did not verify, the server refused ours, no
/// common protocol), counted apart from connect since its cure is a configuration's.
enum class upstream_error : std::uint8_t { connect, reset, timeout, malformed, tls, count_ };

/// Why an upgrade tunnel ended.
enum class tunnel_close : std::uint8_t {
    done,           ///< both sides closed (each half-close passed on)
    client_close,   ///< the client went away (reset, or its connection failed)
    upstream_close, ///< the upstream reset it
    idle_timeout,   ///< no byte either way for tunnel_idle_timeout
    shutdown,       ///< the server stopped (at drain_timeout: a tunnel cannot be told to close)
    count_
};

inline constexpr std::array<std::string_view, static_cast<std::size_t>(upstream_close::count_)>
    upstream_close_names{"upstream_close", "idle_timeout", "keep_alive_hint", "max_idle", "error",
                         "pressure",       "surplus",      "shutdown",        "removed"};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(upstream_error::count_)>
    upstream_error_names{"connect", "reset", "timeout", "malformed", "tls"};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(tunnel_close::count_)>
    tunnel_close_names{"done", "client_close", "upstream_close", "idle_timeout", "shutdown"};

/// Counters of one upstream server in one worker. Written by that worker only, read by any
/// thread (/metrics): a relaxed load and store, no locked read-modify-write, as
/// server/worker_metrics.hpp does.
struct upstream_metrics {
    struct counter {
        std::atomic<std::int64_t> value{0};
        void add(std::int64_t n = 1) noexcept {
            value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
        }
        [[nodiscard]] std::int64_t get() const noexcept {
            return value.load(std::memory_order_relaxed);
        }
    };

    counter idle;           ///< gauge: connections idle in the pool
    counter busy;           ///< gauge: connections carrying a request (connecting included)
    counter opened;         ///< connections opened
    counter reused;         ///< requests sent on a pooled connection
    counter requests;       ///< requests sent (first attempts)
    counter retries;        ///< requests replayed after a reused connection died unanswered
    counter tls_handshakes; ///< TLS handshakes completed (https:// servers)
    counter tls_resumed;    ///< ... of which resumed a session (abbreviated: no certificate)
    std::array<counter, static_cast<std::size_t>(upstream_error::count_)> errors;
    std::array<counter, static_cast<std::size_t>(upstream_close::count_)> closes;
    counter tunnels;         ///< gauge: upgrade tunnels open (not counted busy)
    counter tunnel_bytes_up; ///< client to upstream, through tunnels
    counter tunnel_bytes_down;
    std::array<counter, static_cast<std::size_t>(tunnel_close::count_)> tunnel_closes;

    /// Upper bounds of the response time histogram, in microseconds: from the request's start
    /// (a connection taken or opened) to the response head.
    static constexpr std::array<std::int64_t, 11> response_bounds_us{
        1'000,   5'000,   10'000,    25'000,    50'000,    100'000,
        250'000, 500'000, 1'000'000, 2'500'000, 10'000'000};
    std::array<counter, response_bounds_us.size() + 1> response_buckets; ///< the last: +Inf
    counter response_us_sum;
    void responded(std::int64_t us) noexcept {
        response_buckets[timeouts::bucket_of(response_bounds_us, us)].add();
        response_us_sum.add(us);
    }

    void tls_handshake(bool resumed) noexcept {
        tls_handshakes.add();
        if (resumed) tls_resumed.add();
    }
    void error(upstream_error e) noexcept { errors[static_cast<std::size_t>(e)].add(); }
    void closed(upstream_close r) noexcept { closes[static_cast<std::size_t>(r)].add(); }
    [[nodiscard]] std::int64_t tunnel_closes_of(tunnel_close r) const noexcept {
        return tunnel_closes[static_cast<std::size_t>(r)].get();
    }
    [[nodiscard]] std::int64_t errors_of(upstream_error e) const noexcept {
        return errors[static_cast<std::size_t>(e)].get();
    }
    [[nodiscard]] std::int64_t closes_of(upstream_close r) const noexcept {
        return closes[static_cast<std::size_t>(r)].get();
    }
};

/// One worker's upstream counters by server, kept for the worker's life: the pools a reload
/// builds take the counters their server had, so a reload is not a counter reset, and a gauge
/// (tunnels, busy) still counts the connections and tunnels the old routes' pools carry until
/// they end. A label per server the configuration ever named: bounded by it. Locked only to add
/// a server (building a router) and to walk them (/metrics); the counters themselves are written
/// lock-free by the worker. Shared with the pools, which may outlive this (a pool kept by a
/// handler queued on the loop as the worker goes).
class upstream_counters {
public:
    /// The counters of `server`, made on first use.
    std::shared_ptr<upstream_metrics> of(const std::string& server) {
        const std::lock_guard lock(mu_);
        auto& m = by_server_[server];
        if (!m) m = std::make_shared<upstream_metrics>();
        return m;
    }
    template <typename F> void each(F&& f) const {
        const std::lock_guard lock(mu_);
        for (const auto& [server, m] : by_server_)
            f(server, *m);
    }

private:
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<upstream_metrics>> by_server_;
};

} // namespace tarry::upstream

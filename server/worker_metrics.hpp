#pragma once

#include "close_reason.hpp"
#include "conn_phase.hpp"

#include <tarry/http/router.hpp>
#include <tarry/timeouts/expiry_stats.hpp>
#include <tarry/tls/stream.hpp>
#include <tarry/upstream/upstream_metrics.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace tarry::server {

/// A counter written by one worker thread and read by the metrics endpoint from another: a
/// relaxed load and store, no locked instruction on the hot path.
class counter {
public:
    void add(std::int64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    [[nodiscard]] std::int64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> v_{0};
};

/// One worker's response counters per route prefix, kept for the worker's life so that a reload
/// is not a counter reset. A label per prefix the configuration ever had: bounded by it. The
/// map is locked only to add a prefix (a reload) and to walk it (the metrics endpoint); the
/// counters themselves are written lock-free by the worker.
class route_counters {
public:
    /// The counters of `prefix`, made on first use; they never move.
    http::route_stats& of(const std::string& prefix) {
        const std::lock_guard lock(mu_);
        return by_prefix_[prefix];
    }
    template <typename F> void each(F&& f) const {
        const std::lock_guard lock(mu_);
        for (const auto& [prefix, stats] : by_prefix_)
            f(prefix, stats);
    }

private:
    mutable std::mutex mu_;
    std::map<std::string, http::route_stats> by_prefix_;
};

struct worker_metrics {
    /// TLS listeners' connections.
    struct tls_counters {
        std::array<counter, 2> handshakes; ///< completed: full, resumed
        std::array<counter, static_cast<std::size_t>(tls::handshake_failure::count_)> failures;
        /// Upper bounds of the handshake duration histogram (accept to done), microseconds.
        static constexpr std::array<std::int64_t, 10> duration_bounds_us{
            1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 1'000'000, 5'000'000};
        std::array<counter, duration_bounds_us.size() + 1> duration_buckets;
        counter duration_us_sum;
        std::array<counter, tls::suite_names.size()> open; ///< open, by cipher suite
        counter own_records; ///< open on tarry's own TLS 1.3 records (no OpenSSL object)
        /// Closed for a run of records without data past its limit, by kind (tls::noop_limit).
        std::array<counter, tls::noop_limit_names.size()> noop_limits;
        void took(std::int64_t us) noexcept {
            duration_buckets[timeouts::bucket_of(duration_bounds_us, us)].add();
            duration_us_sum.add(us);
        }
    };

    counter accepted;
    counter accept_errors;
    counter open;
    counter requests;                 ///< responses written (error answers and deferred ones too)
    std::array<counter, 5> responses; ///< by class: 1xx (101) .. 5xx
    counter received_bytes;           ///< from clients
    counter sent_bytes;               ///< to clients (files too)
    /// Upper bounds of the request duration histogram, in microseconds: from the first byte of
    /// a request (or the end of the response before it, for one pipelined behind it) to the last
    /// byte of its response.
    static constexpr std::array<std::int64_t, 12> duration_bounds_us{
        500,    1'000,   2'500,   5'000,   10'000,    25'000,
        50'000, 100'000, 250'000, 500'000, 1'000'000, 5'000'000};
    std::array<counter, duration_bounds_us.size() + 1> duration_buckets; ///< the last: +Inf
    counter duration_us_sum;
    /// `n` responses that each took `us` (pipelined ones finished by one write).
    void took(std::int64_t us, std::uint32_t n = 1) noexcept {
        duration_buckets[timeouts::bucket_of(duration_bounds_us, us)].add(n);
        duration_us_sum.add(us * n);
    }
    counter saved_at_timeout; ///< keep-alive deadlines that found a request waiting, served it
    counter pressure_retires; ///< at the limit, recently used connections asked to close next
    counter
        pressure_by_client; ///< at the limit, taken from a client holding more than the oldest's
    std::array<counter, static_cast<std::size_t>(close_reason::count_)> closes;
    route_counters routes;
    std::array<counter, static_cast<std::size_t>(conn_phase::count_)> phases;
    tls_counters tls;
    /// HTTP/2: connections and streams open, and the frames that end them, by error code (the
    /// 14 of RFC 9113 section 7, the last slot any other).
    struct h2_counters {
        static constexpr std::size_t codes = 15;
        counter connections;                        ///< open, speaking HTTP/2
        counter streams;                            ///< requests being answered
        counter streams_total;                      ///< requests received
        std::array<counter, codes> goaways;         ///< GOAWAY frames sent
        std::array<counter, codes> resets_sent;     ///< RST_STREAM frames sent
        std::array<counter, codes> resets_received; ///< the peer's RST_STREAM on an open stream
        /// Streams that became tunnels (a WebSocket by RFC 8441's extended CONNECT): open, and
        /// opened in all.
        counter tunnels;
        counter tunnels_total;
    };
    h2_counters h2;
    upstream::upstream_counters upstreams; ///< by server, across reloads (after the hot ones)

    void closed(close_reason r) noexcept { closes[static_cast<std::size_t>(r)].add(); }
};

} // namespace tarry::server

#pragma once

#include <tarry/resolve/name_watch.hpp>
#include <tarry/upstream/upstream_metrics.hpp>

#include <array>
#include <map>
#include <string>
#include <string_view>

#include "worker_metrics.hpp"

#include <tarry/timeouts/expiry_stats.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tarry::server {

class worker;

/// What the metrics endpoint reads from one worker. Counters are atomics and could be read
/// from anywhere; the timeout lists and expiry statistics belong to the worker's thread, so a
/// snapshot is taken there (posted) and handed back.
/// One upstream server's counters in one worker, copied on that worker's thread.
struct upstream_sample {
    std::int64_t idle = 0, busy = 0, opened = 0, reused = 0, requests = 0, retries = 0;
    std::int64_t tls_handshakes = 0, tls_resumed = 0;
    std::array<std::int64_t, static_cast<std::size_t>(upstream::upstream_error::count_)> errors{};
    std::array<std::int64_t, static_cast<std::size_t>(upstream::upstream_close::count_)> closes{};
    std::array<std::int64_t, upstream::upstream_metrics::response_bounds_us.size() + 1>
        response_buckets{};
    std::int64_t response_us_sum = 0;
    std::int64_t tunnels = 0, tunnel_bytes_up = 0, tunnel_bytes_down = 0;
    std::array<std::int64_t, static_cast<std::size_t>(upstream::tunnel_close::count_)>
        tunnel_closes{};

    upstream_sample& operator+=(const upstream_sample& u) noexcept;
};

/// One timeout list: its kind's name (a kind lives as long as the program), duration, length.
struct list_sample {
    std::string_view kind;
    timeouts::clock::duration duration{};
    std::size_t length = 0;
};

struct worker_snapshot {
    std::vector<list_sample> lists;
    std::map<std::string_view, timeouts::expiry_stats> expiry; ///< by kind
    timeouts::expiry_stats expiry_total;
    std::uint64_t date_refreshes = 0;
    std::map<std::string, upstream_sample> upstreams; ///< by server ("127.0.0.1:3000")
};

/// Taken on the worker's own thread.
worker_snapshot take_snapshot(worker& w);

/// The Prometheus text exposition (format 0.0.4) of all workers, summed.
std::string render_metrics(const std::vector<worker*>& workers,
                           const std::vector<worker_snapshot>& snapshots);
/// The upstreams' DNS names (a label per name the configuration has: bounded by it), appended.
void render_names(std::string& out, const std::vector<resolve::name_state>& names);

} // namespace tarry::server

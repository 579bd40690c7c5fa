#pragma once

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
struct worker_snapshot {
    std::vector<std::pair<timeouts::clock::duration, std::size_t>> lists; ///< duration, length
    timeouts::expiry_stats expiry;
    std::uint64_t date_refreshes = 0;
};

/// Taken on the worker's own thread.
worker_snapshot take_snapshot(worker& w);

/// The Prometheus text exposition (format 0.0.4) of all workers, summed.
std::string render_metrics(const std::vector<worker*>& workers,
                           const std::vector<worker_snapshot>& snapshots);

} // namespace tarry::server

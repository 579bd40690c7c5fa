#pragma once

// The process_* series every Prometheus client library exports (client_golang's process
// collector, Python's prometheus_client), with their names, types and help texts, so alerts and
// dashboards written for any exporter work on tarry's /metrics. Read from /proc/self at scrape
// time: nothing is counted per request.

#include <cstdint>
#include <optional>
#include <string>

namespace tarry::server {

struct process_sample {
    double cpu_seconds = 0;        ///< user + system
    double start_time_seconds = 0; ///< since the Unix epoch
    std::uint64_t virtual_bytes = 0;
    std::uint64_t resident_bytes = 0;
    std::uint64_t open_fds = 0;
    std::optional<std::uint64_t> max_fds; ///< none when RLIMIT_NOFILE is unlimited
};

/// Reads /proc/self/stat, /proc/stat's btime, /proc/self/fd and RLIMIT_NOFILE; none when /proc
/// cannot be read (then the series are left out, as the client libraries do off Linux).
std::optional<process_sample> read_process_sample();

/// Appends the six families in the text exposition format.
void render_process_metrics(std::string& out, const process_sample& s);

} // namespace tarry::server

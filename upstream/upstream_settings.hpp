#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace tarry::upstream {

/// How a proxy reaches its application servers. A plain struct: the configuration fills it.
struct upstream_settings {
    enum class balance_mode { round_robin, least_conn };
    using duration = std::chrono::steady_clock::duration;

    /// "127.0.0.1:8080", "[::1]:8080", "localhost:8080" (numeric, no resolver) or "unix:/path".
    std::vector<std::string> servers;
    balance_mode balance = balance_mode::round_robin;
    std::size_t max_idle = 1024; ///< cap on idle connections kept per server (demand decides)
    duration idle_timeout = std::chrono::seconds(60); ///< an idle pooled connection
    duration connect_timeout = std::chrono::seconds(5);
    duration send_timeout = std::chrono::seconds(60);     ///< gap between writes of the request
    duration response_timeout = std::chrono::seconds(60); ///< request sent -> first byte back
    duration read_timeout = std::chrono::seconds(60);     ///< gap between reads of the response
    duration fail_timeout = std::chrono::seconds(10); ///< a server that failed is skipped this long
    /// How often a pool closes half of its idle connections beyond demand (HAProxy's
    /// pool-purge-delay).
    duration purge_period = std::chrono::seconds(5);
    /// true: keep the client's X-Forwarded-* and append to X-Forwarded-For; false: replace.
    bool trust_forwarded = false;
};

} // namespace tarry::upstream

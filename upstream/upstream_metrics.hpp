#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
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
    count_
};

enum class upstream_error : std::uint8_t { connect, reset, timeout, malformed, count_ };

inline constexpr std::array<std::string_view, static_cast<std::size_t>(upstream_close::count_)>
    upstream_close_names{"upstream_close", "idle_timeout", "keep_alive_hint",
                         "max_idle",       "error",        "pressure"};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(upstream_error::count_)>
    upstream_error_names{"connect", "reset", "timeout", "malformed"};

/// Counters of one upstream server in one worker. Written by that worker only, read by any
/// thread (/metrics): relaxed atomics, as server/worker_metrics.hpp does.
struct upstream_metrics {
    struct counter {
        std::atomic<std::int64_t> value{0};
        void add(std::int64_t n = 1) noexcept { value.fetch_add(n, std::memory_order_relaxed); }
        [[nodiscard]] std::int64_t get() const noexcept {
            return value.load(std::memory_order_relaxed);
        }
    };

    counter idle;     ///< gauge: connections idle in the pool
    counter busy;     ///< gauge: connections carrying a request (connecting included)
    counter opened;   ///< connections opened
    counter reused;   ///< requests sent on a pooled connection
    counter requests; ///< requests sent (first attempts)
    counter retries;  ///< requests replayed after a reused connection died unanswered
    std::array<counter, static_cast<std::size_t>(upstream_error::count_)> errors;
    std::array<counter, static_cast<std::size_t>(upstream_close::count_)> closes;

    void error(upstream_error e) noexcept { errors[static_cast<std::size_t>(e)].add(); }
    void closed(upstream_close r) noexcept { closes[static_cast<std::size_t>(r)].add(); }
    [[nodiscard]] std::int64_t errors_of(upstream_error e) const noexcept {
        return errors[static_cast<std::size_t>(e)].get();
    }
    [[nodiscard]] std::int64_t closes_of(upstream_close r) const noexcept {
        return closes[static_cast<std::size_t>(r)].get();
    }
};

} // namespace tarry::upstream

#pragma once

/// @file
/// @brief expiry_stats, what expiry did: counts, wake times and a lateness histogram.

#include <array>
#include <chrono>
#include <cstdint>

namespace tarry::timeouts {

/// The bucket of a histogram with upper `bounds` (ascending; a last, implicit bucket is +Inf)
/// that `value` falls in: the first bound at or above it, or bounds.size().
template <std::size_t N>
[[nodiscard]] constexpr std::size_t bucket_of(const std::array<std::int64_t, N>& bounds,
                                              std::int64_t value) noexcept {
    std::size_t i = 0;
    while (i < N && value > bounds[i])
        ++i;
    return i;
}

/// Counts expiries and how late each ran (actual minus deadline), in the cumulative-bucket shape
/// a Prometheus histogram wants. Recording is a handful of compares: it sits on the expiry path,
/// never on the touch path. A timeout_registry keeps one (timeout_registry::stats()); sum the
/// registries of several threads with `+=` after reading each on its own thread.
struct expiry_stats {
    /// Upper bounds of the buckets, in microseconds; a last, implicit bucket is +Inf.
    static constexpr std::array<std::int64_t, 12> bounds_us{
        100,    500,    1'000,   2'000,   5'000,     10'000,
        20'000, 50'000, 100'000, 500'000, 1'000'000, 10'000'000};

    std::uint64_t expired = 0;     ///< entries expired
    std::uint64_t wakeups = 0;     ///< timer completions and batch continuations
    std::uint64_t wake_us_sum = 0; ///< time spent expiring, over all wakes
    std::uint64_t wake_us_max = 0; ///< the longest single wake: how long expiry held the loop
    std::uint64_t late_sum_us = 0; ///< lateness of every expiry, summed
    /// Timer waits or batch continuations that could not be queued for lack of memory.
    std::uint64_t schedule_failures = 0;
    std::array<std::uint64_t, bounds_us.size() + 1> late_buckets{}; ///< not cumulative

    /// Counts one expiry that ran `late` after its deadline (negative counts as 0).
    void record(std::chrono::steady_clock::duration late) noexcept {
        auto us = std::chrono::duration_cast<std::chrono::microseconds>(late).count();
        if (us < 0) us = 0;
        ++expired;
        late_sum_us += static_cast<std::uint64_t>(us);
        ++late_buckets[bucket_of(bounds_us, us)];
    }

    /// Records a wake that spent `took` expiring.
    void record_wake(std::chrono::steady_clock::duration took) noexcept {
        const auto us = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(took).count());
        wake_us_sum += us;
        if (us > wake_us_max) wake_us_max = us;
    }

    /// Adds another registry's figures (the maximum is the larger one).
    expiry_stats& operator+=(const expiry_stats& o) noexcept {
        expired += o.expired;
        wakeups += o.wakeups;
        wake_us_sum += o.wake_us_sum;
        if (o.wake_us_max > wake_us_max) wake_us_max = o.wake_us_max;
        late_sum_us += o.late_sum_us;
        schedule_failures += o.schedule_failures;
        for (std::size_t i = 0; i < late_buckets.size(); ++i)
            late_buckets[i] += o.late_buckets[i];
        return *this;
    }
};

} // namespace tarry::timeouts

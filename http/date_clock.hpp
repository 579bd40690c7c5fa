#pragma once

#include "date_cache.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/system_timer.hpp>

#include <cstddef>

namespace tarry::http {

/// Keeps a date_cache current with a timer at each second boundary, but only while someone
/// holds it: Asio has no uv_unref, so a timer that re-armed forever would keep run() from
/// returning on an idle server. Connections hold it; when the last one lets go the wait is
/// cancelled, so an idle server has no pending timer. Costs one timer arm per idle-to-busy
/// transition, nothing per request.
class date_clock {
public:
    explicit date_clock(boost::asio::io_context& io) : timer_(io) {}

    /// A connection opened: makes sure the cache is current and the timer runs.
    void hold();
    /// A connection closed.
    void release() noexcept;
    /// Cancels the timer whatever the holders (graceful stop).
    void stop() noexcept;

    [[nodiscard]] const date_cache& cache() const noexcept { return cache_; }
    [[nodiscard]] std::string_view value() const noexcept { return cache_.value(); }
    [[nodiscard]] bool armed() const noexcept { return armed_; }

private:
    void arm();

    date_cache cache_;
    boost::asio::system_timer timer_;
    std::size_t holders_ = 0;
    bool armed_ = false;
    bool stopped_ = false;
};

} // namespace tarry::http

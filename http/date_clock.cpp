#include "date_clock.hpp"

#include <chrono>

namespace tarry::http {
namespace {

// The timer's own clock. std::time() reads the coarse realtime clock, which can still show the
// old second when a wait for the boundary completes: the Date would then stay a second stale.
std::time_t now_seconds() noexcept {
    return std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
}

} // namespace

void date_clock::hold() {
    ++holders_;
    if (armed_ || stopped_) return;
    cache_.update(now_seconds());
    arm();
}

void date_clock::arm() {
    using namespace std::chrono;
    armed_ = true;
    // The next second boundary by the wall clock, which is what Date shows.
    const auto next = time_point_cast<seconds>(system_clock::now()) + seconds(1);
    timer_.expires_at(next);
    timer_.async_wait([this](boost::system::error_code ec) {
        // A cancelled wait says nothing about the current one (release() cleared armed_).
        if (ec || stopped_) return;
        armed_ = false;
        cache_.update(now_seconds());
        if (holders_ != 0) arm();
    });
}

void date_clock::release() noexcept {
    if (--holders_ != 0 || !armed_) return;
    armed_ = false;
    timer_.cancel();
}

void date_clock::stop() noexcept {
    stopped_ = true;
    armed_ = false;
    timer_.cancel();
}

} // namespace tarry::http

#include "date_clock.hpp"

#include <chrono>

namespace tarry::http {

void date_clock::hold() {
    ++holders_;
    if (armed_ || stopped_) return;
    cache_.update(std::time(nullptr));
    arm();
}

void date_clock::arm() {
    using namespace std::chrono;
    armed_ = true;
    // The next second boundary by the wall clock, which is what Date shows.
    const auto next = time_point_cast<seconds>(system_clock::now()) + seconds(1);
    timer_.expires_at(next);
    timer_.async_wait([this](boost::system::error_code ec) {
        armed_ = false;
        if (ec || stopped_) return;
        cache_.update(std::time(nullptr));
        if (holders_ != 0) arm();
    });
}

void date_clock::stop() noexcept {
    stopped_ = true;
    timer_.cancel();
}

} // namespace tarry::http

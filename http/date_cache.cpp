#include "date_cache.hpp"

#include <cstdio>

namespace tarry::http {

bool date_cache::update(std::time_t now) noexcept {
    if (now == second_) return false;
    static constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::snprintf(text_.data(), text_.size(), "%s, %02d %s %04d %02d:%02d:%02d GMT",
                  days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900,
                  tm.tm_hour, tm.tm_min, tm.tm_sec);
    second_ = now;
    ++refreshes_;
    return true;
}

} // namespace tarry::http

#pragma once

#include <array>
#include <cstdint>
#include <ctime>
#include <string_view>

namespace tarry::http {

/// The `Date` field value (IMF-fixdate, RFC 9110 5.6.7), formatted once per second and copied
/// into each response, as nginx does. Never reads a clock itself: `date_clock` feeds it.
class date_cache {
public:
    date_cache() { update(std::time(nullptr)); }

    /// Reformats for `now` if the second changed. Returns whether it did.
    bool update(std::time_t now) noexcept;

    [[nodiscard]] std::string_view value() const noexcept { return {text_.data(), length}; }
    [[nodiscard]] std::time_t second() const noexcept { return second_; }
    [[nodiscard]] std::uint64_t refreshes() const noexcept { return refreshes_; }

    static constexpr std::size_t length = 29; ///< "Sun, 06 Nov 1994 08:49:37 GMT"

private:
    std::array<char, 64> text_{}; // room to spare keeps snprintf provably untruncated
    std::time_t second_ = -1;
    std::uint64_t refreshes_ = 0;
};

} // namespace tarry::http

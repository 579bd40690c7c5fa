#include "byte_ranges.hpp"

#include "ows.hpp"

#include <charconv>

namespace tarry::http {
namespace {

/// A whole run of digits, or false (empty, a sign, anything else, or too large).
bool number(std::string_view s, std::uint64_t& v) noexcept {
    if (s.empty() || s.front() < '0' || s.front() > '9') return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

} // namespace

byte_range_request parse_byte_ranges(std::string_view value, std::uint64_t length) noexcept {
    using kind = byte_range_request::kind;
    byte_range_request result;
    value = trim_ows(value);
    // The unit is case-insensitive (RFC 9110 §14.1).
    constexpr std::string_view unit = "bytes=";
    if (value.size() < unit.size()) return result;
    for (std::size_t i = 0; i < unit.size(); ++i)
        if (static_cast<char>(value[i] | (i < 5 ? 0x20 : 0)) != unit[i]) return result;
    value.remove_prefix(unit.size());

    std::size_t specs = 0;
    std::size_t satisfiable = 0;
    while (true) {
        const auto comma = value.find(',');
        const std::string_view spec = trim_ows(value.substr(0, comma));
        // Empty list elements are allowed (RFC 9110 §5.6.1) but at least one range is needed.
        if (!spec.empty()) {
            if (++specs > max_byte_ranges) return {};
            const auto dash = spec.find('-');
            if (dash == std::string_view::npos) return {};
            const std::string_view a = spec.substr(0, dash);
            const std::string_view b = spec.substr(dash + 1);
            std::uint64_t first = 0;
            std::uint64_t last = 0;
            std::uint64_t count = 0;
            bool ok = false;
            if (a.empty()) { // suffix: the last b bytes
                std::uint64_t n = 0;
                if (!number(b, n)) return {};
                if (n > 0 && length > 0) {
                    count = n < length ? n : length;
                    first = length - count;
                    ok = true;
                }
            } else {
                if (!number(a, first)) return {};
                if (b.empty()) {
                    last = length == 0 ? 0 : length - 1;
                } else {
                    if (!number(b, last) || last < first) return {};
                    if (length > 0 && last >= length) last = length - 1;
                }
                if (first < length) {
                    count = last - first + 1;
                    ok = true;
                }
            }
            if (ok && ++satisfiable == 1) {
                result.first = first;
                result.count = count;
            }
        }
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    if (specs == 0) return {};
    if (satisfiable == 0) {
        result.what = kind::unsatisfiable;
    } else {
        result.what = specs == 1 ? kind::single : kind::multiple;
    }
    return result;
}

} // namespace tarry::http

#pragma once

#include <cstdint>
#include <string_view>

namespace tarry::http {

/// What a Range field (RFC 9110 §14.2) asks of a representation of `length` bytes.
struct byte_range_request {
    enum class kind {
        none,          ///< no Range, a malformed one, or another unit: serve the whole (200)
        single,        ///< one satisfiable range: 206 of [first, first + count)
        multiple,      ///< more than one range, at least one satisfiable
        unsatisfiable, ///< no range overlaps the representation: 416
    };
    kind what = kind::none;
    std::uint64_t first = 0;
    std::uint64_t count = 0;
};

/// More ranges than this in one field is no plausible client: the field is ignored as
/// malformed (and the whole file served), which bounds the parsing work per request.
constexpr std::size_t max_byte_ranges = 16;

/// Parses a Range field value against a representation of `length` bytes: "bytes=a-b",
/// "bytes=a-", "bytes=-n", or a comma-separated list of them.
byte_range_request parse_byte_ranges(std::string_view value, std::uint64_t length) noexcept;

} // namespace tarry::http

#pragma once

// HPACK's static table (RFC 7541, appendix A): 61 fields every endpoint knows, indices 1-61.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tarry::h2 {

struct static_field {
    std::string_view name;
    std::string_view value;
};

inline constexpr std::size_t static_table_size = 61;

/// Index 0 is unused: a field's index is its position.
inline constexpr std::array<static_field, static_table_size + 1> static_table{{
    {"", ""},
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
}};

/// What the encoder can take from the static table for a field.
struct static_match {
    std::uint8_t index = 0;     ///< 0: the name is not in the table
    bool value_matches = false; ///< the field at `index` has this value too
};

/// The entry with this name and value, else the first with this name, else none.
static_match find_static(std::string_view name, std::string_view value) noexcept;

} // namespace tarry::h2

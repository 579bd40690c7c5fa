#include "hpack_decoder.hpp"

#include "huffman.hpp"
#include "static_table.hpp"

#include <algorithm>
#include <cstring>

namespace tarry::h2 {

namespace {

/// An integer with an N-bit prefix (RFC 7541, 5.1), at most 2^32-1; p < end on entry. Five
/// continuation bytes reach 2^35: anything longer or larger is refused, whatever its zeros.
bool read_integer(const std::uint8_t*& p, const std::uint8_t* end, unsigned prefix,
                  std::uint32_t& out) noexcept {
    const unsigned mask = (1U << prefix) - 1;
    std::uint64_t value = *p++ & mask;
    if (value == mask) {
        for (unsigned shift = 0;; shift += 7) {
            if (p == end || shift > 28) return false;
            const std::uint8_t b = *p++;
            value += std::uint64_t{b & 0x7fU} << shift;
            if (value > 0xffffffff) return false;
            if ((b & 0x80) == 0) break;
        }
    }
    out = static_cast<std::uint32_t>(value);
    return true;
}

/// A string literal as it lies in the block (5.2).
struct raw_string {
    const std::uint8_t* data = nullptr;
    std::uint32_t size = 0;
    bool huffman = false;

    [[nodiscard]] std::size_t room() const noexcept {
        return huffman ? huffman::max_decoded_size(size) : 0;
    }
};

bool read_string(const std::uint8_t*& p, const std::uint8_t* end, raw_string& s) noexcept {
    if (p == end) return false;
    s.huffman = (*p & 0x80) != 0;
    if (!read_integer(p, end, 7, s.size) || s.size > static_cast<std::size_t>(end - p))
        return false;
    s.data = p;
    p += s.size;
    return true;
}

/// The string, decoded at `out` if Huffman-coded (advancing it), else a view of the block.
bool materialize(const raw_string& s, char*& out, std::string_view& to) noexcept {
    if (!s.huffman) {
        to = {reinterpret_cast<const char*>(s.data), s.size};
        return true;
    }
    const std::ptrdiff_t n = huffman::decode({s.data, s.size}, out);
    if (n < 0) return false;
    to = {out, static_cast<std::size_t>(n)};
    out += n;
    return true;
}

} // namespace

void hpack_decoder::set_max_table_size(std::uint32_t limit) {
    limit_ = std::min(limit, dynamic_table::largest_max_size);
    if (limit_ < table_.max_size()) {
        table_.set_max_size(limit_);
        update_required_ = true;
    }
}

decode_status hpack_decoder::decode(std::span<const std::uint8_t> block, std::string& scratch,
                                    const decoder_limits& limits, field_callback f, void* context) {
    const std::uint8_t* p = block.data();
    const std::uint8_t* const end = p + block.size();
    auto status = decode_status::ok;
    std::size_t list_size = 0;
    std::size_t fields = 0;
    bool at_start = true;

    // Index 0 is no field; 1-61 the static table; 62 on the dynamic table, newest first (2.3.3).
    auto lookup = [&](std::uint32_t index, std::string_view& name,
                      std::string_view* value) -> bool {
        if (index == 0) return false;
        if (index <= static_table_size) {
            name = static_table[index].name;
            if (value) *value = static_table[index].value;
            return true;
        }
        if (index - static_table_size - 1 >= table_.count()) return false;
        const auto field = table_.at(index - static_table_size - 1);
        name = field.name;
        if (value) *value = field.value;
        return true;
    };

    while (p < end) {
        const std::uint8_t first = *p;
        if ((first & 0xe0) == 0x20) { // a dynamic table size update (6.3)
            std::uint32_t size = 0;
            if (!at_start || !read_integer(p, end, 5, size) || size > limit_)
                return decode_status::compression_error;
            table_.set_max_size(size);
            update_required_ = false;
            continue;
        }
        if (update_required_) return decode_status::compression_error;
        at_start = false;

        std::string_view name;
        std::string_view value;
        bool index_it = false;
        std::uint32_t index = 0;
        if ((first & 0x80) != 0) { // an indexed field (6.1)
            if (!read_integer(p, end, 7, index) || !lookup(index, name, &value))
                return decode_status::compression_error;
        } else { // a literal (6.2): with incremental indexing, without, or never indexed
            index_it = (first & 0x40) != 0;
            raw_string raw_name;
            raw_string raw_value;
            if (!read_integer(p, end, index_it ? 6 : 4, index))
                return decode_status::compression_error;
            if (index != 0 ? !lookup(index, name, nullptr) : !read_string(p, end, raw_name))
                return decode_status::compression_error;
            if (!read_string(p, end, raw_value)) return decode_status::compression_error;
            // A name from the dynamic table is copied before the insertion that may evict it.
            const bool copy_name = index_it && index > static_table_size;
            const std::size_t room =
                raw_name.room() + raw_value.room() + (copy_name ? name.size() : 0);
            if (scratch.size() < room) scratch.resize(room);
            char* out = scratch.data();
            if (copy_name && !name.empty()) {
                std::memcpy(out, name.data(), name.size());
                name = {out, name.size()};
                out += name.size();
            }
            if ((index == 0 && !materialize(raw_name, out, name)) ||
                !materialize(raw_value, out, value))
                return decode_status::compression_error;
        }

        if (status == decode_status::ok) {
            list_size += name.size() + value.size() + dynamic_table::entry_overhead;
            if (++fields > limits.max_fields || list_size > limits.max_list_size)
                status = decode_status::too_large;
            else
                f(context, name, value);
        }
        if (index_it) table_.insert(name, value);
    }
    if (update_required_) return decode_status::compression_error;
    return status;
}

} // namespace tarry::h2

#include "hpack_encoder.hpp"

#include "huffman.hpp"
#include "static_table.hpp"

namespace tarry::h2 {

namespace {
constexpr std::uint8_t indexed = 0x80;
constexpr std::uint8_t without_indexing = 0x00; // 4-bit prefix
constexpr std::uint8_t never_indexed_bits = 0x10;
} // namespace

void encode_integer(std::string& out, std::uint32_t value, unsigned prefix,
                    std::uint8_t first_bits) {
    const std::uint32_t mask = (1U << prefix) - 1;
    if (value < mask) {
        out.push_back(static_cast<char>(first_bits | value));
        return;
    }
    out.push_back(static_cast<char>(first_bits | mask));
    value -= mask;
    while (value >= 0x80) {
        out.push_back(static_cast<char>((value & 0x7f) | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

void encode_string(std::string& out, std::string_view s) {
    const std::size_t coded = huffman::encoded_size(s);
    if (coded >= s.size()) {
        encode_integer(out, static_cast<std::uint32_t>(s.size()), 7, 0);
        out.append(s);
        return;
    }
    encode_integer(out, static_cast<std::uint32_t>(coded), 7, 0x80);
    const std::size_t at = out.size();
    out.resize(at + coded);
    huffman::encode(s, out.data() + at);
}

void encode_field(std::string& block, std::string_view name, std::string_view value,
                  bool never_indexed) {
    const std::uint8_t literal = never_indexed ? never_indexed_bits : without_indexing;
    const static_match match = find_static(name, value);
    if (match.value_matches && !never_indexed) {
        encode_integer(block, match.index, 7, indexed);
        return;
    }
    if (match.index != 0) {
        encode_integer(block, match.index, 4, literal);
    } else {
        block.push_back(static_cast<char>(literal));
        encode_string(block, name);
    }
    encode_string(block, value);
}

void encode_status(std::string& block, unsigned status) {
    // 8-14: 200 204 206 304 400 404 500.
    constexpr unsigned indexed_statuses[] = {200, 204, 206, 304, 400, 404, 500};
    for (std::uint8_t i = 0; i < 7; ++i) {
        if (indexed_statuses[i] == status) {
            block.push_back(static_cast<char>(indexed | (8 + i)));
            return;
        }
    }
    const char digits[3] = {static_cast<char>('0' + status / 100 % 10),
                            static_cast<char>('0' + status / 10 % 10),
                            static_cast<char>('0' + status % 10)};
    encode_integer(block, 8, 4, without_indexing);
    encode_string(block, {digits, 3});
}

} // namespace tarry::h2

#include "huffman.hpp"

#include <array>

namespace tarry::h2::huffman {

namespace {

constexpr unsigned eos = 256;
constexpr unsigned symbols = 257;

/// The code lengths of RFC 7541 appendix B, symbols 0-255 then EOS.
constexpr std::array<std::uint8_t, symbols> code_lengths{
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, //
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, //
    6,  10, 10, 12, 13, 6,  8,  11, 10, 10, 8,  11, 8,  6,  6,  6,  //
    5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8,  15, 6,  12, 10, //
    13, 6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  //
    7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8,  13, 19, 13, 14, 6,  //
    15, 5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,  //
    6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7,  15, 11, 14, 13, 28, //
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, //
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, //
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, //
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, //
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, //
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, //
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, //
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, //
    30};

constexpr unsigned longest_code = 30;

/// A complete prefix code: the lengths fill the code space exactly (Kraft's equality).
constexpr bool complete() {
    std::uint64_t sum = 0;
    for (const auto length : code_lengths)
        sum += std::uint64_t{1} << (longest_code - length);
    return sum == std::uint64_t{1} << longest_code;
}
static_assert(complete(), "the code lengths must be appendix B's");

constexpr std::array<code, symbols> make_codes() {
    std::array<code, symbols> codes{};
    std::uint32_t next = 0;
    for (unsigned length = 1; length <= longest_code; ++length) {
        for (unsigned s = 0; s < symbols; ++s)
            if (code_lengths[s] == length) codes[s] = {next++, static_cast<std::uint8_t>(length)};
        next <<= 1;
    }
    return codes;
}

constexpr std::array<code, symbols> codes = make_codes();
static_assert(codes[eos].bits == 0x3fffffff && codes[eos].length == 30);
static_assert(codes['0'].bits == 0x0 && codes['a'].bits == 0x3 && codes[' '].bits == 0x14);

// The decoder's table. State s is an inner node of the code tree: the bits read since the last
// symbol. Entry [s][n] says where 4 more bits n lead, and the symbol completed on the way (at
// most one: no code is shorter than 5 bits).
enum : std::uint8_t {
    emits = 1,   ///< `symbol` was completed
    accepts = 2, ///< the input may end here: the bits since the last symbol are EOS's first
                 ///< bits (all ones), fewer than 8
    fails = 4,   ///< EOS was completed: never valid inside a string
};

struct step {
    std::uint8_t state;
    std::uint8_t flags;
    std::uint8_t symbol;
};

struct tree {
    static constexpr unsigned nodes = 2 * symbols - 1;
    std::array<std::array<std::int16_t, 2>, nodes> child{}; ///< 0: none (the root is no child)
    std::array<std::int16_t, nodes> symbol{};               ///< -1: an inner node
    std::array<std::int16_t, nodes> state{};                ///< an inner node's number
    std::array<bool, nodes> accepting{};
};

constexpr tree make_tree() {
    tree t;
    for (auto& s : t.symbol)
        s = -1;
    unsigned used = 1;
    for (unsigned s = 0; s < symbols; ++s) {
        unsigned at = 0;
        for (unsigned bit = codes[s].length; bit-- > 0;) {
            const unsigned b = (codes[s].bits >> bit) & 1;
            if (t.child[at][b] == 0) t.child[at][b] = static_cast<std::int16_t>(used++);
            at = static_cast<unsigned>(t.child[at][b]);
        }
        t.symbol[at] = static_cast<std::int16_t>(s);
    }
    std::int16_t inner = 0;
    for (unsigned n = 0; n < tree::nodes; ++n)
        if (t.symbol[n] < 0) t.state[n] = inner++;
    // EOS's first bits are ones: the nodes on the all-ones path, up to 7 deep.
    unsigned at = 0;
    for (unsigned depth = 0; depth < 8; ++depth) {
        t.accepting[at] = true;
        at = static_cast<unsigned>(t.child[at][1]);
    }
    return t;
}

using decode_table = std::array<std::array<step, 16>, 256>;

constexpr decode_table make_decode_table() {
    const tree t = make_tree();
    decode_table table{};
    for (unsigned n = 0; n < tree::nodes; ++n) {
        if (t.symbol[n] >= 0) continue;
        for (unsigned nibble = 0; nibble < 16; ++nibble) {
            step st{};
            unsigned at = n;
            for (unsigned bit = 4; bit-- > 0;) {
                at = static_cast<unsigned>(t.child[at][(nibble >> bit) & 1]);
                if (t.symbol[at] < 0) continue;
                if (t.symbol[at] == eos) st.flags |= fails;
                st.flags |= emits;
                st.symbol = static_cast<std::uint8_t>(t.symbol[at]);
                at = 0;
            }
            st.state = static_cast<std::uint8_t>(t.state[at]);
            if (t.accepting[at]) st.flags |= accepts;
            table[static_cast<unsigned>(t.state[n])][nibble] = st;
        }
    }
    return table;
}

constexpr decode_table table = make_decode_table();

} // namespace

code code_of(unsigned symbol) noexcept {
    return codes[symbol];
}

std::size_t encoded_size(std::string_view s) noexcept {
    std::size_t bits = 0;
    for (const char c : s)
        bits += code_lengths[static_cast<unsigned char>(c)];
    return (bits + 7) / 8;
}

void encode(std::string_view s, char* out) noexcept {
    std::uint64_t pending = 0; // the low `count` bits are still to be written
    unsigned count = 0;
    for (const char c : s) {
        const code k = codes[static_cast<unsigned char>(c)];
        pending = (pending << k.length) | k.bits;
        count += k.length;
        while (count >= 8) {
            count -= 8;
            *out++ = static_cast<char>(pending >> count);
        }
    }
    if (count > 0) // padded with EOS's leading ones
        *out = static_cast<char>((pending << (8 - count)) | (0xffU >> count));
}

std::ptrdiff_t decode(std::span<const std::uint8_t> in, char* out) noexcept {
    char* const start = out;
    std::uint8_t state = 0;
    std::uint8_t flags = accepts;
    bool failed = false;
    auto take = [&](unsigned nibble) {
        const step& st = table[state][nibble];
        failed |= (st.flags & fails) != 0;
        if ((st.flags & emits) != 0) *out++ = static_cast<char>(st.symbol);
        state = st.state;
        flags = st.flags;
    };
    for (const std::uint8_t byte : in) {
        take(byte >> 4U);
        take(byte & 0xfU);
        if (failed) return -1;
    }
    if ((flags & accepts) == 0) return -1;
    return out - start;
}

} // namespace tarry::h2::huffman

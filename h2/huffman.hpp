#pragma once

// HPACK's Huffman code (RFC 7541, 5.2 and appendix B).
//
// The code is canonical: every symbol's code follows from the lengths of all codes alone (codes
// of one length are consecutive, in symbol order). huffman.cpp holds only the 257 lengths of
// appendix B and derives, at compile time, the codes for the encoder and the decoder's state
// table: 256 states (the code tree's inner nodes) by 16 nibbles, nghttp2's and h2o's layout,
// so decoding takes a table look-up per 4 bits. The tests check the derived codes against
// appendix B's and appendix C's examples.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tarry::h2::huffman {

/// The bytes `s` takes Huffman-encoded, padding included.
std::size_t encoded_size(std::string_view s) noexcept;

/// Writes the encoding of `s` at `out`, exactly encoded_size(s) bytes.
void encode(std::string_view s, char* out) noexcept;

/// Room decoding `encoded_size` bytes may need: the shortest code is 5 bits.
constexpr std::size_t max_decoded_size(std::size_t encoded_size) noexcept {
    return encoded_size * 8 / 5;
}

/// Decodes `in` at `out` (max_decoded_size(in.size()) bytes of room): the decoded size, or
/// -1 if `in` is not a valid encoding (EOS inside it, padding longer than 7 bits or not EOS's
/// leading ones).
std::ptrdiff_t decode(std::span<const std::uint8_t> in, char* out) noexcept;

/// One symbol's code (for the tests): its `length` low bits.
struct code {
    std::uint32_t bits;
    std::uint8_t length;
};
code code_of(unsigned symbol) noexcept; ///< 0-255, or 256 for EOS

} // namespace tarry::h2::huffman

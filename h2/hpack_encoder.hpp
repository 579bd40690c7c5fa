#pragma once

// HPACK encoding (RFC 7541) without a dynamic table, as nginx and HAProxy encode: a field the
// static table holds whole is one index (":status: 200" is one byte), a field whose name it
// holds is that index and the value as a literal, any other field a literal name and value;
// none is added to a table. So the encoder keeps no state per connection and never sends a
// table size update; the peer's decoder table stays empty, which costs the peer nothing while
// the connection is idle. Strings are Huffman-coded when that makes them shorter.
//
// Names must be lower case (RFC 9113, 8.2.1): the caller's, as it writes them.

#include <cstdint>
#include <string>
#include <string_view>

namespace tarry::h2 {

/// Appends one field's representation to `block`. `never_indexed`: a field an intermediary
/// must not put in a table either (a credential, 6.2.3).
void encode_field(std::string& block, std::string_view name, std::string_view value,
                  bool never_indexed = false);

/// Appends ":status" for a three-digit status.
void encode_status(std::string& block, unsigned status);

/// The primitives (5.1, 5.2), for the tests and for writers of their own.
void encode_integer(std::string& out, std::uint32_t value, unsigned prefix,
                    std::uint8_t first_bits);
void encode_string(std::string& out, std::string_view s);

} // namespace tarry::h2

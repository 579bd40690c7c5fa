#pragma once

#include <string_view>

namespace tarry::http {

/// The precompressed codings this server can send, by preference.
enum class coding { identity, br, gzip };

struct accepted_codings {
    unsigned br = 0;   ///< qvalue × 1000; 0: not acceptable
    unsigned gzip = 0; ///< likewise (x-gzip counts as gzip)
};

/// Reads an Accept-Encoding value (RFC 9110 §12.5.3): codings with optional q-values, `*` for
/// any coding not listed. An absent or empty field accepts neither.
accepted_codings parse_accept_encoding(std::string_view value) noexcept;

/// The coding to send given what the client accepts and which siblings exist: the higher
/// qvalue, br on a tie; identity when neither is acceptable or present.
coding choose_coding(const accepted_codings& a, bool have_br, bool have_gzip) noexcept;

} // namespace tarry::http

#pragma once

#include <cstdint>
#include <string_view>

namespace tarry::tls {

/// The secret of a key log line as OpenSSL's key log callback hands it over ("LABEL
/// CLIENT_RANDOM SECRET", hex) into `out` (48 bytes of room); its length, 0 if malformed.
std::uint8_t key_log_secret(std::string_view line, std::uint8_t* out) noexcept;

} // namespace tarry::tls

#pragma once

/// @file
/// @brief What an intermediary removes or reads of the connection-specific fields of a message.

#include <string_view>

namespace tarry::http {

/// Whether `name` is a hop-by-hop field (RFC 9110 7.6.1: Connection, Keep-Alive, TE, Trailer,
/// Transfer-Encoding, Upgrade, Proxy-Connection) or one an intermediary frames itself
/// (Content-Length, Expect). Case-insensitive.
bool hop_by_hop(std::string_view name) noexcept;
/// Whether `name` is listed in a Connection field value (comma-separated tokens): such a field
/// is hop-by-hop too.
bool listed_in(std::string_view connection, std::string_view name) noexcept;
/// The timeout=N of a Keep-Alive field value, or -1.
long keep_alive_timeout(std::string_view value) noexcept;

} // namespace tarry::http

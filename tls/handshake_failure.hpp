#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

typedef struct ssl_st SSL;

namespace tarry::tls {

/// Why a handshake did not complete: a bounded label set for metrics (a failed handshake is
/// counted, never logged per connection).
enum class handshake_failure : std::uint8_t {
    timeout,          ///< stalled or trickled past handshake_timeout
    client_closed,    ///< the client closed or reset mid-handshake
    plain_http,       ///< an HTTP request on the TLS port (answered 400)
    not_tls,          ///< the first bytes are not a TLS handshake record
    protocol_version, ///< no TLS version in common (SSLv3, TLS 1.0, 1.1)
    no_shared_cipher, ///< no cipher suite or group in common
    no_alpn,          ///< ALPN offered, but not http/1.1
    peer_alert,       ///< the client refused us (an unknown CA, a bad certificate ...)
    malformed,        ///< a message that does not parse, or comes out of order
    other,
    count_
};

inline constexpr std::array<std::string_view, static_cast<std::size_t>(handshake_failure::count_)>
    handshake_failure_names{
        "timeout",          "client_closed", "plain_http", "not_tls",   "protocol_version",
        "no_shared_cipher", "no_alpn",       "peer_alert", "malformed", "other"};
static_assert(!handshake_failure_names.back().empty());

/// The failure OpenSSL's error queue describes (after SSL_ERROR_SSL).
handshake_failure classify_failure() noexcept;

} // namespace tarry::tls

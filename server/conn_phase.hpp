#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tarry::server {

/// What a client connection is doing, as connection.hpp describes each phase; every phase is a
/// kind of timeout (client_kinds) and a gauge in the metrics.
enum class conn_phase : std::uint8_t {
    silent, ///< accepted, no byte of a request received yet
    header,
    body,
    send,
    keep_alive,
    linger,
    waiting,
    discard,   ///< the request was answered; the rest of its body is read and thrown away
    handshake, ///< a TLS connection, accepted, its handshake not yet done
    count_
};

/// The name of each phase, for metrics; tied to the enum's size.
inline constexpr std::array<std::string_view, static_cast<std::size_t>(conn_phase::count_)>
    conn_phase_names{"silent", "header",  "body",    "send",     "keep_alive",
                     "linger", "waiting", "discard", "handshake"};
// A std::array with too few initialisers compiles: an empty last name means one is missing.
static_assert(!conn_phase_names.back().empty());

} // namespace tarry::server

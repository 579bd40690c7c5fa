#pragma once

#include "worker_metrics.hpp"

#include <tarry/timeouts/timeout_kind.hpp>

#include <array>

namespace tarry::server {

class connection;
struct h2_deadline;

/// The timeout kinds of client connections: a worker's registry keeps one list per kind and
/// duration, so a walk for pressure or a reload sees client connections of one phase only,
/// never an upstream connection or another phase that happens to share a duration.
namespace client_kinds {

using timeouts::owner_tag;
using timeouts::timeout_kind;

inline const timeout_kind silent{"silent", owner_tag<connection>}; ///< accepted, nothing received
inline const timeout_kind header{"header", owner_tag<connection>}; ///< part of a request header
inline const timeout_kind body{"body", owner_tag<connection>};
inline const timeout_kind send{"send", owner_tag<connection>};
inline const timeout_kind keep_alive{"keep_alive", owner_tag<connection>};
/// Keep-alive, but asked by pressure to close after its next response.
inline const timeout_kind retired{"retired", owner_tag<connection>};
inline const timeout_kind linger{"linger", owner_tag<connection>};
inline const timeout_kind discard{"discard", owner_tag<connection>};
inline const timeout_kind handshake{"handshake", owner_tag<connection>}; ///< TLS, not yet done

/// HTTP/2's deadlines within a connection (h2_session, h2::watch), one entry each while it
/// runs: a stream's request body gap (body_timeout), a stream's DATA the peer's windows hold
/// (send_timeout), an incomplete frame or field block (header_timeout, a total), SETTINGS or
/// the graceful stop's PING unacknowledged (http2_ack_timeout).
inline const timeout_kind h2_body{"h2_body", owner_tag<h2_deadline>};
inline const timeout_kind h2_stall{"h2_stall", owner_tag<h2_deadline>};
inline const timeout_kind h2_block{"h2_block", owner_tag<h2_deadline>};
inline const timeout_kind h2_ack{"h2_ack", owner_tag<h2_deadline>};
/// A connection with streams open that read nothing for http2_ping_interval: a PING (its
/// answer's wait is an h2_ack).
inline const timeout_kind h2_ping{"h2_ping", owner_tag<h2_deadline>};

/// The kind of each phase's list, by conn_phase (waiting is in none: the handler's own
/// timeouts bound it; it maps to linger only to keep the table whole).
inline const std::array<const timeout_kind*, static_cast<std::size_t>(conn_phase::count_)> by_phase{
    &silent, &header, &body, &send, &keep_alive, &linger, &linger, &discard, &handshake};

[[nodiscard]] inline const timeout_kind& of(conn_phase p) noexcept {
    return *by_phase[static_cast<std::size_t>(p)];
}

} // namespace client_kinds
} // namespace tarry::server

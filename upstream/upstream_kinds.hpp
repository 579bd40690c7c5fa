#pragma once

#include <tarry/timeouts/timeout_kind.hpp>

namespace tarry::upstream {

class upstream_connection;

/// The timeout kinds of upstream connections, one per thing an upstream connection waits for:
/// lists of their own in the worker's registry, never shared with client connections however
/// the durations are configured.
namespace upstream_kinds {

using timeouts::owner_tag;
using timeouts::timeout_kind;

inline const timeout_kind connect{"upstream_connect", owner_tag<upstream_connection>};
inline const timeout_kind send{"upstream_send", owner_tag<upstream_connection>};
inline const timeout_kind response{"upstream_response", owner_tag<upstream_connection>};
inline const timeout_kind read{"upstream_read", owner_tag<upstream_connection>};
/// An upgrade tunnel: no byte either way for tunnel_idle_timeout closes both sides.
inline const timeout_kind tunnel{"tunnel", owner_tag<upstream_connection>};
/// Idle in a pool: the oldest is the first to close when descriptors run out.
inline const timeout_kind pooled{"upstream_pooled", owner_tag<upstream_connection>};

} // namespace upstream_kinds
} // namespace tarry::upstream

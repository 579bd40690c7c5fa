#pragma once

// The upstreams' DNS names as the server resolves them: all at once at start, on reload and
// for --check-config (blocking the main thread, which has nothing else to do meanwhile; never
// a worker's), then by their TTLs through resolve::name_watch on the main thread's loop. The
// workers read the answers from an upstream::name_table; nothing resolves on their loops.

#include "config.hpp"

#include <tarry/resolve/name_watch.hpp>
#include <tarry/upstream/name_table.hpp>

#include <map>
#include <string>
#include <vector>

namespace tarry::server {

/// c-ares's options for `cfg`: its resolver servers (none: /etc/resolv.conf's).
resolve::dns_resolver::options resolver_options(const config& cfg);
/// How long an answer is used: its TTL within [resolve_interval_min, resolve_interval_max].
resolve::refresh_bounds refresh_bounds_of(const config& cfg);

struct resolved_names {
    /// Every DNS name of the configuration's upstreams and its answer; a name kept (below) has
    /// its last good addresses and the error of the lookup that failed.
    std::map<std::string, resolve::answer> answers;
    std::vector<std::string> kept; ///< names that failed now, whose last good answer stays
};

/// Looks up every DNS name of `cfg`'s upstreams once. A name that fails keeps its answer in
/// `last_good` if it has one there (a reload's running table); otherwise it throws config_error
/// naming the upstream and the name, in one line.
resolved_names resolve_upstream_names(const config& cfg,
                                      const upstream::name_table* last_good = nullptr);

} // namespace tarry::server

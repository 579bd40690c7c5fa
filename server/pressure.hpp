#pragma once

#include "connection.hpp"
#include "worker_metrics.hpp"
#include "worker_settings.hpp"

#include <tarry/timeouts/timeout_registry.hpp>

namespace tarry::server {

/// Makes room for a newcomer when a worker is at its connection limit or out of descriptors,
/// taking from the heads of the timeout kinds that hold only what can go without losing a
/// request: idle pooled upstream connections first (for a descriptor), then a client
/// connection from the keep-alive, retired, silent, lingering and discarding kinds: among the
/// few idle longest in each, the one whose client holds the most connections, the oldest among
/// equals. So one client holding thousands of idle connections gives them up before many small
/// clients lose theirs. A connection mid-request is in none of those kinds, so it is never
/// taken. O(kinds): a bounded look at each head, no phase filter. One thread: the worker's.
class pressure {
public:
    pressure(timeouts::timeout_registry& registry, const worker_settings& settings,
             live_connections& live, client_table& clients, worker_metrics& metrics) noexcept
        : registry_(registry), settings_(settings), live_(live), clients_(clients),
          metrics_(metrics) {}
    pressure(const pressure&) = delete;
    pressure& operator=(const pressure&) = delete;

    /// At the connection limit: closes the oldest quiet idle connection (true), or, with none
    /// quiet for long enough, asks the recently used connection idle longest to close after its
    /// next response and returns false (the newcomer waits).
    bool relieve() noexcept;
    /// Out of descriptors: closes the idle pooled upstream connection idle longest, or else
    /// does what relieve() does.
    bool free_descriptor() noexcept;

private:
    timeouts::timeout_registry& registry_;
    const worker_settings& settings_; ///< replaced in place by a reload
    live_connections& live_;
    client_table& clients_;
    worker_metrics& metrics_;
};

} // namespace tarry::server

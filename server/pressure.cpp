#include "pressure.hpp"

#include "client_kinds.hpp"

#include <tarry/timeouts/idle_list.hpp>
#include <tarry/upstream/upstream_connection.hpp>

namespace tarry::server {

bool pressure::free_descriptor() noexcept {
    // An idle pooled upstream connection first, the one idle longest: no client waits on it.
    if (timeouts::idle_entry* e = registry_.oldest(upstream::upstream_kinds::pooled))
        if (upstream::upstream_connection::from(*e).shed()) return true;
    return relieve();
}

bool pressure::relieve() noexcept {
    if (!settings_.timeouts) {
        // No idle order is kept: reclaim any idle connection.
        for (connection& c : live_) {
            if (c.idle()) {
                c.close(close_reason::pressure);
                return true;
            }
        }
        return false;
    }
    // The oldest idle connection, taken from the head of each reclaimable kind: keep-alive (idle
    // longest since its last response, retired or not), silent (accepted, nothing received),
    // and answered connections that only discard what they are still sent (closing one costs
    // the courtesy, not a request, where keeping it would let trickled bodies hold their
    // descriptors for lingering_time). The other kinds are mid-request and never reclaimed.
    //
    // None is taken the moment it went quiet: a keep-alive connection used within
    // keep_alive_min_timeout is likely in a balancer's pool with a request on its way, and a
    // connection accepted within a tenth of that likely has its first request on the wire (a
    // balancer sends it right behind the handshake, a network delays it). Better to make the
    // newcomer wait than to close one under a request. The silent grace is shorter: silent
    // attackers reconnect at once, and each newcomer must find one old enough to take. A peek
    // spares one whose request is in its socket, unread in this same event batch.
    //
    // Among those, the client holding the most connections gives one up first: a look at the
    // first few of each kind's list (all quiet enough, oldest first), each client's count read
    // from the worker's table. One client's thousands dominate every head, so its connections
    // are found within the first few; with all clients even, this is the oldest, as before.
    const auto now = timeouts::clock::now();
    const auto quiet = now - settings_.min_quiet;
    constexpr int look = 32; // per kind: bounds what a newcomer at the limit costs
    connection* best = nullptr;
    std::uint32_t best_held = 0;
    std::uint32_t oldest_held = 0; // the holding of the oldest candidate, for the metric
    connection* oldest = nullptr;
    const auto consider = [&](const timeouts::timeout_kind& kind, timeouts::clock::time_point since,
                              bool spare_if_input) {
        timeouts::idle_entry* e = registry_.oldest(kind);
        for (int n = 0; e != nullptr && n < look && e->idle_start() <= since;
             ++n, e = timeouts::idle_list::next(*e)) {
            connection& c = connection::from(*e);
            const auto k = c.counted() ? c.client() : std::nullopt;
            const std::uint32_t held = k ? clients_.held(*k) : 1;
            const bool better = best == nullptr || held > best_held ||
                                (held == best_held && c.last_active() < best->last_active());
            if (!better) continue;
            // Checked last: a peek is a system call.
            if (c.sending() || (spare_if_input && c.input_waiting())) continue;
            if (oldest == nullptr || c.last_active() < oldest->last_active()) {
                oldest = &c;
                oldest_held = held;
            }
            best = &c;
            best_held = held;
        }
    };
    consider(client_kinds::keep_alive, quiet, true);
    consider(client_kinds::retired, quiet, true);
    consider(client_kinds::silent, now - settings_.min_quiet / 10, true);
    consider(client_kinds::handshake, now - settings_.min_quiet / 10, true); // TLS, silent too
    consider(client_kinds::linger, quiet, false);
    consider(client_kinds::discard, quiet, false);
    if (best != nullptr) {
        if (best_held > oldest_held) metrics_.pressure_by_client.add();
        best->close(close_reason::pressure);
        return true;
    }
    // Nothing quiet for long enough: the newcomer waits, and the connection idle longest
    // among the recently used is asked to close after its next response (it moves to the
    // retired kind, so the next newcomer asks the next one). A balancer's pool gives it up
    // then, with no request lost, and its descriptor comes back for the newcomer (the
    // listeners resume at the close).
    if (timeouts::idle_entry* e = registry_.oldest(client_kinds::keep_alive)) {
        connection::from(*e).retire_idle();
        metrics_.pressure_retires.add();
    }
    return false;
}

} // namespace tarry::server

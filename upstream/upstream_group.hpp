#pragma once

#include "name_table.hpp"
#include "upstream_pool.hpp"
#include "upstream_settings.hpp"

#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <vector>

namespace tarry::upstream {

/// One upstream (an [upstream.NAME] table) in one worker: a pool per server, how a request picks
/// a server, and which servers are failing (passive health). Every route that names the
/// upstream shares it, so they share its pools and its view of which servers are down.
///
/// Passive health, as nginx's max_fails=1 with these differences: a group of one server never
/// marks it down (a restarted application is served by the first request that follows, not
/// fail_timeout later: there is nowhere else to send it anyway), and when every server of a
/// group is down a request still goes to the one whose mark is oldest rather than getting 503
/// at once; a server is retried by the first request after its fail_timeout. One thread: the
/// worker's.
///
/// A server given by a DNS name is a server per address the name resolves to (`names`, which
/// someone else keeps resolved), each with its pool, all counted under the configured name. The
/// group looks at the table when its generation moved, at the next pick: an address that
/// appeared gets a pool, one that left has its pool drained (no new request; its idle
/// connections closed; the busy ones, and tunnels, finish what they carry and then close), and
/// the others keep their pools, their connections and their down marks.
class upstream_group {
public:
    /// Throws std::invalid_argument if `settings` names no server, or names a server by DNS
    /// name without a `names` table. `counters`: where each server's pool counts (null: each
    /// pool its own).
    upstream_group(boost::asio::io_context& io, net::poller& poll,
                   timeouts::timeout_registry& registry, upstream_settings settings,
                   upstream_counters* counters = nullptr,
                   std::shared_ptr<const name_table> names = nullptr);
    upstream_group(const upstream_group&) = delete;
    upstream_group& operator=(const upstream_group&) = delete;

    [[nodiscard]] const upstream_settings& settings() const noexcept { return settings_; }
    [[nodiscard]] const std::vector<std::shared_ptr<upstream_pool>>& pools() const noexcept {
        return pools_;
    }

    /// The server for a request: round robin or least connections among the servers not
    /// marked down and not `except`; if every one is down, the one marked longest ago. Null
    /// only when `except` is the only server, or no name has an address yet.
    [[nodiscard]] std::shared_ptr<upstream_pool> pick(const upstream_pool* except = nullptr);
    /// `pool` refused a connection or timed out connecting: it is skipped for fail_timeout,
    /// unless it is the group's only server.
    void failed(upstream_pool& pool) noexcept;
    /// Closes the idle connections of every pool, and from now on every connection given back.
    void stop() noexcept;

private:
    /// Pools for the servers and addresses as they are now: kept, added, and drained.
    void refresh();

    boost::asio::io_context& io_;
    net::poller& poll_;
    timeouts::timeout_registry& registry_;
    upstream_counters* counters_;
    std::shared_ptr<const name_table> names_;
    std::uint64_t seen_ = 0; ///< the names' generation the pools reflect
    upstream_settings settings_;
    std::vector<std::shared_ptr<upstream_pool>> pools_;
    std::size_t next_ = 0; ///< where round robin (and ties of least connections) start
    bool stopped_ = false;
};

} // namespace tarry::upstream

#pragma once

// Names kept resolved while a program runs: each looked up again when its answer's TTL runs
// out, within a floor and a ceiling; a changed answer published; a failed or empty one counted,
// logged once, and otherwise ignored, so the last good answer stays in use until the name
// resolves again.

#include "dns_resolver.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tarry::resolve {

using duration = std::chrono::steady_clock::duration;

/// How long an answer is used before the name is looked up again: its TTL within [floor,
/// ceiling]. The floor keeps a TTL of 0 (or 1) from turning into a query per request's worth of
/// time; the ceiling bounds how long a changed address goes unnoticed when the TTL is long.
struct refresh_bounds {
    duration floor = std::chrono::seconds(5);
    duration ceiling = std::chrono::seconds(60);

    [[nodiscard]] duration after(std::chrono::seconds ttl) const noexcept {
        const duration t = ttl;
        return t < floor ? floor : (t > ceiling ? ceiling : t);
    }
};

/// Every name looked up at once, blocking the calling thread on a loop of its own until each
/// has an answer or has failed (c-ares's timeouts bound it). For a start, a reload and
/// --check-config, where there is nothing else to do meanwhile. Throws as dns_resolver does.
std::map<std::string, answer> resolve_now(const dns_resolver::options& opts,
                                          const std::vector<std::string>& hosts);

/// One name's state, for /metrics.
struct name_state {
    std::string host;
    std::size_t addresses = 0; ///< in the answer in use
    std::int64_t lookups = 0;  ///< lookups made while running (the start's and reloads' aside)
    std::int64_t failures = 0; ///< of which failed or found no address
    std::int64_t changes = 0;  ///< answers that differed from the one in use
    bool stale = false;        ///< the last lookup failed: the last good answer is in use
};

/// Keeps a set of names resolved, on one io_context's thread (a main thread: lookups never
/// run on a loop that serves requests). `publish` runs on that thread with a name's new
/// addresses whenever they change.
class name_watch {
public:
    using publish_fn = std::function<void(const std::string& host,
                                          const std::vector<boost::asio::ip::address>& addresses)>;

    name_watch(boost::asio::io_context& io, dns_resolver::options opts, refresh_bounds bounds,
               publish_fn publish);
    name_watch(const name_watch&) = delete;
    name_watch& operator=(const name_watch&) = delete;
    ~name_watch();

    /// The names to keep resolved, each with the answer in use now (resolved just now, or the
    /// last good one): each is looked up again after its TTL. Names not listed are forgotten;
    /// a name listed again keeps its counters. `opts` and `bounds` replace the running ones (a
    /// reload's).
    void watch(const std::map<std::string, answer>& names, dns_resolver::options opts,
               refresh_bounds bounds);
    /// No more lookups; the io_context is left with nothing of this to wait for.
    void stop() noexcept;

    /// A copy of each name's state, from any thread.
    [[nodiscard]] std::vector<name_state> states() const;

private:
    struct entry {
        answer in_use;
        std::chrono::steady_clock::time_point due;
        bool in_flight = false;
        name_state state;
    };
    void arm();
    void run_due();
    void answered(const std::string& host, answer a);

    boost::asio::io_context& io_;
    std::unique_ptr<dns_resolver> resolver_;
    dns_resolver::options opts_;
    refresh_bounds bounds_;
    publish_fn publish_;
    boost::asio::steady_timer timer_;
    mutable std::mutex mu_; ///< guards entries_ against states() from another thread
    std::map<std::string, entry> entries_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    bool stopped_ = false;
};

} // namespace tarry::resolve

#pragma once

// Failed proxied requests in the error log, as nginx words them (`connect() failed (111:
// Connection refused) while connecting to upstream, client: ..., request: "...", upstream:
// "http://..."`), so an operator reading the log during an incident sees which application
// failed, how, and for whom. A dead application fails every request: at most one line per kind
// of failure per upstream server per second is written, across all workers, and the next line
// says how many were left out. At `log_level = "debug"` every failure has a line of its own.

#include "upstream_metrics.hpp"

#include <tarry/http/request_parser.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace tarry::upstream {

/// What failed, for the log: `upstream_error` plus a request with no server to go to.
enum class failure_kind : std::uint8_t {
    connect,
    reset,
    timeout,
    malformed,
    tls,
    no_server,
    count_
};
static_assert(static_cast<int>(failure_kind::no_server) ==
              static_cast<int>(upstream_error::count_)); // failure_of casts

inline constexpr failure_kind failure_of(upstream_error e) noexcept {
    return static_cast<failure_kind>(e);
}

/// At most one admitted event per key per second. Pure (the caller gives the second), so it is
/// tested without a clock; locked, since every worker's failures share it (failures are the
/// rare path: a request that ends well never comes here).
class error_rate_limit {
public:
    /// Whether an event of `kind` for `server` in `second` is logged; if it is, how many were
    /// refused since the last one admitted for that key.
    std::optional<std::uint64_t> admit(std::string_view server, failure_kind kind,
                                       std::int64_t second);

private:
    struct slot {
        std::int64_t second = -1;
        std::uint64_t refused = 0;
    };
    using slots = std::array<slot, static_cast<std::size_t>(failure_kind::count_)>;
    std::mutex mu_;
    /// By server, one slot per kind: bounded by the servers the configuration ever named.
    std::map<std::string, slots, std::less<>> by_server_;
};

/// One failed request, as the error log tells it.
struct upstream_failure {
    failure_kind kind = failure_kind::reset;
    std::string_view server; ///< "127.0.0.1:3000", "unix:/run/app.sock"; empty: none
    std::string_view reason; ///< "connect() failed (111: Connection refused)"
    std::string_view during; ///< "while connecting to upstream"
    std::string_view client; ///< the client's address; empty: unknown
    const http::request_head* request = nullptr;
    bool tls = false; ///< an https:// server
};

/// The line, without the count of lines left out: also what the debug line says.
std::string describe(const upstream_failure& f);

/// Logs `f`: an error line if the rate limit admits it, and a debug line in any case.
void log_failure(const upstream_failure& f);

} // namespace tarry::upstream

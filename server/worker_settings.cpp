#include "worker_settings.hpp"

#include <sys/resource.h>

#include <algorithm>

namespace tarry::server {

unsigned advertised_keep_alive(timeouts::clock::duration keep_alive) noexcept {
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(keep_alive).count() - 1;
    return s > 0 ? static_cast<unsigned>(s) : 0;
}

worker_settings worker_settings::from(const config& cfg, const http::router* routes,
                                      unsigned workers, access_log* access,
                                      std::shared_ptr<const tls::context> tls) {
    worker_settings s;
    s.access = access;
    s.tls = std::move(tls);
    s.handshake = cfg.handshake_timeout;
    s.session.max_header_bytes = cfg.max_header_bytes;
    s.session.max_body_bytes = cfg.max_body_bytes;
    s.session.max_requests = cfg.max_requests_per_connection;
    // Advertised even when enforcement is off (a measuring mode): the responses stay byte for
    // byte the same, so only the cost of enforcing timeouts is compared.
    s.session.keep_alive_timeout_s = advertised_keep_alive(cfg.keep_alive_timeout);
    s.session.routes = routes;
    s.session.record_responses = access != nullptr;
    // The server starts the keep-alive clock when the response's last byte is handed to the
    // kernel; the client starts its own when it has read it, a scheduling delay later (tens of
    // microseconds on loopback, a few milliseconds under load). Counting from 2 ms after the
    // write means a client never sees its connection closed before keep_alive_timeout by its
    // own clock. Node.js pads the same race with a whole second (keepAliveTimeoutBuffer).
    s.keep_alive = cfg.keep_alive_timeout + keep_alive_allowance;
    s.header = cfg.header_timeout;
    s.body = cfg.body_timeout;
    s.send = cfg.send_timeout;
    // nginx's lingering_timeout and lingering_time: a client that was refused mid-upload
    // finishes sending (we read and discard) and then reads the answer, instead of a reset.
    s.linger = cfg.lingering_timeout;
    s.linger_total = cfg.lingering_time;
    s.body_total = cfg.request_timeout;
    s.max_age = cfg.max_connection_age;
    s.close_spread = cfg.close_spread_time;
    s.min_quiet = cfg.keep_alive_min_timeout;
    s.timeouts = cfg.timeouts;
    s.http2 = cfg.http2;
    s.h2.max_concurrent_streams = cfg.http2_max_concurrent_streams;
    s.h2.initial_window_size = cfg.http2_initial_window_size;
    // The header list under HTTP/1.1's limit: the decoded fields, as SETTINGS_MAX_HEADER_LIST_SIZE
    // counts them (each name and value plus 32).
    s.h2.header_limits.max_list_size = cfg.max_header_bytes;
    s.h2_ack = cfg.http2_ack_timeout;
    s.h2_ping = cfg.http2_ping_interval;
    s.h2.probe_peer = cfg.http2_ping_interval > std::chrono::milliseconds::zero();
    // The whole header must fit (Beast parses it contiguously), with room to read past it.
    s.in_buffer_bytes = std::max<std::size_t>(cfg.max_header_bytes + 1024, 8 * std::size_t{1024});

    std::size_t max = cfg.max_connections;
    std::size_t files = 0; // the open-file limit, when there is one
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        files = static_cast<std::size_t>(rl.rlim_cur);
    // Keep some descriptors for listeners, files being served and logs.
    if (max == 0 && files != 0) max = files - std::min<std::size_t>(64, files / 4);
    const unsigned n = std::max(1U, workers);
    s.max_connections = max == 0 ? 0 : std::max<std::size_t>(1, (max + n - 1) / n);
    // Each worker counts its own connections (they share nothing): its share of the limit, as
    // for max_connections. The kernel spreads one client's connections over the workers.
    const std::size_t per_client = cfg.max_connections_per_client;
    s.max_per_client = per_client == 0 ? 0 : std::max<std::size_t>(1, (per_client + n - 1) / n);
    s.clients = client_prefixes{cfg.client_prefix_v4, cfg.client_prefix_v6};
    // Past the limit, newcomers that find nothing to reclaim may take half of this worker's
    // share of what the limit leaves: the other half stays for files, logs and upstreams. A
    // limit set well below the open-file limit leaves a large reserve, but the operator asked
    // for that limit: at most a sixteenth past it then (with max_connections 3 and ulimit -n
    // 20000, 10,000 past it were once taken).
    const std::size_t reserve = files > max ? (files - max) / n : 0;
    s.past_limit = std::max<std::size_t>(1, reserve / 2);
    if (cfg.max_connections != 0)
        s.past_limit = std::min(s.past_limit, std::max<std::size_t>(1, s.max_connections / 16));
    return s;
}

} // namespace tarry::server

#include "metrics_text.hpp"

#include "build_info.hpp"
#include "process_metrics.hpp"
#include "worker.hpp"

#include <tarry/h2/frame_types.hpp>
#include <tarry/upstream/upstream_metrics.hpp>

#include <fmt/format.h>

#include <map>

namespace tarry::server {
namespace {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

/// A label's value as the exposition format writes it: backslash, double quote and newline
/// escaped (a route's prefix may hold any of them).
std::string label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (const char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

void counter_line_to(std::string& out, std::string_view name, std::string_view type,
                     std::string_view help, std::int64_t v) {
    family(out, name, type, help);
    fmt::format_to(std::back_inserter(out), "{} {}\n", name, v);
}

template <class F> std::int64_t sum(const std::vector<worker*>& ws, F f) {
    std::int64_t n = 0;
    for (worker* w : ws)
        n += f(w->metrics());
    return n;
}

} // namespace

upstream_sample& upstream_sample::operator+=(const upstream_sample& u) noexcept {
    const auto add = [](auto& to, const auto& from) {
        for (std::size_t i = 0; i < to.size(); ++i)
            to[i] += from[i];
    };
    idle += u.idle;
    busy += u.busy;
    opened += u.opened;
    reused += u.reused;
    requests += u.requests;
    retries += u.retries;
    tls_handshakes += u.tls_handshakes;
    tls_resumed += u.tls_resumed;
    add(errors, u.errors);
    add(closes, u.closes);
    add(response_buckets, u.response_buckets);
    response_us_sum += u.response_us_sum;
    tunnels += u.tunnels;
    tunnel_bytes_up += u.tunnel_bytes_up;
    tunnel_bytes_down += u.tunnel_bytes_down;
    add(tunnel_closes, u.tunnel_closes);
    return *this;
}

namespace {

/// Upstream pools (the proxy), summed over workers, by server. Counters of routes a reload
/// replaced are not carried over: they restart with the new pools.
void render_upstreams(std::string& out, const std::vector<worker_snapshot>& snaps) {
    // Keyed by the label as written: a unix: server's path may hold a quote or a backslash.
    std::map<std::string, upstream_sample> all;
    for (const auto& s : snaps)
        for (const auto& [name, u] : s.upstreams)
            all[label_value(name)] += u;
    if (all.empty()) return;
    family(out, "tarry_upstream_connections", "gauge", "Upstream connections, idle or busy.");
    for (const auto& [name, u] : all)
        fmt::format_to(std::back_inserter(out),
                       "tarry_upstream_connections{{server=\"{0}\",state=\"idle\"}} {1}\n"
                       "tarry_upstream_connections{{server=\"{0}\",state=\"busy\"}} {2}\n",
                       name, u.idle, u.busy);
    const auto each = [&](std::string_view metric, std::string_view help, auto value) {
        family(out, metric, "counter", help);
        for (const auto& [name, u] : all)
            fmt::format_to(std::back_inserter(out), "{}{{server=\"{}\"}} {}\n", metric, name,
                           value(u));
    };
    each("tarry_upstream_connections_opened_total", "Upstream connections opened.",
         [](const upstream_sample& u) { return u.opened; });
    each("tarry_upstream_reused_total", "Requests sent on a pooled connection.",
         [](const upstream_sample& u) { return u.reused; });
    each("tarry_upstream_requests_total", "Requests sent upstream (first attempts).",
         [](const upstream_sample& u) { return u.requests; });
    each("tarry_upstream_retries_total",
         "Idempotent requests replayed once after a reused connection died unanswered.",
         [](const upstream_sample& u) { return u.retries; });
    each("tarry_upstream_tls_handshakes_total",
         "TLS handshakes with an https:// server completed (resumed ones included).",
         [](const upstream_sample& u) { return u.tls_handshakes; });
    each("tarry_upstream_tls_resumed_total",
         "TLS handshakes with an https:// server that resumed a session.",
         [](const upstream_sample& u) { return u.tls_resumed; });
    family(out, "tarry_upstream_errors_total", "counter", "Upstream failures, by kind.");
    for (const auto& [name, u] : all)
        for (std::size_t i = 0; i < u.errors.size(); ++i)
            fmt::format_to(std::back_inserter(out),
                           "tarry_upstream_errors_total{{server=\"{}\",kind=\"{}\"}} {}\n", name,
                           upstream::upstream_error_names[i], u.errors[i]);
    family(out, "tarry_upstream_closes_total", "counter",
           "Upstream connections closed, by reason.");
    for (const auto& [name, u] : all)
        for (std::size_t i = 0; i < u.closes.size(); ++i)
            fmt::format_to(std::back_inserter(out),
                           "tarry_upstream_closes_total{{server=\"{}\",reason=\"{}\"}} {}\n", name,
                           upstream::upstream_close_names[i], u.closes[i]);
    family(out, "tarry_upstream_tunnels", "gauge",
           "Upgrade tunnels (WebSocket) open through the proxy.");
    for (const auto& [name, u] : all)
        fmt::format_to(std::back_inserter(out), "tarry_upstream_tunnels{{server=\"{}\"}} {}\n",
                       name, u.tunnels);
    family(out, "tarry_upstream_tunnel_bytes_total", "counter",
           "Bytes through upgrade tunnels, by direction.");
    for (const auto& [name, u] : all)
        fmt::format_to(
            std::back_inserter(out),
            "tarry_upstream_tunnel_bytes_total{{server=\"{0}\",direction=\"up\"}} {1}\n"
            "tarry_upstream_tunnel_bytes_total{{server=\"{0}\",direction=\"down\"}} {2}\n",
            name, u.tunnel_bytes_up, u.tunnel_bytes_down);
    family(out, "tarry_upstream_tunnel_closes_total", "counter",
           "Upgrade tunnels ended, by reason.");
    for (const auto& [name, u] : all)
        for (std::size_t i = 0; i < u.tunnel_closes.size(); ++i)
            fmt::format_to(std::back_inserter(out),
                           "tarry_upstream_tunnel_closes_total{{server=\"{}\",reason=\"{}\"}} {}\n",
                           name, upstream::tunnel_close_names[i], u.tunnel_closes[i]);
    family(out, "tarry_upstream_response_seconds", "histogram",
           "Time from a request's start upstream to the response head.");
    constexpr auto& bounds = upstream::upstream_metrics::response_bounds_us;
    for (const auto& [name, u] : all) {
        std::int64_t cumulative = 0;
        for (std::size_t i = 0; i < bounds.size(); ++i) {
            cumulative += u.response_buckets[i];
            fmt::format_to(std::back_inserter(out),
                           "tarry_upstream_response_seconds_bucket{{server=\"{}\",le=\"{}\"}} {}\n",
                           name, static_cast<double>(bounds[i]) / 1e6, cumulative);
        }
        cumulative += u.response_buckets.back();
        fmt::format_to(std::back_inserter(out),
                       "tarry_upstream_response_seconds_bucket{{server=\"{0}\",le=\"+Inf\"}} {1}\n"
                       "tarry_upstream_response_seconds_sum{{server=\"{0}\"}} {2}\n"
                       "tarry_upstream_response_seconds_count{{server=\"{0}\"}} {1}\n",
                       name, cumulative, static_cast<double>(u.response_us_sum) / 1e6);
    }
}

} // namespace

worker_snapshot take_snapshot(worker& w) {
    worker_snapshot s;
    w.registry().for_each_list([&](timeouts::idle_list& l) {
        s.lists.push_back({l.kind().name(), l.timeout(), l.size()});
    });
    w.registry().for_each_kind(
        [&](const timeouts::timeout_kind& k, const timeouts::expiry_stats& e) {
            s.expiry[k.name()] = e;
            s.expiry_total += e;
        });
    s.date_refreshes = w.date().cache().refreshes();
    // Every server the worker's configurations named, the old routes' pools counted with the
    // new ones' (upstream_counters): a reload is not a reset, and a tunnel still open on an old
    // route is still counted open.
    w.metrics().upstreams.each([&](const std::string& name, const upstream::upstream_metrics& m) {
        const auto read = [](auto& to, const auto& from) {
            for (std::size_t i = 0; i < to.size(); ++i)
                to[i] = from[i].get();
        };
        upstream_sample& u = s.upstreams[name]; // one set of counters per server and worker
        u.idle = m.idle.get();
        u.busy = m.busy.get();
        u.opened = m.opened.get();
        u.reused = m.reused.get();
        u.requests = m.requests.get();
        u.retries = m.retries.get();
        u.tls_handshakes = m.tls_handshakes.get();
        u.tls_resumed = m.tls_resumed.get();
        read(u.errors, m.errors);
        read(u.closes, m.closes);
        read(u.response_buckets, m.response_buckets);
        u.response_us_sum = m.response_us_sum.get();
        u.tunnels = m.tunnels.get();
        u.tunnel_bytes_up = m.tunnel_bytes_up.get();
        u.tunnel_bytes_down = m.tunnel_bytes_down.get();
        read(u.tunnel_closes, m.tunnel_closes);
    });
    return s;
}

namespace {

void render_tls(std::string& out, const std::vector<worker*>& ws) {
    family(out, "tarry_tls_handshakes_total", "counter",
           "TLS handshakes completed, by result: full, or resumed from a session ticket.");
    for (std::size_t r = 0; r < 2; ++r)
        fmt::format_to(std::back_inserter(out), "tarry_tls_handshakes_total{{result=\"{}\"}} {}\n",
                       r == 0 ? "full" : "resumed",
                       sum(ws, [r](worker_metrics& m) { return m.tls.handshakes[r].get(); }));
    family(out, "tarry_tls_handshake_failures_total", "counter",
           "TLS handshakes that did not complete, by reason (plain_http: answered 400).");
    for (std::size_t r = 0; r < tls::handshake_failure_names.size(); ++r)
        fmt::format_to(std::back_inserter(out),
                       "tarry_tls_handshake_failures_total{{reason=\"{}\"}} {}\n",
                       tls::handshake_failure_names[r],
                       sum(ws, [r](worker_metrics& m) { return m.tls.failures[r].get(); }));
    family(out, "tarry_tls_handshake_duration_seconds", "histogram",
           "From accept to the end of the TLS handshake (millisecond resolution).");
    {
        constexpr auto& bounds = worker_metrics::tls_counters::duration_bounds_us;
        std::int64_t cumulative = 0;
        for (std::size_t i = 0; i < bounds.size(); ++i) {
            cumulative +=
                sum(ws, [i](worker_metrics& m) { return m.tls.duration_buckets[i].get(); });
            fmt::format_to(std::back_inserter(out),
                           "tarry_tls_handshake_duration_seconds_bucket{{le=\"{}\"}} {}\n",
                           static_cast<double>(bounds[i]) / 1e6, cumulative);
        }
        cumulative +=
            sum(ws, [](worker_metrics& m) { return m.tls.duration_buckets.back().get(); });
        fmt::format_to(std::back_inserter(out),
                       "tarry_tls_handshake_duration_seconds_bucket{{le=\"+Inf\"}} {0}\n"
                       "tarry_tls_handshake_duration_seconds_sum {1}\n"
                       "tarry_tls_handshake_duration_seconds_count {0}\n",
                       cumulative,
                       static_cast<double>(
                           sum(ws, [](worker_metrics& m) { return m.tls.duration_us_sum.get(); })) /
                           1e6);
    }
    family(out, "tarry_tls_connections", "gauge",
           "Open TLS connections past their handshake, by version and cipher suite.");
    for (std::size_t s = 0; s < tls::suite_names.size(); ++s) {
        const std::int64_t n = sum(ws, [s](worker_metrics& m) { return m.tls.open[s].get(); });
        if (n == 0 && s + 1 == tls::suite_names.size()) continue;
        fmt::format_to(std::back_inserter(out),
                       "tarry_tls_connections{{version=\"{}\",cipher=\"{}\"}} {}\n",
                       s < 3                             ? "TLSv1.3"
                       : s + 1 < tls::suite_names.size() ? "TLSv1.2"
                                                         : "other",
                       tls::suite_names[s], n);
    }
    family(out, "tarry_tls_noop_record_closes_total", "counter",
           "TLS 1.3 connections closed (unexpected_message) for a run of records that carry no "
           "data past its limit, by kind.");
    for (std::size_t k = 0; k < tls::noop_limit_names.size(); ++k)
        fmt::format_to(std::back_inserter(out),
                       "tarry_tls_noop_record_closes_total{{kind=\"{}\"}} {}\n",
                       tls::noop_limit_names[k],
                       sum(ws, [k](worker_metrics& m) { return m.tls.noop_limits[k].get(); }));
    counter_line_to(out, "tarry_tls_own_record_connections", "gauge",
                    "Open TLS 1.3 connections on tarry's own record layer (no OpenSSL object).",
                    sum(ws, [](worker_metrics& m) { return m.tls.own_records.get(); }));
    counter_line_to(out, "tarry_tls_kernel_offload", "gauge",
                    "1 when the kernel can do TLS records (kTLS: the tls ULP is available); 0: "
                    "files over TLS are read and sealed by tarry (no sendfile).",
                    tls::kernel_tls_available() ? 1 : 0);
}

void render_h2(std::string& out, const std::vector<worker*>& ws) {
    using h2c = worker_metrics::h2_counters;
    counter_line_to(out, "tarry_h2_connections", "gauge", "Open connections speaking HTTP/2.",
                    sum(ws, [](worker_metrics& m) { return m.h2.connections.get(); }));
    counter_line_to(out, "tarry_h2_streams", "gauge", "HTTP/2 requests being answered.",
                    sum(ws, [](worker_metrics& m) { return m.h2.streams.get(); }));
    counter_line_to(out, "tarry_h2_streams_total", "counter", "HTTP/2 requests received.",
                    sum(ws, [](worker_metrics& m) { return m.h2.streams_total.get(); }));
    counter_line_to(out, "tarry_h2_tunnels", "gauge",
                    "Open tunnels on HTTP/2 streams (WebSockets by extended CONNECT, RFC 8441).",
                    sum(ws, [](worker_metrics& m) { return m.h2.tunnels.get(); }));
    counter_line_to(out, "tarry_h2_tunnels_total", "counter",
                    "Tunnels opened on HTTP/2 streams (WebSockets by extended CONNECT).",
                    sum(ws, [](worker_metrics& m) { return m.h2.tunnels_total.get(); }));
    const auto by_code = [&](std::string_view name, std::string_view help,
                             std::array<counter, h2c::codes> h2c::*which) {
        family(out, name, "counter", help);
        for (std::size_t c = 0; c < h2c::codes; ++c) {
            const std::int64_t n =
                sum(ws, [&](worker_metrics& m) { return (m.h2.*which)[c].get(); });
            if (n == 0 && c != 0) continue; // a code never sent is left out (NO_ERROR always in)
            fmt::format_to(std::back_inserter(out), "{}{{code=\"{}\"}} {}\n", name,
                           c + 1 < h2c::codes ? h2::to_string(static_cast<h2::error_code>(c))
                                              : std::string_view("OTHER"),
                           n);
        }
    };
    by_code("tarry_h2_goaways_sent_total",
            "HTTP/2 GOAWAY frames sent, by error code (a graceful close sends two: 2^31-1, then "
            "the last stream).",
            &h2c::goaways);
    by_code("tarry_h2_resets_sent_total", "HTTP/2 RST_STREAM frames sent, by error code.",
            &h2c::resets_sent);
    by_code("tarry_h2_resets_received_total",
            "HTTP/2 streams the client reset (RST_STREAM) while open, by error code.",
            &h2c::resets_received);
}

} // namespace

std::string render_metrics(const std::vector<worker*>& ws,
                           const std::vector<worker_snapshot>& snaps) {
    std::string out;
    auto counter_line = [&](std::string_view name, std::string_view type, std::string_view help,
                            std::int64_t v) { counter_line_to(out, name, type, help, v); };
    const build_info& b = this_build();
    family(out, "tarry_build_info", "gauge",
           "Always 1: the version and commit of this binary, and the libraries built into it.");
    fmt::format_to(std::back_inserter(out),
                   "tarry_build_info{{version=\"{}\",commit=\"{}\",boost=\"{}\"}} 1\n", b.version,
                   b.commit, b.boost);
    counter_line("tarry_connections_accepted_total", "counter", "Connections accepted.",
                 sum(ws, [](worker_metrics& m) { return m.accepted.get(); }));
    counter_line("tarry_accept_errors_total", "counter", "Failed accepts (EMFILE and others).",
                 sum(ws, [](worker_metrics& m) { return m.accept_errors.get(); }));
    counter_line("tarry_pressure_retires_total", "counter",
                 "At the connection limit with nothing quiet enough to close: recently used "
                 "keep-alive connections asked to close after their next response.",
                 sum(ws, [](worker_metrics& m) { return m.pressure_retires.get(); }));
    counter_line("tarry_pressure_by_client_total", "counter",
                 "At the connection limit, idle connections taken from the client holding the "
                 "most rather than the one idle longest.",
                 sum(ws, [](worker_metrics& m) { return m.pressure_by_client.get(); }));
    counter_line("tarry_connections_open", "gauge", "Connections open now.",
                 sum(ws, [](worker_metrics& m) { return m.open.get(); }));
    counter_line("tarry_connections_idle", "gauge",
                 "Connections idle between requests (the keep_alive phase).",
                 sum(ws, [](worker_metrics& m) {
                     return m.phases[static_cast<std::size_t>(conn_phase::keep_alive)].get();
                 }));
    family(out, "tarry_connections_by_phase", "gauge", "Connections open now, by phase.");
    for (std::size_t p = 0; p < conn_phase_names.size(); ++p)
        fmt::format_to(std::back_inserter(out), "tarry_connections_by_phase{{phase=\"{}\"}} {}\n",
                       conn_phase_names[p],
                       sum(ws, [p](worker_metrics& m) { return m.phases[p].get(); }));
    counter_line("tarry_requests_total", "counter",
                 "Responses written (error answers and proxied ones included).",
                 sum(ws, [](worker_metrics& m) { return m.requests.get(); }));
    family(out, "tarry_responses_total", "counter", "Responses written, by status class.");
    for (std::size_t c = 0; c < 5; ++c)
        fmt::format_to(std::back_inserter(out), "tarry_responses_total{{code=\"{}xx\"}} {}\n",
                       c + 1, sum(ws, [c](worker_metrics& m) { return m.responses[c].get(); }));
    family(out, "tarry_route_responses_total", "counter",
           "Responses by route (its prefix) and status class; the server's own answers (a "
           "malformed request, OPTIONS *) are in tarry_responses_total only.");
    {
        std::map<std::string, std::array<std::uint64_t, 5>> by_route;
        for (worker* w : ws)
            w->metrics().routes.each([&](const std::string& prefix, const http::route_stats& s) {
                auto& sums = by_route[label_value(prefix)];
                for (std::size_t c = 0; c < 5; ++c)
                    sums[c] += s.responses[c].load(std::memory_order_relaxed);
            });
        for (const auto& [prefix, sums] : by_route)
            for (std::size_t c = 0; c < 5; ++c)
                fmt::format_to(std::back_inserter(out),
                               "tarry_route_responses_total{{route=\"{}\",code=\"{}xx\"}} {}\n",
                               prefix, c + 1, sums[c]);
    }
    counter_line("tarry_received_bytes_total", "counter", "Bytes received from clients.",
                 sum(ws, [](worker_metrics& m) { return m.received_bytes.get(); }));
    counter_line("tarry_sent_bytes_total", "counter", "Bytes sent to clients (files included).",
                 sum(ws, [](worker_metrics& m) { return m.sent_bytes.get(); }));
    family(out, "tarry_request_duration_seconds", "histogram",
           "From the first byte of a request to the last byte of its response.");
    {
        constexpr auto& bounds = worker_metrics::duration_bounds_us;
        std::int64_t cumulative = 0;
        for (std::size_t i = 0; i < bounds.size(); ++i) {
            cumulative += sum(ws, [i](worker_metrics& m) { return m.duration_buckets[i].get(); });
            fmt::format_to(std::back_inserter(out),
                           "tarry_request_duration_seconds_bucket{{le=\"{}\"}} {}\n",
                           static_cast<double>(bounds[i]) / 1e6, cumulative);
        }
        cumulative += sum(ws, [](worker_metrics& m) { return m.duration_buckets.back().get(); });
        fmt::format_to(std::back_inserter(out),
                       "tarry_request_duration_seconds_bucket{{le=\"+Inf\"}} {0}\n"
                       "tarry_request_duration_seconds_sum {1}\n"
                       "tarry_request_duration_seconds_count {0}\n",
                       cumulative,
                       static_cast<double>(
                           sum(ws, [](worker_metrics& m) { return m.duration_us_sum.get(); })) /
                           1e6);
    }
    counter_line("tarry_keep_alive_saved_total", "counter",
                 "Keep-alive deadlines that found a request waiting and served it.",
                 sum(ws, [](worker_metrics& m) { return m.saved_at_timeout.get(); }));
    family(out, "tarry_connection_closes_total", "counter", "Connections closed, by reason.");
    for (std::size_t r = 0; r < close_reason_names.size(); ++r)
        fmt::format_to(std::back_inserter(out),
                       "tarry_connection_closes_total{{reason=\"{}\"}} {}\n", close_reason_names[r],
                       sum(ws, [r](worker_metrics& m) { return m.closes[r].get(); }));
    render_tls(out, ws);
    render_h2(out, ws);

    std::map<std::pair<std::string_view, timeouts::clock::duration>, std::size_t> lists;
    std::map<std::string_view, timeouts::expiry_stats> by_kind;
    timeouts::expiry_stats expiry;
    std::uint64_t refreshes = 0;
    for (const auto& s : snaps) {
        for (const auto& l : s.lists)
            lists[{l.kind, l.duration}] += l.length;
        for (const auto& [k, e] : s.expiry)
            by_kind[k] += e;
        expiry += s.expiry_total;
        refreshes += s.date_refreshes;
    }
    counter_line("tarry_timeout_lists", "gauge",
                 "Live timeout lists (one per kind and distinct duration).",
                 static_cast<std::int64_t>(lists.size()));
    family(out, "tarry_timeout_list_length", "gauge",
           "Entries in each timeout list, by kind and duration.");
    for (const auto& [key, n] : lists)
        fmt::format_to(std::back_inserter(out),
                       "tarry_timeout_list_length{{kind=\"{}\",duration_seconds=\"{}\"}} {}\n",
                       key.first, std::chrono::duration<double>(key.second).count(), n);
    counter_line("tarry_timeout_wakeups_total", "counter",
                 "Timer wake-ups and batch continuations of the timeout lists.",
                 static_cast<std::int64_t>(expiry.wakeups));
    family(out, "tarry_timeout_wake_seconds_max", "gauge",
           "The longest time one timer wake spent expiring entries (how long expiry held the "
           "event loop at most).");
    fmt::format_to(std::back_inserter(out), "tarry_timeout_wake_seconds_max {}\n",
                   static_cast<double>(expiry.wake_us_max) / 1e6);
    family(out, "tarry_timeout_wake_seconds_total", "counter", "Time spent expiring entries.");
    fmt::format_to(std::back_inserter(out), "tarry_timeout_wake_seconds_total {}\n",
                   static_cast<double>(expiry.wake_us_sum) / 1e6);
    family(out, "tarry_timeout_lateness_seconds", "histogram",
           "How late each expiry ran, by kind: actual time minus deadline.");
    for (const auto& [kind, e] : by_kind) {
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < timeouts::expiry_stats::bounds_us.size(); ++i) {
            cumulative += e.late_buckets[i];
            fmt::format_to(std::back_inserter(out),
                           "tarry_timeout_lateness_seconds_bucket{{kind=\"{}\",le=\"{}\"}} {}\n",
                           kind, static_cast<double>(timeouts::expiry_stats::bounds_us[i]) / 1e6,
                           cumulative);
        }
        cumulative += e.late_buckets.back();
        fmt::format_to(std::back_inserter(out),
                       "tarry_timeout_lateness_seconds_bucket{{kind=\"{0}\",le=\"+Inf\"}} {1}\n"
                       "tarry_timeout_lateness_seconds_sum{{kind=\"{0}\"}} {2}\n"
                       "tarry_timeout_lateness_seconds_count{{kind=\"{0}\"}} {3}\n",
                       kind, cumulative, static_cast<double>(e.late_sum_us) / 1e6, e.expired);
    }
    counter_line("tarry_date_refreshes_total", "counter",
                 "Times the cached Date value was rebuilt.", static_cast<std::int64_t>(refreshes));
    render_upstreams(out, snaps);
    if (const auto process = read_process_sample()) render_process_metrics(out, *process);
    return out;
}

} // namespace tarry::server

namespace tarry::server {

void render_names(std::string& out, const std::vector<resolve::name_state>& names) {
    if (names.empty()) return;
    const auto each = [&](std::string_view metric, std::string_view type, std::string_view help,
                          auto value) {
        family(out, metric, type, help);
        for (const resolve::name_state& n : names)
            fmt::format_to(std::back_inserter(out), "{}{{name=\"{}\"}} {}\n", metric,
                           label_value(n.host), value(n));
    };
    each("tarry_upstream_dns_addresses", "gauge",
         "Addresses an upstream server's DNS name resolves to, each a server of its group.",
         [](const resolve::name_state& n) { return n.addresses; });
    each("tarry_upstream_dns_lookups_total", "counter",
         "Lookups of an upstream server's DNS name while running (by its TTL).",
         [](const resolve::name_state& n) { return n.lookups; });
    each("tarry_upstream_dns_failures_total", "counter",
         "Lookups that failed or found no address; the last good answer stayed in use.",
         [](const resolve::name_state& n) { return n.failures; });
    each("tarry_upstream_dns_changes_total", "counter",
         "Answers that changed a name's addresses (servers added or drained).",
         [](const resolve::name_state& n) { return n.changes; });
    each("tarry_upstream_dns_stale", "gauge",
         "1 while a name's last lookup failed and its last good answer is in use.",
         [](const resolve::name_state& n) { return n.stale ? 1 : 0; });
}

} // namespace tarry::server

#pragma once

#include "client_table.hpp"
#include "config.hpp"
#include "worker_metrics.hpp"

#include <tarry/h2/connection.hpp>
#include <tarry/http/router.hpp>
#include <tarry/http/session.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <cstddef>
#include <memory>

namespace tarry::tls {
class context;
}

namespace tarry::server {

/// Added to keep_alive_timeout; see worker_settings::from.
inline constexpr timeouts::clock::duration keep_alive_allowance = std::chrono::milliseconds(2);

/// The part of the configuration a worker's connections read, in the form they read it.
struct worker_settings {
    http::session_settings session;
    timeouts::clock::duration keep_alive{};
    timeouts::clock::duration header{};
    timeouts::clock::duration body{};
    timeouts::clock::duration send{};
    timeouts::clock::duration linger{};       ///< between two reads while lingering or discarding
    timeouts::clock::duration linger_total{}; ///< lingering or discarding, in all
    timeouts::clock::duration body_total{};   ///< a request body, in all
    timeouts::clock::duration max_age{};      ///< past it the next response closes; 0: none
    timeouts::clock::duration close_spread{}; ///< a stop closes idle connections over this
    timeouts::clock::duration min_quiet{};    ///< idle at least this long before a stop or
                                              ///< pressure may close a connection
    bool timeouts = true;
    bool http2 = false;              ///< a client preface on a plain listener starts HTTP/2 (h2c)
    std::size_t in_buffer_bytes = 0; ///< the most a read buffer grows to (a whole header)
    std::size_t max_connections = 0; ///< this worker's share; 0: no limit
    std::size_t past_limit = 1;      ///< newcomers served past it, into the reserve
    std::size_t max_per_client = 0;  ///< this worker's share of max_connections_per_client
    client_prefixes clients;         ///< what names one client
    class access_log* access = nullptr;      ///< null: access log off
    std::shared_ptr<const tls::context> tls; ///< certificates of the TLS listeners; null: none
    timeouts::clock::duration handshake{};
    // HTTP/2 (http2_* keys). `h2` is read by each connection while it lives: a reload's values
    // reach open connections too (the initial window a connection announced stays its own).
    h2::connection_config h2{};
    timeouts::clock::duration h2_ack = std::chrono::seconds(10); ///< SETTINGS, graceful PING
    timeouts::clock::duration h2_ping{}; ///< dead-peer PING after this quiet; 0: off

    [[nodiscard]] timeouts::clock::duration timeout_for(conn_phase p) const noexcept {
        switch (p) {
        case conn_phase::silent:
        case conn_phase::header:
            return header;
        case conn_phase::body:
            return body;
        case conn_phase::send:
            return send;
        case conn_phase::keep_alive:
            return keep_alive;
        case conn_phase::handshake:
            return handshake;
        case conn_phase::linger:
        case conn_phase::discard:
        case conn_phase::waiting:
        case conn_phase::count_:
            break;
        }
        return linger;
    }
    /// The total a phase may last, on top of its gap between reads; zero: none.
    [[nodiscard]] timeouts::clock::duration total_for(conn_phase p) const noexcept {
        switch (p) {
        case conn_phase::body:
            return body_total;
        case conn_phase::linger:
        case conn_phase::discard:
            return linger_total;
        default:
            return timeouts::clock::duration::zero();
        }
    }

    static worker_settings from(const config& cfg, const http::router* routes, unsigned workers,
                                class access_log* access = nullptr,
                                std::shared_ptr<const tls::context> tls = nullptr);
};

/// Whole seconds to advertise in `Keep-Alive: timeout=N`: a second below what the server really
/// waits, so a client never sends on a connection the server is closing (0: advertise nothing).
unsigned advertised_keep_alive(timeouts::clock::duration keep_alive) noexcept;

} // namespace tarry::server

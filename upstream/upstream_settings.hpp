#pragma once

#include <tarry/tls/client_context.hpp>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace tarry::upstream {

/// One server of an upstream: where it is, and how it is named (in metrics, and as the Host of
/// a request that came without one). Built typed from the configuration; parse() is for text.
/// A server given by a DNS name has no endpoint of its own: its group has a server per address
/// the name resolves to (upstream_group, name_table), all named as the configuration names it.
struct server_address {
    using endpoint_type = boost::asio::generic::stream_protocol::endpoint;

    std::string name; ///< "127.0.0.1:3000", "[::1]:3000", "unix:/run/app.sock", "app:3000"
    endpoint_type endpoint;
    std::string host;       ///< a DNS name to resolve; empty for an address
    std::uint16_t port = 0; ///< with `host`
    /// The name its certificate is verified against (and sent as SNI unless it is an address):
    /// the configured host, or the upstream's tls_server_name. Unused without TLS.
    std::string tls_name{};

    [[nodiscard]] bool named() const noexcept { return !host.empty(); }

    static server_address tcp(const boost::asio::ip::address& address, std::uint16_t port);
    static server_address unix_socket(const std::filesystem::path& path);
    /// A server by DNS name (no endpoint until its group looks the name up).
    static server_address dns_name(const std::string& host, std::uint16_t port);
    /// HOST:PORT as the configuration has it: a numeric address is one server; "localhost" two,
    /// 127.0.0.1 and ::1, so an application listening on either is reached (Node.js 17 and
    /// later listen on ::1 for "localhost" on many systems); any other host a DNS name.
    static std::vector<server_address> of_host(const std::string& host, std::uint16_t port);
    /// "HOST:PORT" with a numeric address or localhost, "[V6]:PORT", or "unix:PATH". Throws
    /// std::invalid_argument.
    static server_address parse(const std::string& text);
};

/// How a proxy reaches its application servers. A plain struct: the configuration fills it.
struct upstream_settings {
    enum class balance_mode { round_robin, least_conn };
    using duration = std::chrono::steady_clock::duration;

    std::vector<server_address> servers;
    balance_mode balance = balance_mode::round_robin;
    std::size_t max_idle = 1024; ///< cap on idle connections kept per server (demand decides)
    duration idle_timeout = std::chrono::seconds(60); ///< an idle pooled connection
    duration connect_timeout = std::chrono::seconds(5);
    duration send_timeout = std::chrono::seconds(60);     ///< gap between writes of the request
    duration response_timeout = std::chrono::seconds(60); ///< request sent -> first byte back
    duration read_timeout = std::chrono::seconds(60);     ///< gap between reads of the response
    duration fail_timeout = std::chrono::seconds(10); ///< a server that failed is skipped this long
    /// An upgrade tunnel (WebSocket) with no byte either way for this long is closed.
    duration tunnel_idle_timeout = std::chrono::hours(1);
    /// How often a pool closes half of its idle connections beyond demand (HAProxy's
    /// pool-purge-delay).
    duration purge_period = std::chrono::seconds(5);
    /// true: keep the client's X-Forwarded-* and append to X-Forwarded-For; false: replace.
    bool trust_forwarded = false;
    /// TLS to every server (https://), or null: plain TCP. Shared by the upstream's pools.
    std::shared_ptr<const tls::client_context> tls;
};

} // namespace tarry::upstream

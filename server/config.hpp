#pragma once

#include <tarry/timeouts/timeout_registry.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tarry::server {

using namespace std::chrono_literals;
using duration = std::chrono::steady_clock::duration;

/// A HOST:PORT to listen on. `host` is a numeric IPv4/IPv6 address or "localhost".
struct listen_address {
    std::string host;
    std::uint16_t port = 0;
    friend bool operator==(const listen_address&, const listen_address&) = default;
};

/// Everything a user can tune, with the defaults users of nginx and Node.js expect.
struct config {
    std::vector<listen_address> listen{{"127.0.0.1", 8080}};
    std::optional<std::filesystem::path> docroot;

    duration keep_alive_timeout = 65s;    ///< idle between requests; silent close
    duration header_timeout = 60s;        ///< first byte (or accept) to end of headers; total
    duration body_timeout = 60s;          ///< gap between two reads of a request body
    duration send_timeout = 60s;          ///< gap between two writes the client does not drain
    duration drain_timeout = 10s;         ///< graceful stop: how long in-flight requests may take
    duration request_timeout = 300s;      ///< a request body, in all
    duration lingering_time = 30s;        ///< reading and discarding after an answer, in all
    duration lingering_timeout = 5s;      ///< ... and between two reads
    duration max_connection_age = 0s;     ///< past it the next response closes; 0: off
    duration close_spread_time = 1s;      ///< a graceful stop closes idle connections over this
    duration keep_alive_min_timeout = 1s; ///< idle at least this before stop or pressure closes
    std::uint32_t max_requests_per_connection = 1000; ///< 0: unlimited
    std::size_t max_header_bytes =
        16 * std::size_t{1024}; ///< request line + headers; over it: 431/414
    std::size_t max_body_bytes = 1024 * std::size_t{1024}; ///< over it: 413

    unsigned workers = 0;                       ///< 0: one per core
    std::size_t max_connections = 0;            ///< per server; 0: derived from the open-file limit
    std::optional<listen_address> admin_listen; ///< serves /metrics and /healthz; off by default
    std::string log_level = "info";             ///< trace, debug, info, warn, error, critical, off
    std::optional<std::filesystem::path> access_log; ///< off by default; "-" is stdout
    std::size_t expire_batch =
        timeouts::timeout_registry::default_expire_batch; ///< expiry callbacks per timer wake
    bool timeouts = true; ///< false only to measure what enforcing them costs

    std::optional<std::filesystem::path> config_file; ///< where it was read from, for reload
};

/// A configuration error: `what()` is one line naming the key or flag (and the file line).
class config_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Parses "65s", "250ms", "2m", "1h", "1500us" (a bare number is an error: units are required).
/// Throws config_error naming `what` on a bad value.
duration parse_duration(const std::string& text, const std::string& what);

/// Parses "HOST:PORT", "[V6]:PORT" or ":PORT" (all addresses). Throws config_error naming `what`.
listen_address parse_listen(const std::string& text, const std::string& what);

/// Reads a TOML file over `base`. Unknown keys, wrong types and bad values throw config_error
/// with the key and the file's line.
config load_config_file(const std::filesystem::path& file, config base = {});

/// What the command line asked for.
struct command_line {
    enum class action { run, check_config, help, version };
    action what = action::run;
    config cfg;
    std::string help_text; ///< filled for action::help
};

/// Parses argv: reads --config FILE first, then applies every other flag over it. Throws
/// config_error on a bad flag or value (main prints it and exits with status 2).
command_line parse_command_line(int argc, const char* const* argv);

/// Re-reads cfg.config_file for a reload, keeping what the command line set over it.
config reload_config(const config& current, int argc, const char* const* argv);

} // namespace tarry::server

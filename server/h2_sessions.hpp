#pragma once

#include "h2_session.hpp"

#include <tarry/h2/connection.hpp>

#include <memory>
#include <unordered_map>

namespace tarry::server {

class connection;

/// A worker's HTTP/2 connections' protocol state, found by connection (as TLS state is found
/// by descriptor: an HTTP/1.1 connection pays nothing for it). What they share of the
/// configuration is worker_settings::h2.
struct h2_sessions {
    /// Taken when a connection starts speaking HTTP/2, freed with the connection object.
    std::unordered_map<const connection*, std::unique_ptr<h2_session>> by_connection;
};

} // namespace tarry::server

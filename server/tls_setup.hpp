#pragma once

#include "config.hpp"

#include <tarry/tls/context.hpp>

#include <memory>

namespace tarry::server {

/// Whether any listen address is a TLS one.
[[nodiscard]] bool wants_tls(const config& cfg);

/// The certificates the configuration names, loaded and checked (each key matches its
/// certificate); null when no address is TLS. Throws config_error naming the key and the file.
std::shared_ptr<const tls::context> make_tls_context(const config& cfg,
                                                     std::shared_ptr<tls::ticket_keys> keys);

} // namespace tarry::server

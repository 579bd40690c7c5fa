#pragma once

/// @file
/// @brief default_expire_batch, on its own so that configuration code can name the default
/// without including the registry (and Asio with it).

#include <cstddef>

namespace tarry::timeouts {

/// Expiry callbacks a registry runs per timer wake before deferring the rest to a posted
/// handler. timeout_registry::default_expire_batch says why 16.
inline constexpr std::size_t default_expire_batch = 16;

} // namespace tarry::timeouts

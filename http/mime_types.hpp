#pragma once

#include <string_view>

namespace tarry::http {

/// The Content-Type for a file name, by its extension (case-insensitive), from a table modelled
/// on nginx's mime.types for the assets a web site serves; application/octet-stream otherwise.
/// Text types carry `charset=utf-8`.
std::string_view mime_type(std::string_view name) noexcept;

} // namespace tarry::http

#pragma once

#include <string>
#include <vector>

#include "config.hpp"

namespace tarry::server {

/// What a start would refuse, checked without starting: every document root is a readable
/// directory, the access log's directory exists and is writable (and so is the file, if it is
/// there), every listen address is one this machine has, every Unix socket's directory exists
/// and its owner= does. (A port in use is not checked: a running tarry holds its own.) Throws
/// config_error naming the key, for `--check-config`, a start and a reload alike.
/// Certificates are loaded and checked too (each key matches its certificate); what is only
/// worth a warning (a certificate past its expiry) is returned, one line each.
std::vector<std::string> preflight(const config& cfg);

} // namespace tarry::server

#pragma once

// What a reload changed, in words an operator can check against the edit they made: the reload's
// log line lists these, or says "no change" (a SIGHUP that found the file as it was, or an edit
// that did not save).

#include "config.hpp"

#include <string>
#include <vector>

namespace tarry::server {

/// One entry per difference, in the settings table's order: `keep_alive_timeout 65s -> 10s`,
/// `listen 127.0.0.1:9000 added`, `route "/api/" removed`, `upstream app changed`. Empty when
/// nothing differs. Certificates are read again on every reload whatever this says.
std::vector<std::string> config_changes(const config& before, const config& after);

/// A duration as a file would write it: "65s", "250ms", "1500us".
std::string duration_text(duration d);

} // namespace tarry::server

#pragma once

// The words a certificate, key or CA file error is told in, for the server's certificates
// (context) and the upstreams' (client_context) alike: the file and the reason a person can
// act on, not OpenSSL's "system lib".

#include <string>

namespace tarry::tls {

/// OpenSSL's last error as one line ("no start line", "key values mismatch"), the queue cleared.
std::string last_error();

/// The user this process reads files as, for messages: "tarry", or "uid 998".
std::string reading_user();

/// Why `path` cannot be read as a file, in words ("missing (no such file)", "permission denied
/// for user tarry", "a directory, not a file"); empty when it can.
std::string unreadable(const std::string& path);

} // namespace tarry::tls

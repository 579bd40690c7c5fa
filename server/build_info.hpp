#pragma once

#include <string>
#include <string_view>

namespace tarry::server {

/// What this binary is built from: its version and commit, and the versions of the libraries
/// compiled into it (for --version, and for tarry_build_info in /metrics).
struct build_info {
    std::string_view version; ///< the project's version (CMake's PROJECT_VERSION)
    std::string_view commit;  ///< the git commit it was configured at, or "unknown"
    std::string boost;        ///< "1.81.0"
    std::string libraries;    ///< "toml++ 3.3.0, spdlog 1.10.0, fmt 9.1.0, CLI11 2.1.2"
    std::string compiler;     ///< "GCC 12.2.0"
};

[[nodiscard]] const build_info& this_build();

/// What --version prints: "tarry VERSION (commit COMMIT)", then the libraries and the compiler.
[[nodiscard]] std::string version_text();

} // namespace tarry::server

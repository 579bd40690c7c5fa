#include "build_info.hpp"

#include <CLI/Version.hpp>
#include <boost/version.hpp>
#include <fmt/format.h>
#include <spdlog/version.h>
#include <toml++/toml.h>

namespace tarry::server {

const build_info& this_build() {
    static const build_info info {
        TARRY_VERSION, TARRY_COMMIT,
            fmt::format("{}.{}.{}", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000,
                        BOOST_VERSION % 100),
            fmt::format("toml++ {}.{}.{}, spdlog {}.{}.{}, fmt {}.{}.{}, CLI11 {}", TOML_LIB_MAJOR,
                        TOML_LIB_MINOR, TOML_LIB_PATCH, SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR,
                        SPDLOG_VER_PATCH, FMT_VERSION / 10000, FMT_VERSION / 100 % 100,
                        FMT_VERSION % 100, CLI11_VERSION),
#if defined(__clang__)
            fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__),
#else
            fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__),
#endif
    };
    return info;
}

std::string version_text() {
    const build_info& b = this_build();
    return fmt::format("tarry {} (commit {})\nBoost {}, {}\nbuilt with {}\n", b.version, b.commit,
                       b.boost, b.libraries, b.compiler);
}

} // namespace tarry::server

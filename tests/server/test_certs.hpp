#pragma once

// The certificates tls/make_certs.sh makes (a CA; default.pem for localhost and 127.0.0.1; the
// others it lists), made once for a whole test program in a scratch directory of its own.
// The target defines TARRY_TLS_ASSETS (the folder of make_certs.sh).
#include "child_process.hpp"
#include "tarry_process.hpp"

#include <filesystem>
#include <gtest/gtest.h>

namespace tarry::test {

inline const std::filesystem::path& test_certs() {
    static const scratch_dir dir("certs");
    static const bool made = [] {
        const run_result r =
            run_shell("sh " TARRY_TLS_ASSETS "/make_certs.sh " + dir.path().string());
        EXPECT_EQ(r.status, 0) << r.output;
        return r.status == 0;
    }();
    (void)made;
    return dir.path();
}

} // namespace tarry::test

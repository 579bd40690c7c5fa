#pragma once

// Command line flags shared by both servers.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

namespace idle_echo {

struct options {
    std::string address = "127.0.0.1";
    std::uint16_t port = 7000;
    std::chrono::milliseconds login_timeout{5000};
    std::chrono::milliseconds idle_timeout{30000};
};

/// Parses `--address A --port N --login-timeout-ms N --idle-timeout-ms N`; exits 2 on an
/// unknown flag or a bad value.
inline options parse_options(int argc, char** argv) {
    options o;
    auto fail = [&](std::string_view what) {
        std::cerr << argv[0] << ": " << what << "\nusage: " << argv[0]
                  << " [--address A] [--port N] [--login-timeout-ms N] [--idle-timeout-ms N]\n";
        std::exit(2);
    };
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (flag == "--help") fail("an echo server that times out silent and idle connections");
        if (i + 1 == argc) fail(std::string(flag) + " needs a value");
        const std::string value = argv[++i];
        char* end = nullptr;
        const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
        const bool numeric = !value.empty() && *end == '\0';
        if (flag == "--address") {
            o.address = value;
        } else if (flag == "--port" && numeric && n <= 65535) {
            o.port = static_cast<std::uint16_t>(n);
        } else if (flag == "--login-timeout-ms" && numeric && n > 0) {
            o.login_timeout = std::chrono::milliseconds(n);
        } else if (flag == "--idle-timeout-ms" && numeric && n > 0) {
            o.idle_timeout = std::chrono::milliseconds(n);
        } else {
            fail("bad flag or value: " + std::string(flag) + " " + value);
        }
    }
    return o;
}

} // namespace idle_echo

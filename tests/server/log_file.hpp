#pragma once
// A file the server writes (an access log, an error log): its bytes, and a line of it once it
// is there.

#include "test_client.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tarry::test {

/// A whole file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The line of the log file `log` holding `needle`, once it is there (polled for up to 5 s: logs
/// are flushed within a second); "" and a test failure naming what was looked for if it never is.
inline std::string log_line_with(const std::filesystem::path& log, const std::string& needle) {
    std::string text;
    std::string line;
    eventually(
        [&] {
            text = slurp(log);
            const auto at = text.find(needle);
            if (at == std::string::npos) return false;
            const auto start = text.rfind('\n', at);
            const auto from = start == std::string::npos ? 0 : start + 1;
            line = text.substr(from, text.find('\n', at) - from);
            return true;
        },
        std::chrono::seconds(5));
    EXPECT_FALSE(line.empty()) << needle << " not in:\n" << text;
    return line;
}

} // namespace tarry::test

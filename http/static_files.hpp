#pragma once

#include "unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tarry::http {

/// Files under a document root, opened so that no request can reach outside it: the path is
/// percent-decoded and normalised, `..` segments and encoded slashes are refused, and the open
/// itself is openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so the kernel refuses symlinks and
/// escapes that string checks could miss.
class static_files {
public:
    /// Throws std::system_error if `root` is not an openable directory.
    explicit static_files(const std::filesystem::path& root);

    struct file {
        unsigned status = 404; ///< 200, 400, 403 or 404
        unique_fd fd;
        std::uint64_t size = 0;
        std::string_view content_type;
    };

    /// Opens the file for a request target (origin-form, query allowed).
    [[nodiscard]] file open(std::string_view target) const;

    /// Content-Type for a file name, by extension.
    static std::string_view content_type(std::string_view name) noexcept;

private:
    unique_fd root_;
};

} // namespace tarry::http

#pragma once

#include "unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tarry::http {

/// Files under a document root, opened so that no request can reach outside it: the path is
/// percent-decoded and normalised, `..` segments and encoded slashes are refused, and the open
/// itself is openat2(RESOLVE_BENEATH), so the kernel follows a symlink only while it stays
/// beneath the root and refuses escapes that string checks could miss (absolute links, `..`
/// inside a link's target, a link swapped while requests are served).
class static_files {
public:
    /// Throws std::system_error if `root` is not an openable directory.
    explicit static_files(const std::filesystem::path& root);

    struct file {
        /// 200; 301 (a directory named without its slash: see `location`); 400, 403, 404; 503
        /// when the process or system is out of descriptors; 500 for other open errors.
        unsigned status = 404;
        unique_fd fd;
        std::uint64_t size = 0;
        std::int64_t mtime = 0; ///< seconds since the epoch
        std::uint64_t inode = 0;
        std::string_view content_type;
        std::string path;     ///< the normalised path below the root ("a/b.txt"), for 200
        std::string location; ///< for 301: the target's path with a slash added, query kept
    };

    /// Opens the file for a request target (origin-form, query allowed).
    [[nodiscard]] file open(std::string_view target) const;

    /// Opens `path + suffix` (a normalised path from open(), e.g. "app.js" + ".gz") if it is a
    /// regular file; status 200 if so. Its content_type is left empty.
    [[nodiscard]] file open_sibling(const std::string& path, std::string_view suffix) const;

    /// Content-Type for a file name, by extension.
    static std::string_view content_type(std::string_view name) noexcept;

private:
    unique_fd root_;
};

} // namespace tarry::http

#pragma once

#include "static_files.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tarry::http {

/// One file as it is sent: the open file and its validators, formatted once.
struct representation {
    static_files::file file;
    std::string etag;          ///< quotes included
    std::string last_modified; ///< IMF-fixdate
};

/// What serving one path needs, kept open: the file, and its precompressed siblings when the
/// type is one that has them (a sibling's file.status is 200 when it exists).
struct open_file {
    representation plain;
    representation br;
    representation gz;
    std::chrono::steady_clock::time_point opened;
};

/// Descriptors and stat results per request path, like nginx's open_file_cache: a hit costs no
/// system call, where a miss costs an openat2 and an fstat for the file and one openat2 per
/// sibling probed (what that saves: load/README.md, "The static origin against nginx"). An entry is
/// trusted for `valid_for` after it was opened, then opened afresh: a file replaced or changed is
/// served within that time (nginx's open_file_cache_valid, 60 s by default). Only files that exist
/// are kept. At `max_entries`, expired entries are dropped, then an arbitrary one. One cache per
/// worker thread: no locks.
class open_file_cache {
public:
    using clock = std::chrono::steady_clock;

    open_file_cache(std::size_t max_entries, clock::duration valid_for)
        : max_entries_(max_entries), valid_for_(valid_for) {}

    [[nodiscard]] bool enabled() const noexcept {
        return max_entries_ != 0 && valid_for_ > clock::duration::zero();
    }

    /// The entry for `path` if it is still valid at `now`, else null.
    open_file* find(std::string_view path, clock::time_point now);

    /// Keeps `entry` for `path` (replacing any older one) and returns it.
    open_file& insert(std::string_view path, open_file&& entry);

    /// Closes every descriptor held (the process ran out of them).
    void clear() noexcept { entries_.clear(); }

    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

private:
    struct hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    std::unordered_map<std::string, open_file, hash, std::equal_to<>> entries_;
    std::size_t max_entries_;
    clock::duration valid_for_;
};

} // namespace tarry::http

#pragma once

#include "handler.hpp"
#include "open_file_cache.hpp"
#include "static_files.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace tarry::http {

struct request_conditions;

/// Serves the files under a document root (GET and HEAD) as a cacheable origin: Last-Modified
/// and a strong ETag, conditional requests (304, 412), single byte ranges (206, 416, If-Range),
/// precompressed siblings (`file.br`, `file.gz`) chosen by Accept-Encoding, a redirect to the
/// slash for a directory, and an optional Cache-Control. Small files go out with the head in one
/// write; larger ones (and ranges of them) are streamed by the connection with sendfile. Open
/// files are kept per path for a second (see open_file_cache).
class files_handler final : public handler {
public:
    static constexpr std::size_t default_open_files = 1000;
    static constexpr std::chrono::milliseconds default_open_file_valid{1000};

    /// Throws std::system_error if `root` is not an openable directory. `cache_control`, when
    /// not empty, is sent as the Cache-Control of 200, 206 and 304 responses. `open_files` paths
    /// are kept open for `open_file_valid` each (0 for either: nothing is kept).
    explicit files_handler(const std::filesystem::path& root, std::string_view cache_control = {},
                           std::size_t open_files = default_open_files,
                           std::chrono::milliseconds open_file_valid = default_open_file_valid);

    void on_request(exchange& ex) override;

private:
    /// The representation a request gets, and how it was chosen.
    struct choice {
        representation* rep;
        std::string_view encoding; ///< Content-Encoding: "br", "gzip", or empty
        bool vary;                 ///< a precompressed sibling exists: Vary: Accept-Encoding
    };
    /// Opens the file the target names, its precompressed siblings, and their validators, into
    /// `fresh`. False: it answered already (a redirect to the slash, or an error).
    bool open(exchange& ex, open_file& fresh);
    /// The plain file or a precompressed sibling, by what the client accepts.
    static choice choose(open_file& entry, std::string_view accept_encoding);
    /// 304, 412, 416, 206 or 200 (GET and HEAD) for the chosen representation.
    void answer(exchange& ex, const request_conditions& c, const open_file& entry,
                const choice& chosen, bool caching);

    static_files files_;
    open_file_cache cache_;
    std::string cache_control_; ///< the whole field line, or empty
    std::string fields_;        ///< the response's extra fields, reused from request to request
};

} // namespace tarry::http

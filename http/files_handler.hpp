#pragma once

#include "handler.hpp"
#include "static_files.hpp"

#include <filesystem>
#include <string>

namespace tarry::http {

/// Serves the files under a document root (GET and HEAD) as a cacheable origin: Last-Modified
/// and a strong ETag, conditional requests (304, 412), single byte ranges (206, 416, If-Range),
/// precompressed siblings (`file.br`, `file.gz`) chosen by Accept-Encoding, a redirect to the
/// slash for a directory, and an optional Cache-Control. Small files go out with the head in one
/// write; larger ones (and ranges of them) are streamed by the connection with sendfile.
class files_handler final : public handler {
public:
    /// Throws std::system_error if `root` is not an openable directory. `cache_control`, when
    /// not empty, is sent as the Cache-Control of 200, 206 and 304 responses.
    explicit files_handler(const std::filesystem::path& root, std::string cache_control = {});

    void on_request(exchange& ex) override;

private:
    static_files files_;
    std::string cache_control_; ///< the whole field line, or empty
    std::string fields_;        ///< the response's extra fields, reused from request to request
};

} // namespace tarry::http

#pragma once

#include "handler.hpp"
#include "static_files.hpp"

#include <filesystem>

namespace tarry::http {

/// Serves the files under a document root (GET and HEAD). Small files go out with the head in
/// one write; larger ones are streamed by the connection with sendfile.
class files_handler final : public handler {
public:
    /// Throws std::system_error if `root` is not an openable directory.
    explicit files_handler(const std::filesystem::path& root) : files_(root) {}

    void on_request(exchange& ex) override;

private:
    static_files files_;
};

} // namespace tarry::http

#include "preflight.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace tarry::server {
namespace {

namespace fs = std::filesystem;

void check_docroot(const fs::path& dir, const std::string& key) {
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (!fs::exists(st)) throw config_error(key + ": " + dir.string() + " does not exist");
    if (!fs::is_directory(st))
        throw config_error(key + ": " + dir.string() + " is not a directory");
    if (::access(dir.c_str(), R_OK | X_OK) != 0)
        throw config_error(key + ": " + dir.string() + " cannot be read (" +
                           std::generic_category().message(errno) + ")");
}

void check_log_file(const fs::path& file, const std::string& key) {
    if (file == "-") return;
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw config_error(key + ": the directory " + dir.string() + " does not exist");
    if (fs::exists(file, ec) ? ::access(file.c_str(), W_OK) != 0
                             : ::access(dir.c_str(), W_OK | X_OK) != 0)
        throw config_error(key + ": " + file.string() + " cannot be written (" +
                           std::generic_category().message(errno) + ")");
}

} // namespace

void preflight(const config& cfg) {
    if (cfg.docroot) check_docroot(*cfg.docroot, "docroot");
    for (std::size_t i = 0; i < cfg.routes.size(); ++i)
        if (cfg.routes[i].what == route_config::kind::files)
            check_docroot(cfg.routes[i].docroot, "route[" + std::to_string(i + 1) + "].docroot");
    if (cfg.access_log) check_log_file(*cfg.access_log, "access_log");
}

} // namespace tarry::server

#include "preflight.hpp"

#include "handlers.hpp"
#include "tls_setup.hpp"

#include "listener.hpp"
#include "shared_socket.hpp"

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

/// Whether this machine has the address to bind: a probe on port 0, which takes no port.
void check_tcp_address(const listen_address& addr, const std::string& key) {
    auto any_port = endpoint_of(addr);
    any_port.port(0);
    if (probe_bind(any_port) == EADDRNOTAVAIL)
        throw config_error(key + ": " + addr.name() + ": this machine has no such address");
}

} // namespace

std::vector<std::string> preflight(const config& cfg) {
    if (cfg.docroot) check_docroot(*cfg.docroot, "docroot");
    for (std::size_t i = 0; i < cfg.routes.size(); ++i)
        if (cfg.routes[i].what == route_config::kind::files)
            check_docroot(cfg.routes[i].docroot, "route[" + std::to_string(i + 1) + "].docroot");
    for (std::size_t i = 0; i < cfg.sites.size(); ++i)
        for (std::size_t j = 0; j < cfg.sites[i].routes.size(); ++j)
            if (cfg.sites[i].routes[j].what == route_config::kind::files)
                check_docroot(cfg.sites[i].routes[j].docroot,
                              "site[" + std::to_string(i + 1) + "].route[" + std::to_string(j + 1) +
                                  "].docroot");
    if (cfg.access_log) check_log_file(*cfg.access_log, "access_log");
    if (cfg.pid_file) check_log_file(*cfg.pid_file, "pid_file");
    for (const listen_address& a : cfg.listen)
        if (a.unix_path.empty())
            check_tcp_address(a, "listen");
        else
            check_unix_address(a);
    if (cfg.admin_listen) check_tcp_address(*cfg.admin_listen, "admin_listen");
    for (const upstream_config& u : cfg.upstreams)
        (void)upstream_tls(u); // a CA file or client certificate that cannot be used
    if (const auto tls = make_tls_context(cfg, std::make_shared<tls::ticket_keys>()))
        return tls->warnings();
    return {};
}

} // namespace tarry::server

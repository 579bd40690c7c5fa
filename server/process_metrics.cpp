#include "process_metrics.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>

namespace tarry::server {
namespace {

std::optional<std::string> read_text(const char* path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return std::move(text).str();
}

// The boot time, in seconds since the epoch: a process's start is counted in clock ticks since it.
std::optional<std::uint64_t> boot_time() {
    const auto stat = read_text("/proc/stat");
    if (!stat) return std::nullopt;
    const auto at = stat->find("\nbtime ");
    if (at == std::string::npos) return std::nullopt;
    return std::stoull(stat->substr(at + 7));
}

std::uint64_t count_open_fds() {
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return 0;
    std::uint64_t n = 0;
    const int own = dirfd(dir); // the descriptor this count holds open is not the process's
    while (const dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        if (std::string_view(e->d_name) == std::to_string(own)) continue;
        ++n;
    }
    closedir(dir);
    return n;
}

} // namespace

std::optional<process_sample> read_process_sample() {
    const auto stat = read_text("/proc/self/stat");
    const auto boot = boot_time();
    if (!stat || !boot) return std::nullopt;
    // The command name (field 2) is in parentheses and may hold spaces: fields are counted from
    // the last ')'. After it, field 3 (state) comes first.
    const auto close = stat->rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(stat->substr(close + 1));
    std::string field;
    std::uint64_t utime = 0, stime = 0, start_ticks = 0, vsize = 0;
    std::int64_t rss_pages = 0;
    for (int n = 3; n <= 24 && fields >> field; ++n) {
        switch (n) {
        case 14:
            utime = std::stoull(field);
            break;
        case 15:
            stime = std::stoull(field);
            break;
        case 22:
            start_ticks = std::stoull(field);
            break;
        case 23:
            vsize = std::stoull(field);
            break;
        case 24:
            rss_pages = std::stoll(field);
            break;
        default:
            break;
        }
    }
    if (!fields) return std::nullopt;
    const auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    process_sample s;
    s.cpu_seconds = static_cast<double>(utime + stime) / ticks;
    s.start_time_seconds = static_cast<double>(*boot) + static_cast<double>(start_ticks) / ticks;
    s.virtual_bytes = vsize;
    s.resident_bytes =
        static_cast<std::uint64_t>(rss_pages) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    s.open_fds = count_open_fds();
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        s.max_fds = limit.rlim_cur;
    }
    return s;
}

void render_process_metrics(std::string& out, const process_sample& s) {
    auto line = [&](std::string_view name, std::string_view type, std::string_view help,
                    auto value) {
        fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name,
                       help, type, value);
    };
    line("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
         s.cpu_seconds);
    line("process_open_fds", "gauge", "Number of open file descriptors.", s.open_fds);
    if (s.max_fds) {
        line("process_max_fds", "gauge", "Maximum number of open file descriptors.", *s.max_fds);
    }
    line("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", s.virtual_bytes);
    line("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         s.resident_bytes);
    line("process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.", s.start_time_seconds);
}

} // namespace tarry::server

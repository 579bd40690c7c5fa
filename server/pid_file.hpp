#pragma once

// nginx's `pid`: the process id in a file, for what signals tarry without systemd (logrotate's
// postrotate sends SIGUSR1 to it; a container's supervisor, scripts). Off unless configured;
// the package's unit sets it.

#include <filesystem>

namespace tarry::server {

/// Writes the process id to `path` (written beside it, then renamed over it: a reader never sees
/// a half-written number) and removes the file when destroyed, unless another process has
/// written its own id there meanwhile. Throws std::system_error if it cannot be written.
class pid_file {
public:
    explicit pid_file(std::filesystem::path path);
    pid_file(const pid_file&) = delete;
    pid_file& operator=(const pid_file&) = delete;
    ~pid_file();

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

private:
    std::filesystem::path path_;
};

} // namespace tarry::server

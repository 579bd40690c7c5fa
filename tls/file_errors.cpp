#include "file_errors.hpp"

#include <openssl/err.h>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tarry::tls {

std::string last_error() {
    const unsigned long e = ERR_peek_last_error();
    ERR_clear_error();
    if (e == 0) return "unknown error";
    const char* reason = ERR_reason_error_string(e);
    return reason != nullptr ? reason : "error " + std::to_string(e);
}

std::string reading_user() {
    const uid_t uid = ::geteuid();
    passwd pw{};
    passwd* found = nullptr;
    char text[1024];
    if (::getpwuid_r(uid, &pw, text, sizeof text, &found) == 0 && found != nullptr)
        return found->pw_name;
    return "uid " + std::to_string(uid);
}

std::string unreadable(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        if (e == ENOENT || e == ENOTDIR) return "missing (no such file)";
        if (e == EACCES || e == EPERM) return "permission denied for user " + reading_user();
        return std::strerror(e);
    }
    struct stat st {};
    const bool dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    ::close(fd);
    return dir ? "a directory, not a file" : std::string{};
}

} // namespace tarry::tls

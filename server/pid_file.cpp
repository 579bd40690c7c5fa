#include "pid_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <system_error>

namespace tarry::server {
namespace {

std::string our_pid() {
    return std::to_string(::getpid()) + "\n";
}

} // namespace

pid_file::pid_file(std::filesystem::path path) : path_(std::move(path)) {
    std::filesystem::path temporary = path_;
    temporary += ".new";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << our_pid();
        out.close();
        if (!out) {
            const int err = errno;
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw std::system_error(err != 0 ? err : EIO, std::generic_category(),
                                    "pid_file: cannot write " + temporary.string());
        }
    }
    std::error_code ec;
    std::filesystem::rename(temporary, path_, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw std::system_error(ec, "pid_file: cannot write " + path_.string());
    }
}

pid_file::~pid_file() {
    // A second tarry started with the same file owns it now: leave its number there.
    std::ifstream in(path_);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text != our_pid()) return;
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
}

} // namespace tarry::server

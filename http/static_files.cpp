#include "static_files.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>
#include <utility>

namespace tarry::http {
namespace {

int hex(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// Decodes and normalises a path into "a/b/c" (no leading slash). Returns 0 or a status.
unsigned normalise(std::string_view path, std::string& out) {
    std::string decoded;
    decoded.reserve(path.size());
    for (std::size_t i = 0; i < path.size(); ++i) {
        char c = path[i];
        if (c == '%') {
            if (i + 2 >= path.size()) return 400;
            const int hi = hex(path[i + 1]);
            const int lo = hex(path[i + 2]);
            if (hi < 0 || lo < 0) return 400;
            c = static_cast<char>(hi * 16 + lo);
            i += 2;
            if (c == '/' || c == '\\') return 404; // an encoded separator never names a file
            if (c == '\0') return 400;
        }
        decoded.push_back(c);
    }
    out.clear();
    std::size_t start = 0;
    while (start <= decoded.size()) {
        auto end = decoded.find('/', start);
        if (end == std::string::npos) end = decoded.size();
        const std::string_view seg(decoded.data() + start, end - start);
        start = end + 1;
        if (seg.empty() || seg == ".") continue;
        if (seg == "..") return 404;
        if (!out.empty()) out.push_back('/');
        out.append(seg);
    }
    return 0;
}

int open_beneath(int root, const std::string& rel) {
    open_how how{};
    // O_NONBLOCK: opening a FIFO in the docroot must not block the worker (it is then not a
    // regular file, so 404); reads of regular files ignore the flag.
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(
        ::syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how));
}

unsigned status_for_errno(int err) noexcept {
    return err == EACCES || err == EPERM ? 403 : 404;
}

} // namespace

static_files::static_files(const std::filesystem::path& root)
    : root_(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (!root_) throw std::system_error(errno, std::generic_category(), "docroot " + root.string());
}

static_files::file static_files::open(std::string_view target) const {
    file f;
    const auto query = target.find_first_of("?#");
    std::string rel;
    if (const unsigned status = normalise(target.substr(0, query), rel); status != 0) {
        f.status = status;
        return f;
    }
    unique_fd fd(open_beneath(root_.get(), rel));
    if (!fd) {
        f.status = status_for_errno(errno);
        return f;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return f;
    if (S_ISDIR(st.st_mode)) {
        rel += rel.empty() ? "index.html" : "/index.html";
        fd.reset(open_beneath(root_.get(), rel));
        if (!fd || ::fstat(fd.get(), &st) != 0) {
            f.status = fd ? 404U : status_for_errno(errno);
            return f;
        }
    }
    if (!S_ISREG(st.st_mode)) return f;
    f.status = 200;
    f.fd = std::move(fd);
    f.size = static_cast<std::uint64_t>(st.st_size);
    f.content_type = content_type(rel);
    return f;
}

std::string_view static_files::content_type(std::string_view name) noexcept {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 18> types{{
        {"html", "text/html; charset=utf-8"},
        {"htm", "text/html; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},
        {"js", "text/javascript; charset=utf-8"},
        {"mjs", "text/javascript; charset=utf-8"},
        {"json", "application/json"},
        {"txt", "text/plain; charset=utf-8"},
        {"xml", "application/xml"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"webp", "image/webp"},
        {"ico", "image/x-icon"},
        {"wasm", "application/wasm"},
        {"pdf", "application/pdf"},
        {"woff2", "font/woff2"},
    }};
    const auto dot = name.rfind('.');
    const auto slash = name.rfind('/');
    if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
        const auto ext = name.substr(dot + 1);
        for (const auto& [e, type] : types) {
            if (ext.size() == e.size() &&
                std::equal(ext.begin(), ext.end(), e.begin(),
                           [](char a, char b) { return (a | 0x20) == b; }))
                return type;
        }
    }
    return "application/octet-stream";
}

} // namespace tarry::http

#include "static_files.hpp"

#include "mime_types.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
    // Symlinks are followed while they stay beneath the root (a `current` link to a release,
    // assets linked between releases); the kernel refuses, at the open itself, any resolution
    // that would leave it: `..` past the root, an absolute link, a link swapped meanwhile.
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(
        ::syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how));
}

unsigned status_for_errno(int err) noexcept {
    switch (err) {
    case EACCES:
    case EPERM:
        return 403;
    case EMFILE:
    case ENFILE:
        // Out of descriptors is the server's passing trouble, not a missing file: a 503 tells
        // a client or a cache to try again instead of remembering a 404 (nginx answers 500).
        return 503;
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
    case ELOOP:  // a symlink loop
    case EXDEV:  // an escape, refused by RESOLVE_BENEATH (a link or `..` leaving the root)
    case ENXIO:  // a socket or a device without its driver
    case ENODEV: // likewise
        return 404;
    default:
        return 500;
    }
}

void fill_stat(static_files::file& f, const struct stat& st) noexcept {
    f.size = static_cast<std::uint64_t>(st.st_size);
    f.mtime = static_cast<std::int64_t>(st.st_mtim.tv_sec);
    f.inode = static_cast<std::uint64_t>(st.st_ino);
}

} // namespace

static_files::static_files(const std::filesystem::path& root)
    : root_(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (!root_) throw std::system_error(errno, std::generic_category(), "docroot " + root.string());
}

static_files::file static_files::open(std::string_view target) const {
    file f;
    const auto query = target.find_first_of("?#");
    const std::string_view path = target.substr(0, query);
    std::string rel;
    if (const unsigned status = normalise(path, rel); status != 0) {
        f.status = status;
        return f;
    }
    unique_fd fd(open_beneath(root_.get(), rel));
    if (!fd) {
        f.status = status_for_errno(errno);
        return f;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        f.status = 500;
        return f;
    }
    // A path ending in a slash (or "/.") names a directory: a file there is not found.
    const bool names_directory =
        path.empty() || path.back() == '/' || path == "." || path.ends_with("/.");
    if (S_ISDIR(st.st_mode)) {
        if (!names_directory) {
            // As nginx does: relative references in the index must resolve below the directory.
            f.status = 301;
            f.location.reserve(target.size() + 1);
            f.location.append(path);
            f.location.push_back('/');
            if (query != std::string_view::npos && target[query] == '?')
                f.location.append(target.substr(query, target.find('#', query) - query));
            return f;
        }
        rel += rel.empty() ? "index.html" : "/index.html";
        fd.reset(open_beneath(root_.get(), rel));
        if (!fd) {
            f.status = status_for_errno(errno);
            return f;
        }
        if (::fstat(fd.get(), &st) != 0) {
            f.status = 500;
            return f;
        }
    } else if (names_directory) {
        return f;
    }
    if (!S_ISREG(st.st_mode)) return f;
    f.status = 200;
    f.fd = std::move(fd);
    fill_stat(f, st);
    f.content_type = content_type(rel);
    f.path = std::move(rel);
    return f;
}

static_files::file static_files::open_sibling(const std::string& path,
                                              std::string_view suffix) const {
    file f;
    std::string rel;
    rel.reserve(path.size() + suffix.size());
    rel.append(path);
    rel.append(suffix);
    unique_fd fd(open_beneath(root_.get(), rel));
    if (!fd) {
        f.status = status_for_errno(errno);
        return f;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return f;
    f.status = 200;
    f.fd = std::move(fd);
    fill_stat(f, st);
    f.path = std::move(rel);
    return f;
}

std::string_view static_files::content_type(std::string_view name) noexcept {
    return mime_type(name);
}

} // namespace tarry::http

#include "shared_socket.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace tarry::server {
namespace {

sockaddr_un unix_address(const std::filesystem::path& path) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    const std::string& p = path.native();
    std::memcpy(sa.sun_path, p.data(), std::min(p.size(), sizeof sa.sun_path - 1));
    return sa;
}

[[noreturn]] void fail(const listen_address& addr, const char* what, int err) {
    throw std::system_error(err, std::generic_category(),
                            "cannot listen on " + addr.name() + " (" + what + ")");
}

/// Whether the socket file at `path` belongs to a live process. Only a refused connect says
/// it does not (a stream socket nobody listens on any more); anything else, a full backlog or
/// a socket of another type (a datagram socket such as /dev/log), is someone's.
bool someone_listens(const std::filesystem::path& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return true; // cannot tell: never remove it
    const sockaddr_un sa = unix_address(path);
    const bool stale = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0 &&
                       (errno == ECONNREFUSED || errno == ENOENT);
    ::close(fd);
    return !stale;
}

uid_t user_id(const std::string& name, const listen_address& addr, gid_t& group) {
    passwd pw{};
    passwd* found = nullptr;
    std::string buf(16384, '\0');
    if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        throw config_error("listen: " + addr.name() + ": owner=" + addr.owner + ": no user " +
                           name);
    group = pw.pw_gid;
    return pw.pw_uid;
}

gid_t group_id(const std::string& name, const listen_address& addr) {
    group gr{};
    group* found = nullptr;
    std::string buf(16384, '\0');
    if (::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        throw config_error("listen: " + addr.name() + ": owner=" + addr.owner + ": no group " +
                           name);
    return gr.gr_gid;
}

/// The owner= of `addr` as ids (uid, gid), naming what does not exist.
std::pair<uid_t, gid_t> owner_ids(const listen_address& addr) {
    const std::size_t colon = addr.owner.find(':');
    gid_t gid = 0;
    const uid_t uid = user_id(addr.owner.substr(0, colon), addr, gid);
    if (colon != std::string::npos) gid = group_id(addr.owner.substr(colon + 1), addr);
    return {uid, gid};
}

} // namespace

void check_unix_address(const listen_address& addr) {
    const std::filesystem::path dir = addr.unix_path.has_parent_path()
                                          ? addr.unix_path.parent_path()
                                          : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw config_error("listen: " + addr.name() + ": the directory " + dir.string() +
                           " does not exist");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw config_error("listen: " + addr.name() + ": cannot create the socket in " +
                           dir.string() + " (" + std::generic_category().message(errno) + ")");
    if (!addr.owner.empty()) owner_ids(addr);
}

void apply_unix_permissions(const listen_address& addr) {
    const char* path = addr.unix_path.c_str();
    if (addr.mode && ::chmod(path, static_cast<mode_t>(*addr.mode)) != 0)
        fail(addr, "chmod", errno);
    if (!addr.owner.empty()) {
        const auto [uid, gid] = owner_ids(addr);
        if (::chown(path, uid, gid) != 0) fail(addr, "chown", errno);
    }
}

std::shared_ptr<shared_socket> shared_socket::bind_unix(const listen_address& addr) {
    check_unix_address(addr);
    const std::filesystem::path& path = addr.unix_path;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            throw config_error("listen: " + addr.name() + " exists and is not a socket");
        if (someone_listens(path))
            throw config_error("listen: " + addr.name() + " is already in use by another process");
        ::unlink(path.c_str()); // left by a process that is gone
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(addr, "socket", errno);
    auto sock = std::make_shared<shared_socket>(fd, addr, false);
    const sockaddr_un sa = unix_address(path);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
        fail(addr, "bind", errno);
    if (::stat(path.c_str(), &st) == 0) {
        sock->remove_ = true;
        sock->dev_ = st.st_dev;
        sock->ino_ = st.st_ino;
    }
    // Before listen(): until then a connect is refused, so nobody gets in under the umask's
    // permissions.
    apply_unix_permissions(addr);
    if (::listen(fd, SOMAXCONN) != 0) fail(addr, "listen", errno);
    return sock;
}

shared_socket::shared_socket(int fd, listen_address addr, bool remove_at_close) noexcept
    : fd_(fd), addr_(std::move(addr)), remove_(remove_at_close) {}

shared_socket::~shared_socket() {
    ::close(fd_);
    if (!remove_) return;
    struct stat st {};
    if (::stat(addr_.unix_path.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
        ::unlink(addr_.unix_path.c_str());
}

void shared_socket::set_permissions(const listen_address& addr) {
    if (addr.mode == addr_.mode && addr.owner == addr_.owner) return;
    apply_unix_permissions(addr);
    addr_.mode = addr.mode;
    addr_.owner = addr.owner;
}

std::vector<std::shared_ptr<shared_socket>> take_inherited_sockets() {
    // sd_listen_fds(3): descriptors 3 .. 3+LISTEN_FDS-1, meant for the process LISTEN_PID.
    std::vector<std::shared_ptr<shared_socket>> sockets;
    const char* pid = std::getenv("LISTEN_PID");
    const char* fds = std::getenv("LISTEN_FDS");
    if (pid == nullptr || fds == nullptr) return sockets;
    // Parsed strictly, as sd_listen_fds() does: a value that is not a whole number is not ours.
    const auto number = [](const char* text, long& out) {
        const char* end = text + std::strlen(text);
        const auto r = std::from_chars(text, end, out);
        return r.ec == std::errc{} && r.ptr == end && r.ptr != text;
    };
    long for_pid = 0;
    long count = 0;
    const bool pid_ok = number(pid, for_pid);
    const bool count_ok = number(fds, count);
    const std::string count_text = fds; // unsetenv may free what getenv returned
    ::unsetenv("LISTEN_PID");
    ::unsetenv("LISTEN_FDS");
    ::unsetenv("LISTEN_FDNAMES");
    if (!pid_ok || for_pid != ::getpid()) return sockets;
    constexpr int first = 3;
    // At most as many as the process may have open: a larger count is a broken environment.
    const long most = ::sysconf(_SC_OPEN_MAX) - first;
    if (!count_ok || count < 0 || count > most)
        throw config_error("systemd passed LISTEN_FDS=" + count_text +
                           ", which is not a count of descriptors");
    if (count == 0) return sockets;
    for (int fd = first; fd < first + static_cast<int>(count); ++fd) {
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        int listening = 0;
        socklen_t len = sizeof listening;
        if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0)
            throw config_error("systemd passed descriptor " + std::to_string(fd) +
                               ", which is not a listening stream socket (use ListenStream=)");
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        // Its address, to match a configured one and to name it in messages.
        listen_address addr;
        sockaddr_storage ss{};
        socklen_t sl = sizeof ss;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl);
        if (ss.ss_family == AF_UNIX) {
            const auto& un = reinterpret_cast<const sockaddr_un&>(ss);
            const std::size_t n =
                sl > offsetof(sockaddr_un, sun_path) ? sl - offsetof(sockaddr_un, sun_path) : 0;
            // An abstract socket's name starts with NUL: written "@name", as ss(8) does.
            addr.unix_path = n > 0 && un.sun_path[0] == '\0'
                                 ? "@" + std::string(un.sun_path + 1, n - 1)
                                 : std::string(un.sun_path, ::strnlen(un.sun_path, n));
        } else {
            boost::asio::ip::tcp::endpoint ep;
            std::memcpy(ep.data(), &ss, std::min<std::size_t>(sl, ep.capacity()));
            ep.resize(sl);
            addr = listen_address(ep.address().to_string(), ep.port());
        }
        sockets.push_back(std::make_shared<shared_socket>(fd, std::move(addr), false));
    }
    return sockets;
}

} // namespace tarry::server

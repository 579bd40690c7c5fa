#pragma once

#include "config.hpp"

#include <sys/types.h>

#include <memory>
#include <vector>

namespace tarry::server {

/// A listening socket every worker accepts from, where SO_REUSEPORT cannot give each its own:
/// a Unix socket, or one systemd passed (socket activation). Each worker's listener polls a
/// duplicate of it; it closes when the last holder lets go, and a Unix socket's file is then
/// removed if it is still the one bound here (a newer process may have bound the path since).
class shared_socket {
public:
    /// Binds and listens on a Unix socket, applying the address's mode and owner before
    /// listen() so that no client connects under the wrong permissions. A path where something
    /// still listens is refused (config_error, as a busy TCP port is); a stale socket file left
    /// by a process that died is replaced. Throws std::system_error on other failures.
    static std::shared_ptr<shared_socket> bind_unix(const listen_address& addr);

    shared_socket(int fd, listen_address addr, bool remove_at_close) noexcept;
    shared_socket(const shared_socket&) = delete;
    shared_socket& operator=(const shared_socket&) = delete;
    ~shared_socket();

    [[nodiscard]] int fd() const noexcept { return fd_; }
    /// Where it is bound: as configured, or as getsockname() said for one systemd passed
    /// (compare with listen_address::same_socket).
    [[nodiscard]] const listen_address& address() const noexcept { return addr_; }
    /// A reload changed the Unix socket's mode or owner: applied to the file in place.
    void set_permissions(const listen_address& addr);

private:
    int fd_;
    listen_address addr_;
    bool remove_ = false; ///< unlink the file at close (bound here, not inherited)
    dev_t dev_ = 0;       ///< the socket file bound here, to unlink only that one
    ino_t ino_ = 0;
};

/// The sockets systemd passed (LISTEN_FDS, for this process: LISTEN_PID), taken once: the
/// variables are cleared so that nothing started later takes them too. Empty without them.
std::vector<std::shared_ptr<shared_socket>> take_inherited_sockets();

/// What can be told of a Unix socket address without binding it: its directory exists and is
/// writable, its owner= names a user (and group) this machine has. Throws config_error.
void check_unix_address(const listen_address& addr);

/// `addr` as a file's mode and owner demand it (chmod, chown), naming the address on failure.
void apply_unix_permissions(const listen_address& addr);

} // namespace tarry::server

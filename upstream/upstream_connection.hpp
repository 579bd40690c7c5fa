#pragma once

#include "upstream_kinds.hpp"

#include <tarry/timeouts/idle_entry.hpp>
#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/intrusive/list_hook.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <string>

namespace tarry::upstream {

class upstream_pool;

/// Who an upstream connection reports to while it carries a request (a proxied exchange).
class connection_user {
public:
    virtual void on_connected(const boost::system::error_code& ec) noexcept = 0;
    virtual void on_written(const boost::system::error_code& ec) noexcept = 0;
    virtual void on_read(const boost::system::error_code& ec, std::size_t n) noexcept = 0;
    /// The current phase's timeout expired; the socket is still open.
    virtual void on_timeout() noexcept = 0;

protected:
    connection_user() = default;
    connection_user(const connection_user&) = default;
    connection_user& operator=(const connection_user&) = default;
    ~connection_user() = default;
};

/// An upstream connection's read buffer, from a per-thread free list while the connection
/// carries a request, given back while it waits in a pool.
struct read_buffer {
    static constexpr std::size_t size = 64 * std::size_t{1024};
    std::array<char, size> bytes;
};

/// One connection to one upstream server, on a plain Asio socket (TCP or a unix socket through
/// the generic protocol). It has one timeout entry, enrolled in the list of what it waits for
/// now (upstream_kinds): the connect, a write, the first response byte, the next response
/// bytes, or its time idle in the pool. Completions go to its user while it carries a request,
/// to its pool while idle. Asynchronous operations hold it by shared_ptr, so it outlives its
/// pool and its user.
///
/// Idle in a pool it holds no 64 KiB buffer: its pending read goes into a small one of its own
/// (an upstream close, or bytes it should not send, both make it unusable).
class upstream_connection : public std::enable_shared_from_this<upstream_connection> {
public:
    using socket_type = boost::asio::generic::stream_protocol::socket;
    using endpoint_type = boost::asio::generic::stream_protocol::endpoint;
    static constexpr std::size_t read_size = read_buffer::size;

    upstream_connection(boost::asio::io_context& io, timeouts::timeout_registry& registry,
                        std::weak_ptr<upstream_pool> pool);
    upstream_connection(const upstream_connection&) = delete;
    upstream_connection& operator=(const upstream_connection&) = delete;
    ~upstream_connection() = default;

    void connect(const endpoint_type& to);
    /// Writes all of `bytes`, which must stay alive until on_written.
    void write(std::string_view bytes);
    /// Reads up to `most` bytes (at most read_size) into buffer(); no effect if a read is
    /// pending already. `small`: into the connection's own 1 KiB buffer, the 64 KiB one given
    /// back (a quiet tunnel).
    void read(std::size_t most = read_size, bool small = false);
    /// Gives the 64 KiB buffer back while no read is pending (a paused response).
    void release_buffer() noexcept;
    /// Shuts the writing side (a tunnel passes the client's half-close on).
    void shutdown_send() noexcept;

    /// Enrolls the timeout entry in (`kind`, `d`), what it waits for now, or touches it if it
    /// is there already.
    void arm(const timeouts::timeout_kind& kind, timeouts::clock::duration d);
    void touch() noexcept { timeouts::timeout_registry::touch(entry_); }
    void disarm() noexcept { timeouts::timeout_registry::unenroll(entry_); }

    void set_user(connection_user* u) noexcept { user_ = u; }
    [[nodiscard]] connection_user* user() const noexcept { return user_; }
    void close() noexcept;
    [[nodiscard]] bool is_open() const noexcept { return sock_.is_open(); }
    [[nodiscard]] bool reading() const noexcept { return reading_; }

    /// The bytes of the last read.
    [[nodiscard]] const char* buffer() const noexcept { return last_; }
    /// Whether the last read would have fit the connection's own small buffer.
    [[nodiscard]] bool last_read_small() const noexcept { return last_n_ < idle_buf_.size(); }

    /// Idle in its pool: gives its 64 KiB buffer back and keeps a read pending into a small one
    /// of its own, which tells the pool if the upstream closes it; taken again, that read is the
    /// first of the response. Throws std::bad_alloc if the read cannot be queued.
    void watch_idle();

    /// The connection whose timeout entry `e` is (walking an upstream kind's list): checked.
    static upstream_connection& from(const timeouts::idle_entry& e) noexcept {
        return e.owner<upstream_connection>();
    }
    /// Closes it if it waits idle in its pool, to free its descriptor. False otherwise.
    bool shed() noexcept;
    /// Frees the read buffers this thread keeps for reuse.
    static void release_kept() noexcept;

    /// Requests this connection carried (1 on its first).
    std::uint64_t uses = 0;

    // The pool's: its place in the pool's idle list, and what keeps it alive there.
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>
        pool_hook;
    std::shared_ptr<upstream_connection> pooled; ///< set while idle in the pool
    bool hinted = false; ///< its idle time was shortened by the upstream's Keep-Alive hint

private:
    void on_expire() noexcept;
    void start_read(char* into, std::size_t size);

    socket_type sock_;
    timeouts::timeout_registry& registry_;
    std::weak_ptr<upstream_pool> pool_;
    timeouts::idle_entry entry_;
    std::unique_ptr<read_buffer> buf_; ///< while it carries a request
    const char* last_ = nullptr;       ///< where the last read went
    connection_user* user_ = nullptr;
    std::size_t last_n_ = 0; ///< bytes of the last read
    bool reading_ = false;
    std::array<char, 1024> idle_buf_{}; ///< the read pending while idle (a response's start)
};

} // namespace tarry::upstream

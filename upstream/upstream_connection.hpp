#pragma once

#include "upstream_kinds.hpp"

#include <tarry/net/poller.hpp>
#include <tarry/timeouts/idle_entry.hpp>
#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/intrusive/list_hook.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace tarry::tls {
class client_context;
class client_stream;
class session_slot;
} // namespace tarry::tls

namespace tarry::upstream {

class upstream_pool;

/// What a TLS connection to one server is made with (its pool's): the upstream's context, the
/// name the server's certificate is verified against, and the slot its sessions go to.
struct tls_target {
    const tls::client_context* context = nullptr;
    std::string name;
    tls::session_slot* slot = nullptr;
};

/// Who an upstream connection reports to while it carries a request (a proxied exchange).
/// Never called from within the connection's own calls: from the worker's poller, or a posted
/// handler.
class connection_user {
public:
    virtual void on_connected(const boost::system::error_code& ec) noexcept = 0;
    /// A write that write() could not finish at once has finished, or failed.
    virtual void on_written(const boost::system::error_code& ec) noexcept = 0;
    /// `n` bytes are at buffer(), until this returns; or `ec` (asio::error::eof: the upstream
    /// closed its side).
    virtual void on_read(const boost::system::error_code& ec, std::size_t n) noexcept = 0;
    /// The current phase's timeout expired; the socket is still open.
    virtual void on_timeout() noexcept = 0;

protected:
    connection_user() = default;
    connection_user(const connection_user&) = default;
    connection_user& operator=(const connection_user&) = default;
    ~connection_user() = default;
};

/// One connection to one upstream server (TCP, or a unix socket), a non-blocking socket in the
/// worker's edge-triggered poller, like the client connections: registered once when it
/// connects, its readiness tracked here (set by an edge, cleared by EAGAIN or a short read), so
/// a request costs one send and one recv upstream, with no re-arming and no recv that finds
/// nothing.
///
/// It reads into one 64 KiB buffer per thread, or, when its input edge comes in a batch with
/// the worker's batched reads, into the space the poller lends for that batch (net::poller); its
/// user consumes the bytes before on_read returns (parsed, copied into the client's output): a
/// connection holds no buffer of its own, busy or idle. It has one timeout entry, enrolled in the
/// list of what it waits for now (upstream_kinds): the connect, a write, the first response byte,
/// the next response bytes, or its time idle in the pool. Events go to its user while it carries a
/// request, to its pool while idle (any byte, EOF or error makes an idle connection unusable). Its
/// owners hold it by shared_ptr, so it outlives its pool and its user; it may be freed in the
/// middle of a poller batch (it forgets its events first).
///
/// Over TLS (https:// servers), a tls::client_stream does the socket calls, on the same
/// non-blocking socket and the same edges: OpenSSL's handshake runs after the TCP connect,
/// retried at each edge it waits for (a want_read / want_write clears the readiness it found
/// missing), within connect_timeout, and on_connected comes when it is done. OpenSSL carries
/// the first exchange (the server's session tickets come with it); when the connection first
/// goes idle, a TLS 1.3 connection's records become tarry's own and OpenSSL's object is freed
/// (tls/client_stream), so an idle pooled TLS connection keeps two keys and no buffer. Such a
/// connection reads and sends by itself (not in the worker's io_uring batches: the records are
/// the stream's to cut).
class upstream_connection final : public net::pollable,
                                  public std::enable_shared_from_this<upstream_connection> {
public:
    using endpoint_type = boost::asio::generic::stream_protocol::endpoint;
    /// The most one read takes.
    static constexpr std::size_t read_size = 64 * std::size_t{1024};

    upstream_connection(boost::asio::io_context& io, net::poller& poll,
                        timeouts::timeout_registry& registry, std::weak_ptr<upstream_pool> pool);
    upstream_connection(const upstream_connection&) = delete;
    upstream_connection& operator=(const upstream_connection&) = delete;
    ~upstream_connection();

    /// Connects to `to`, and with `tls` makes the TLS handshake: on_connected follows. `tls`
    /// must outlive the connection's socket (its pool's).
    void connect(const endpoint_type& to, const tls_target* tls = nullptr);
    /// Sends `bytes`. True if all of them went at once (nothing follows); false if on_written
    /// follows, and `bytes` must stay alive until it does.
    bool write(std::string_view bytes);
    /// Asks for the next bytes, at most `most` (at most read_size): on_read follows. No effect if
    /// a read is asked already or the connection is closed.
    void read(std::size_t most = read_size);
    /// The bytes of the write in flight were moved by their owner from `from` to `to` (a tunnel
    /// taking over an exchange's): the rest of the write follows them.
    void output_moved(const char* from, const char* to) noexcept {
        if (out_left_ != 0) out_ = to + (out_ - from);
    }
    /// Shuts the writing side (a tunnel passes the client's half-close on).
    void shutdown_send() noexcept;
    /// It carries a tunnel now, and may never go idle: a TLS one leaves its thread's burst of
    /// new connections, so that the burst's end (and its heap trim) does not wait for it.
    void to_tunnel() noexcept;

    /// Enrolls the timeout entry in (`kind`, `d`), what it waits for now, or touches it if it
    /// is there already.
    void arm(const timeouts::timeout_kind& kind, timeouts::clock::duration d);
    void touch() noexcept { timeouts::timeout_registry::touch(entry_); }
    void disarm() noexcept { timeouts::timeout_registry::unenroll(entry_); }

    void set_user(connection_user* u) noexcept { user_ = u; }
    [[nodiscard]] connection_user* user() const noexcept { return user_; }
    void close() noexcept;
    [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }

    /// The bytes of the read being delivered (valid during on_read).
    [[nodiscard]] const char* buffer() const noexcept;

    /// Going idle in its pool: whether nothing waits on the socket (no byte, no EOF, no error),
    /// so it can carry another request. From then on any event tells the pool.
    [[nodiscard]] bool quiet() noexcept;

    /// The connection whose timeout entry `e` is (walking an upstream kind's list): checked.
    static upstream_connection& from(const timeouts::idle_entry& e) noexcept {
        return e.owner<upstream_connection>();
    }
    /// Closes it if it waits idle in its pool, to free its descriptor. False otherwise.
    bool shed() noexcept;
    /// Frees this thread's read buffer (kept for the next read).
    static void release_kept() noexcept;

    /// Whether `ec` (given to on_connected) is a TLS handshake that failed, certificate
    /// verification included; and why, in words, until the next one on this thread.
    [[nodiscard]] static bool tls_failed(const boost::system::error_code& ec) noexcept;
    [[nodiscard]] static const std::string& tls_failure() noexcept;
    [[nodiscard]] bool secure() const noexcept { return tls_ != nullptr; }
    /// Over TLS: whether the records are tarry's own (OpenSSL's object freed).
    [[nodiscard]] bool own_records() const noexcept;

    /// Requests this connection carried (1 on its first).
    std::uint64_t uses = 0;

    // The pool's: its place in the pool's idle list, and what keeps it alive there.
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>
        pool_hook;
    std::shared_ptr<upstream_connection> pooled; ///< set while idle in the pool
    bool hinted = false; ///< its idle time was shortened by the upstream's Keep-Alive hint

    // net::pollable
    void on_events(std::uint32_t events) noexcept override;
    net::io_batch::read_target read_ahead(std::uint32_t events) noexcept override;
    void on_read_ahead(std::uint32_t events, const net::io_batch::read_target& t,
                       long result) noexcept override;

private:
    enum class sent : std::uint8_t { all, wait, failed };

    void on_expire() noexcept;
    /// The worker's batch of sends asks what is to go, then says how it went.
    static net::io_batch::output batched_output(void* c) noexcept;
    static void batched_sent(void* c, long result, std::size_t asked) noexcept;
    static const net::io_batch::owner_calls batch_calls;
    /// Delivers what is due: the connect's result, a write's end, reads while the socket has
    /// bytes, or (idle) the event to the pool.
    void run() noexcept;
    /// run() from a posted handler: what is due was found outside the poller's events.
    void kick();
    sent flush() noexcept;
    /// One read into `to`: bytes, 0 at the end, or -errno (-EAGAIN: nothing now).
    long receive(char* to, std::size_t most) noexcept;
    /// The TLS handshake, once more: false while it waits for an edge; else on_connected is
    /// delivered.
    bool handshake() noexcept;
    /// Idle over TLS, readable: whether what came was records that carry nothing for HTTP
    /// (taken), so that it can stay in its pool.
    bool tls_quiet() noexcept;
    /// Going idle over TLS: the stream told, and the heap given back after a burst.
    void tls_idle() noexcept;
    void fail_soon(int error);

    boost::asio::io_context& io_;
    net::poller& poll_;
    timeouts::timeout_registry& registry_;
    std::weak_ptr<upstream_pool> pool_;
    timeouts::idle_entry entry_;
    std::unique_ptr<tls::client_stream> tls_; ///< TLS: from the connect to the close
    connection_user* user_ = nullptr;
    const char* out_ = nullptr; ///< what write() has not sent yet
    std::size_t out_left_ = 0;
    std::size_t want_ = 0; ///< the size of the read asked for (0: none)
    int fd_ = -1;
    int error_ = 0; ///< a connect or send failure found at once, delivered by run()
    // What the poller said (edges), and what is owed.
    bool readable_ = false;
    bool writable_ = false;
    bool hung_up_ = false;
    bool connecting_ = false;
    bool handshaking_ = false; ///< TLS: connected, the handshake not done
    bool write_owed_ = false;  ///< on_written is owed
    bool running_ = false;     ///< inside run(): what is asked now is delivered by it
    bool kicked_ = false;      ///< a run() is posted
    bool deferred_ = false;    ///< the write waits in the worker's batch of sends
};

} // namespace tarry::upstream

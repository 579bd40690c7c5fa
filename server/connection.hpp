#pragma once

#include "close_reason.hpp"
#include "conn_phase.hpp"
#include "connection_context.hpp"
#include "worker_metrics.hpp"
#include <tarry/net/poller.hpp>

#include <tarry/http/session.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tarry::server {

class connection;
using connection_ptr = boost::intrusive_ptr<connection>;

/// What a connection holds only while it has a request in progress: taken from a per-thread
/// free list when bytes arrive, given back when the connection goes idle, so that an idle
/// keep-alive connection is the connection object alone.
struct io_state {
    std::string in;                   ///< request bytes: in_len of them, from the start
    std::string out;                  ///< queued responses, written from out_off
    char peer[INET6_ADDRSTRLEN] = {}; ///< the client's address as text, once asked; "" before
    timeouts::clock::time_point phase_start{};   ///< when a phase with a total began
    timeouts::clock::time_point request_start{}; ///< the first byte of the request in progress
    timeouts::clock::time_point written_at{};    ///< the last response's end, when just measured
    std::uint32_t measured = 0;                  ///< session requests() whose duration is counted
    std::uint32_t in_len = 0;
    std::uint32_t out_off = 0;
};

/// One client connection: socket I/O and timeouts around an http::session.
///
/// I/O is readiness-based, as nginx does it: the socket sits in the worker's edge-triggered
/// poller from accept to close, the connection remembers which edges arrived (readable_,
/// writable_; cleared when a call returns EAGAIN) and reads and writes with non-blocking system
/// calls directly: one recv and one send per request, no other system call. An idle keep-alive
/// connection holds no read buffer, no parser, no output buffer and no pending operation: they
/// come from per-thread free lists when bytes arrive and go back when the response is written.
/// What stays is this object, 184 bytes (a 192-byte heap chunk): the layout below is ordered
/// and sized for it (checked by a static_assert in connection.cpp).
///
/// The connection is always enrolled in exactly one timeout list, the one for its phase's kind
/// (client_kinds) and duration:
///   handshake  - TLS: from accept until the handshake is done; closed silently at
///                handshake_timeout (then silent, from the end of the handshake)
///   silent     - from accept until the first byte; closed silently at header_timeout
///   header     - from the first byte of a request until its header is complete; total
///   body       - between two reads of a request body; touched on every read
///   send       - between two writes of a response the client is not draining; touched on progress
///   keep_alive - idle between requests; touched when a response is fully written (in the
///                retired kind instead once pressure asked it to close after its next response)
///   linger     - after an error response, reading and discarding until the client closes
///   waiting    - in no list: the request is read and its handler answers later (the handler's
///                own timeouts, such as an upstream's, bound the wait)
///
/// Besides, it is linked into its worker's list of live connections from start() to close().
///
/// Lifetime: the worker's accept gives it one reference, which close() hands to a posted
/// handler, so the object outlives the event batch or expiry round that closed it. The count is
/// intrusive and single-threaded: a connection never leaves its worker's thread.
class connection : public http::session_transport,
                   public boost::intrusive_ref_counter<connection, boost::thread_unsafe_counter> {
public:
    /// Takes ownership of `fd` (connected, non-blocking). `proxy_protocol`: the first bytes
    /// are a PROXY header naming the client, read before any request. `tls`: a TLS handshake
    /// comes first, and every byte after it is TLS (its state is in ctx.tls, beside us).
    connection(const connection_context& ctx, int fd, bool proxy_protocol = false,
               bool tls = false);
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection();

    /// Registers with the poller and waits for the first request. Throws std::bad_alloc if the
    /// connection cannot be enrolled; the caller then closes it.
    void start();
    /// Readiness edges from the poller (called directly, not through a vtable: see poller).
    void on_events(std::uint32_t events) noexcept;
    /// The poller's handler for its tagged owners, which are all connections.
    static void on_poll(void* c, std::uint32_t events) noexcept {
        static_cast<connection*>(c)->on_events(events);
    }
    /// The poller's reads ahead for connections: a batch's reads in one system call.
    static const net::poller::tagged_reads reads;
    /// The batch's read for this connection landed in its buffer (result > 0: bytes).
    static void read_landed(void* c, long result) noexcept;

    /// Graceful stop: idle connections close now; the others finish their request with
    /// Connection: close.
    void drain() noexcept;
    /// Closes now, whatever the phase.
    void close(close_reason why) noexcept;
    /// A reload turned timeouts off: leave the list (none of its deadlines applies any more).
    void leave_timeouts() noexcept;
    /// A reload turned timeouts on: join the list of the current phase, from now.
    void join_timeouts();

    [[nodiscard]] conn_phase phase() const noexcept { return phase_; }
    /// Whether closing it now loses nothing: waiting for a request with no byte of it received.
    [[nodiscard]] bool idle() const noexcept;
    /// Whether it was answered and only reads to discard (a refused body, or lingering).
    [[nodiscard]] bool discarding() const noexcept {
        return !closed_ && (phase_ == conn_phase::discard || phase_ == conn_phase::linger);
    }
    /// When it last did something: its last response (keep-alive) or its accept (a new one).
    [[nodiscard]] timeouts::clock::time_point last_active() const noexcept {
        return idle_.idle_start();
    }
    /// Whether bytes wait in its socket that it has not read yet (one system call).
    [[nodiscard]] bool input_waiting() const noexcept;
    /// Whether a response of its waits in the worker's batch of sends (its phase and timeout
    /// are decided when the batch says how the send went): never closed as idle meanwhile.
    [[nodiscard]] bool sending() const noexcept { return sending_; }
    /// Its next response says Connection: close; while idle it stays open.
    void retire() noexcept { session_.retire(); }
    /// retire(), for a keep-alive connection pressure chose: it moves to the retired kind, so
    /// that the next newcomer finds another at the head of the keep-alive kind.
    void retire_idle() noexcept;
    [[nodiscard]] bool retired() const noexcept { return session_.retired(); }

    /// The connection whose idle_entry `e` is (walking a client kind's list): checked.
    static connection& from(const timeouts::idle_entry& e) noexcept {
        return e.owner<connection>();
    }
    /// Frees the buffers and request states this thread keeps for reuse (after a flood).
    static void release_kept() noexcept;

    // http::session_transport: a handler that answers later writes through these.
    std::string& output() override;
    std::string_view date() noexcept override;
    void wake() noexcept override;
    std::string_view peer() noexcept override;
    [[nodiscard]] bool secure() const noexcept override { return tls_; }
    void responded(const http::request_head* request, http::route_stats* route, unsigned status,
                   std::uint64_t body_bytes) noexcept override;

private:
    void drive(bool fresh = true);
    void run_drive() noexcept;
    bool read_some();
    void note(std::uint32_t events) noexcept;
    static net::io_batch::read_target read_target(void* c, std::uint32_t events) noexcept;
    static void read_done(void* c, std::uint32_t events, long result) noexcept;
    void on_read_ahead(std::uint32_t events, long result) noexcept;
    bool write_pending();
    /// The worker's batch of sends asks what is to go, then says how it went.
    static net::io_batch::output batched_output(void* c) noexcept;
    static void batched_sent(void* c, long result, std::size_t asked) noexcept;
    static const net::io_batch::owner_calls batch_calls;
    void sent(long result, std::size_t asked) noexcept;
    bool send_file();
    // The socket, or TLS over it: the system calls' contract either way.
    ssize_t recv_some(char* p, std::size_t n) noexcept;
    ssize_t send_some(const char* p, std::size_t n) noexcept;
    [[gnu::noinline]] ssize_t tls_recv(char* p, std::size_t n) noexcept;
    [[gnu::noinline]] ssize_t tls_send(const char* p, std::size_t n) noexcept;
    /// The end of our output: close_notify first on TLS.
    void shutdown_output() noexcept;
    /// One step of the TLS handshake; whether the connection goes on to requests now.
    bool shake();
    /// A file body over TLS: the next piece read into the output (no sendfile for TLS).
    bool stage_file();
    [[nodiscard]] tls::stream& tls_stream() const noexcept { return ctx_.tls.find(this)->second; }
    void wait(bool writable);
    void enter(conn_phase p, bool touch_if_same);
    [[nodiscard]] const timeouts::timeout_kind& kind_for(conn_phase p) const noexcept;
    void finish();
    void on_timeout() noexcept;
    void release_buffers() noexcept;
    void close_tls(close_reason why) noexcept;
    void measure_written() noexcept;
    void nodelay() noexcept;
    [[gnu::noinline]] void log_response(const http::request_head* request, unsigned status,
                                        std::uint64_t body_bytes) noexcept;
    /// The PROXY header at the start of the input: taken off, its client kept. Whether request
    /// bytes follow it; false too while it is incomplete, or when it is malformed (the
    /// connection is then closed: closed_ says which).
    bool take_proxy_header(io_state& io) noexcept;

    /// The request in progress's buffers, taken now if the connection was idle.
    io_state& io();
    [[nodiscard]] std::uint32_t in_len() const noexcept { return io_ ? io_->in_len : 0; }

    // Ordered for size: fd_ fills the reference count's padding, and the small fields close
    // the object without a hole.
    int fd_;
    const connection_context& ctx_;

public:
    live_hook live; ///< in the worker's list of live connections

private:
    timeouts::idle_entry idle_;
    http::session session_;
    std::unique_ptr<io_state> io_; ///< only while a request is in progress
    std::uint32_t born_ms_ = 0;    ///< accepted, in ms modulo 2^32 (for max_connection_age)
    std::uint32_t peer_v4_ = 0;    ///< the client's IPv4 address, once known (peer_v4_known_)
    std::uint32_t answered_ = 0;   ///< session_.requests() at the last wait
    conn_phase phase_ = conn_phase::silent;
    bool closed_ = false;
    bool readable_ = false; ///< an input edge arrived and recv has not said EAGAIN since
    bool writable_ = true;  ///< send has not said EAGAIN since the last output edge
    bool want_read_ = false;
    bool want_write_ = false;
    bool driving_ = false; ///< drive() is on the stack: a wake() only asks it to parse again
    bool woken_ = false;
    bool peer_eof_ = false;
    bool wake_posted_ = false; ///< a drive for a handler's news is queued on the loop
    // Flags read once per connection or per edge, packed to leave the object its size.
    bool hung_up_ : 1 = false;       ///< the peer shut down or reset: no further edge will come
    bool nodelay_ : 1 = false;       ///< TCP_NODELAY is set (from the first keep-alive or file on)
    bool proxy_header_ : 1 = false;  ///< a PROXY header is still to come, before any request
    bool peer_v6_ : 1 = false;       ///< the PROXY header's client is in ctx_.proxied_v6
    bool peer_v4_known_ : 1 = false; ///< peer_v4_ holds the client's address
    bool tls_ : 1 = false;           ///< TLS: every byte goes through tls_stream()
    bool handshaking_ : 1 = false;   ///< TLS: the handshake is not done yet
    bool sending_ : 1 = false;       ///< its output waits in the worker's batch of sends
};

/// The worker's live connections (unlinked automatically when a connection is freed).
using live_connections =
    boost::intrusive::list<connection,
                           boost::intrusive::member_hook<connection, live_hook, &connection::live>,
                           boost::intrusive::constant_time_size<false>>;

} // namespace tarry::server

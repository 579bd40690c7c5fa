#pragma once

#include "client_io.hpp"
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
#include <optional>
#include <string>

namespace tarry::server {

class connection;
struct proxy_header;
using connection_ptr = boost::intrusive_ptr<connection>;

/// One client connection: the phases, timeouts and close around the protocol it speaks, over
/// its socket's I/O (client_io, its base).
///
/// The protocol is driven through the small interface client_protocol.hpp names (bytes in,
/// responses out, and what it waits for): today HTTP/1.1's http::session. The socket's side,
/// readiness and the plain, batched and TLS ways bytes cross, is client_io's; this class
/// decides what to do with what it says. An idle keep-alive connection holds no read buffer,
/// no parser, no output buffer and no pending operation: they come from per-thread free lists
/// when bytes arrive and go back when the response is written. What stays is this object, 184
/// bytes (a 192-byte heap chunk): the layout below is ordered and sized for it (checked by a
/// static_assert in connection.cpp).
///
/// Each phase but one is a kind of timeout (client_kinds): in it, the connection is enrolled
/// in the list for that kind and its duration.
///   handshake  - TLS: from accept (behind a balancer: from its PROXY header's end) until the
///                handshake is done; closed silently at handshake_timeout (then silent, from
///                the end of the handshake)
///   silent     - from accept until the first byte (TLS behind a balancer: until its PROXY
///                header is whole); closed silently at header_timeout
///   header     - from the first byte of a request until its header is complete; total
///   body       - between two reads of a request body; touched on every read
///   send       - between two writes of a response the client is not draining; touched on progress
///   keep_alive - idle between requests; touched when a response is fully written (in the
///                retired kind instead once pressure asked it to close after its next response)
///   linger     - after an error response, reading and discarding until the client closes
///   discard    - the request was answered; the rest of its body is read and thrown away
///   waiting    - in no list: the request is read and its handler answers later (the handler's
///                own timeouts, such as an upstream's, bound the wait)
/// With timeouts turned off (a measuring mode) it is in no list at all.
///
/// Besides, it is linked into its worker's list of live connections from start() to close().
///
/// Lifetime: the worker's accept gives it one reference, which close() hands to a posted
/// handler, so the object outlives the event batch or expiry round that closed it. The count is
/// intrusive and single-threaded: a connection never leaves its worker's thread.
class connection final
    : public http::session_transport,
      public client_io,
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

    /// Graceful stop: idle connections close now; the others finish their request with
    /// Connection: close.
    void drain() noexcept;
    /// Closes now, whatever the phase.
    void close(close_reason why) noexcept;
    [[nodiscard]] bool closed() const noexcept { return closed_; }
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
    /// Its next response says Connection: close; while idle it stays open. HTTP/2: the graceful
    /// GOAWAY now, the streams in flight finish.
    /// `why`: what it is closed for if it has no stream open (HTTP/2: its GOAWAY goes now, and
    /// it closes once the client has had it), shutdown or pressure.
    void retire(close_reason why = close_reason::shutdown) noexcept;
    /// retire(), for a keep-alive connection pressure chose: it moves to the retired kind, so
    /// that the next newcomer finds another at the head of the keep-alive kind.
    void retire_idle() noexcept;
    [[nodiscard]] bool retired() const noexcept { return session_.retired(); }

    /// Counted against its client in the worker's table (ctx.clients) since its accept; `peer`
    /// is the socket's, kept when it is an IPv4 address (no system call later to tell it).
    void counted_at_accept(const sockaddr_storage& peer) noexcept;
    /// Its client's key in the worker's table (IPv4: from the 4 bytes kept; IPv6: the PROXY
    /// header's, or the hash kept at accept), or none: a Unix socket's client, or a peer gone
    /// before it was told.
    [[nodiscard]] std::optional<client_key> client() noexcept;
    /// Whether it is counted against its client.
    [[nodiscard]] bool counted() const noexcept { return counted_; }
    /// Counts it again in a table cleared because a reload changed what names a client.
    void recount() noexcept;

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
    [[nodiscard]] int certificate() const noexcept override {
        return tls_ && !handshaking_ ? tls_stream().certificate() : -1;
    }
    void responded(const http::request_head* request, http::route_stats* route, unsigned status,
                   std::uint64_t body_bytes) noexcept override;
    std::chrono::steady_clock::time_point request_started() noexcept override;
    void completed(const http::response_record& r) noexcept override;

private:
    friend class client_io; // its trampolines hand the batch's results here

    void drive(bool fresh = true);
    void run_drive() noexcept;
    /// Whether the worker's batch may make this connection's next read (see client_io).
    [[nodiscard]] bool reads_ahead() const noexcept {
        return !closed_ && want_read_ && !tls_ && phase_ != conn_phase::linger && in_len() == 0 &&
               !session_.tunneling();
    }
    /// The batch made our read: what it brought.
    void on_read(read_status s) noexcept;
    /// The batch made our send: how it went.
    void on_sent(send_status s) noexcept;
    /// The output is all written: the responses in it are done.
    void written() noexcept;
    /// A file body's next part; whether it is all sent (or staged, over TLS).
    bool send_file();
    /// One step of the TLS handshake; whether the connection goes on to requests now.
    bool shake();
    void wait(bool writable);
    void enter(conn_phase p, bool touch_if_same);
    [[nodiscard]] const timeouts::timeout_kind& kind_for(conn_phase p) const noexcept;
    /// Everything is written: the close (`why`), lingering if the client sent more.
    void finish(close_reason why = close_reason::done);
    void on_timeout() noexcept;
    void measure_written() noexcept;
    /// The port the client connected to, for the access log (looked up once).
    std::uint16_t local_port() noexcept;
    /// The PROXY header at the start of the input: taken off, its client kept. Whether request
    /// bytes follow it; false too while it is incomplete, or when it is malformed (the
    /// connection is then closed: closed_ says which).
    bool take_proxy_header(io_state& io) noexcept;
    /// The same on TLS, before the handshake: the header taken out of the socket alone (it is
    /// looked at where it waits). Whether the handshake goes on now; if not, the connection
    /// waits for the rest (header_timeout, in the silent phase) or is closed.
    bool take_proxy_header_tls();
    /// What a parsed header says (done or malformed): its client kept and counted. False when
    /// the connection was closed for it.
    bool adopt_proxy_header(const proxy_header& h) noexcept;

    // HTTP/2 (connection_h2.cpp): the protocol's state is the worker's, found by connection
    // (ctx_.h2s), taken when the client preface arrives; h2_ says it was.

    /// The first request's bytes begin the client preface: whether the connection speaks
    /// HTTP/2 now (started), or must wait for more bytes to tell (`undecided`).
    bool take_preface(io_state& io, bool& undecided);
    void start_h2();
    [[nodiscard]] h2_session& session_h2() const noexcept;
    void drive_h2(bool fresh);
    void wait_h2(bool writable);
    /// A timeout in a phase HTTP/2 handles its own way; false: as HTTP/1.1's.
    bool h2_timeout() noexcept;
    /// Closing for pressure: GOAWAY(NO_ERROR) with the last stream first, one send at most.
    void goaway_h2() noexcept;

    // Ordered for size: after the bases (the vtable pointer, client_io's 22 bytes, the 4-byte
    // reference count) born_ms_ fills the count's padding, and the small fields close the
    // object without a hole.
    std::uint32_t born_ms_ = 0; ///< accepted, in ms modulo 2^32 (for max_connection_age)

public:
    live_hook live; ///< in the worker's list of live connections

private:
    timeouts::idle_entry idle_;
    http::session session_; ///< the protocol (client_protocol.hpp)
    /// The client's IPv4 address, once known (peer_v4_known_); else, with client_hash_, the
    /// low 32 bits of an IPv6 client's key (client_table.hpp).
    std::uint32_t peer_v4_ = 0;
    std::uint32_t answered_ = 0;   ///< session_.requests() at the last wait
    std::uint16_t local_port_ = 0; ///< the port it was accepted on, once the log asked
    conn_phase phase_ = conn_phase::silent;
    bool closed_ = false;
    bool driving_ = false; ///< drive() is on the stack: a wake() only asks it to parse again
    bool woken_ = false;
    bool wake_posted_ = false; ///< a drive for a handler's news is queued on the loop
    // Flags read once per connection, packed to leave the object its size.
    bool proxy_header_ : 1 = false;  ///< a PROXY header is still to come, before any request
    bool peer_v6_ : 1 = false;       ///< the PROXY header's client is in ctx_.proxied_v6
    bool peer_v4_known_ : 1 = false; ///< peer_v4_ holds the client's address
    bool h2_ : 1 = false;            ///< speaks HTTP/2 (its state in ctx_.h2s)
    /// HTTP/2: why the server sent its GOAWAY to a connection with no stream open, the reason
    /// it is closed for (0: none of these; 1 keep_alive_timeout, 2 a stop, 3 pressure).
    std::uint8_t idle_goaway_ : 2 = 0;
    bool counted_ : 1 = false;     ///< counted against its client in ctx_.clients
    bool client_hash_ : 1 = false; ///< peer_v4_ holds an IPv6 client's key
};

/// The worker's live connections (unlinked automatically when a connection is freed).
using live_connections =
    boost::intrusive::list<connection,
                           boost::intrusive::member_hook<connection, live_hook, &connection::live>,
                           boost::intrusive::constant_time_size<false>>;

} // namespace tarry::server

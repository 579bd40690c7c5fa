#include "connection.hpp"

#include "access_log.hpp"
#include "client_kinds.hpp"
#include "client_protocol.hpp"
#include "heap_trimmer.hpp"

#include <tarry/timeouts/timeout_registry.hpp>

#include <boost/asio/post.hpp>

#include <sys/socket.h>

#include <cstring>
#include <utility>

namespace tarry::server {
namespace {

using timeouts::timeout_registry;

/// A steady-clock reading in milliseconds, modulo 2^32: differences stay right for 49 days.
std::uint32_t clock_ms(timeouts::clock::time_point t) noexcept {
    return static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

/// The first line of the unparsed input (after empty lines), bounded, for the access log.
std::string_view first_line(const io_state& io) noexcept {
    std::string_view in(io.in.data(), io.in_len);
    in.remove_prefix(std::min(in.find_first_not_of("\r\n"), in.size()));
    return in.substr(0, std::min(in.find_first_of("\r\n"), http::response_record::received_max));
}

} // namespace

// What an idle keep-alive connection costs: this object, in a 192-byte heap chunk (glibc adds
// 8 bytes and rounds to 16). Whatever is added must come out elsewhere, or go into io_state.
static_assert(sizeof(connection) <= 184, "an idle connection fits a 192-byte chunk");

connection::connection(const connection_context& ctx, int fd, bool proxy_protocol, bool tls)
    : client_io(ctx, fd, tls),
      idle_(&timeouts::member_callback_t<&connection::on_timeout>::call, this),
      session_(ctx.settings.session, this), proxy_header_(proxy_protocol) {
    // Behind a balancer, its PROXY header comes first, under header_timeout as a silent
    // client's first bytes; the handshake's phase begins when the header is taken.
    if (tls && !proxy_protocol) phase_ = conn_phase::handshake;
}

connection::~connection() {
    if (!closed_) ::close(fd_); // never started (registration failed before close() ran)
    if (h2_) ctx_.h2s.by_connection.erase(this);
}

void connection::start() {
    worker_metrics& m = ctx_.metrics;
    m.open.add();
    m.phases[static_cast<std::size_t>(phase_)].add();
    ctx_.date.hold();
    // A TLS connection's stream is made now, OpenSSL's object only by the ClientHello's first
    // byte (shake()), as nginx does: until then it costs this object and the stream's record
    // state. Made at accept, beside this object, the streams that outlive their handshakes sit
    // together, not among the handshakes' freed kilobytes: after a burst of handshakes the
    // heap's free pages can go back.
    if (tls_) {
        if (!ctx_.settings.tls) {
            close(close_reason::error);
            return;
        }
        ctx_.tls.open(fd_); // may throw: the caller closes us
    }
    if (!ctx_.poll.add_tagged(fd_, this)) {
        close(close_reason::error);
        return;
    }
    // Bytes that came with the connection raise an input edge as soon as it is registered.
    wait(false);
    born_ms_ = clock_ms(idle_.enrolled() ? idle_.idle_start() : timeouts::clock::now());
}

void connection::on_events(std::uint32_t events) noexcept {
    note(events);
    if (closed_ || !((want_read_ && readable_) || (want_write_ && writable_))) return;
    run_drive();
}

void connection::on_read(read_status s) noexcept {
    // The batch's read, taken (client_io::took_read) as drive()'s own would be.
    if (s == read_status::failed) return;
    // An edge with nothing behind it: an idle connection holds no buffer.
    if (s == read_status::none && !readable_ &&
        (phase_ == conn_phase::keep_alive || phase_ == conn_phase::silent))
        release_buffers(false);
    if (!((want_read_ && (s == read_status::got || readable_)) || (want_write_ && writable_)))
        return;
    run_drive();
}

void connection::on_sent(send_status s) noexcept {
    // The batch's send, taken (client_io::took_send) as drive()'s own would be: its phase and
    // timeout are decided now.
    try {
        switch (s) {
        case send_status::blocked:
            wait(true);
            return;
        case send_status::all:
            written();
            run_drive();
            return;
        case send_status::again:
            run_drive(); // in the next batch
            return;
        case send_status::failed:
        case send_status::queued:
            return;
        }
    } catch (...) {
        close(close_reason::error); // out of memory for a timeout list
    }
}

void connection::written() noexcept {
    measure_written();
    if (h2_) [[unlikely]] {
        try {
            session_h2().output_drained();
        } catch (...) {
            close(close_reason::error); // out of memory for a response's frames
        }
        return;
    }
    session_.output_drained();
}

std::string& connection::output() {
    return io().out;
}

std::string_view connection::date() noexcept {
    return ctx_.date.value();
}

void connection::release_kept() noexcept {
    client_io::release_kept();
    http::session::release_kept();
    tls::stream::release_kept();
}

void connection::responded(const http::request_head* request, http::route_stats* route,
                           unsigned status, std::uint64_t body_bytes) noexcept {
    worker_metrics& m = ctx_.metrics;
    m.requests.add();
    const std::size_t cls = http::status_class(status);
    m.responses[cls].add();
    if (route != nullptr) route->count(cls);
    (void)request, (void)body_bytes;
}

std::chrono::steady_clock::time_point connection::request_started() noexcept {
    // The client's address while the socket surely has it: a client that resets before its
    // answer is over (the line is written then) would leave getpeername() nothing to say.
    (void)peer();
    // The first byte of a request: when the batch that read it was reaped (no clock read).
    return io_ ? io_->request_start : ctx_.poll.reaped();
}

void connection::completed(const http::response_record& r) noexcept {
    access_log* log = ctx_.settings.access;
    if (log == nullptr) return; // turned off by a reload while the response ran
    access_context c;
    c.peer = peer();
    if (r.started != std::chrono::steady_clock::time_point{})
        c.request_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           timeouts::clock::now() - r.started)
                           .count();
    c.https = tls_;
    c.server_port = local_port();
    if (const tls::stream* s = tls_ && !handshaking_ ? ctx_.tls.find(fd_) : nullptr) {
        // tarry speaks TLS 1.2 and 1.3 only: 1.3 is the records of its own, or a 1.3 suite.
        c.tls_protocol = s->own_records() || s->suite() < 3 ? "TLSv1.3" : "TLSv1.2";
    }
    log->write(c, r);
}

std::uint16_t connection::local_port() noexcept {
    if (local_port_ != 0) return local_port_;
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
    if (a.ss_family == AF_INET)
        local_port_ = ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
    else if (a.ss_family == AF_INET6)
        local_port_ = ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
    return local_port_; // 0 for a Unix socket (asked again: rare)
}

void connection::measure_written() noexcept {
    // Every response whose last byte just went out: its duration, from its request's first
    // byte. One clock reading per write that completes responses, none otherwise.
    if (!io_ || session_.has_file()) return;
    const std::uint32_t done = session_.requests() - io_->measured;
    if (done == 0) return;
    const auto now = timeouts::clock::now();
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(now - io_->request_start).count();
    ctx_.metrics.took(us, done);
    io_->measured = session_.requests();
    io_->request_start = now; // a request pipelined behind them is timed from here
    io_->written_at = now;    // the keep-alive deadline starts here too: no second reading
}

void connection::wake() noexcept {
    if (closed_) return;
    if (driving_) {
        woken_ = true; // drive() parses again before it returns
        return;
    }
    if (wake_posted_) return;
    // A handler answering later (a proxy's upstream response) usually has more to say in the
    // same turn of the loop: a head, then a body, then the end. One drive after all of it sends
    // them in one system call, not one each.
    try {
        boost::asio::post(ctx_.io, [self = connection_ptr(this)] {
            self->wake_posted_ = false;
            if (self->closed_) return;
            self->run_drive();
        });
        wake_posted_ = true;
    } catch (...) {
        run_drive(); // could not queue it: drive now
    }
}

void connection::run_drive() noexcept {
    if (driving_) {
        woken_ = true;
        return;
    }
    want_read_ = want_write_ = false;
    try {
        drive();
    } catch (...) {
        close(close_reason::error); // out of memory mid-request
    }
}

bool connection::idle() const noexcept {
    return !closed_ && !sending_ &&
           (phase_ == conn_phase::keep_alive || phase_ == conn_phase::silent ||
            phase_ == conn_phase::handshake ||
            (phase_ == conn_phase::header && in_len() == 0 && (!io_ || io_->out.empty())));
}

void connection::retire(close_reason why) noexcept {
    session_.retire();
    if (!h2_ || closed_) return;
    if (session_h2().idle()) idle_goaway_ = why == close_reason::pressure ? 3 : 2;
    try {
        session_h2().drain(io().out); // GOAWAY(2^31-1) and a PING (RFC 9113 6.8)
    } catch (...) {
        return; // out of memory: the stop's deadline closes it
    }
    wake();
}

void connection::drain() noexcept {
    if (closed_) return;
    if (h2_) {
        // GOAWAY: no new stream; the open ones finish, then the connection closes. One with
        // none open is closed by the stop, as HTTP/1.1's idle ones are (`shutdown`).
        if (session_h2().idle() && idle_goaway_ == 0) idle_goaway_ = 2;
        try {
            session_h2().drain(io().out);
        } catch (...) {
            close(close_reason::shutdown);
            return;
        }
        run_drive();
        return;
    }
    session_.drain();
    if (idle()) close(close_reason::shutdown);
}

// The whole life of a request, from bytes in to bytes out, runs here until some system call
// would block. One clock read per timeout-list move, none per byte.
void connection::drive(bool fresh) {
    // fresh: new input, or room for output, or a handler's news since the last parse
    driving_ = true;
    struct done {
        bool& driving;
        ~done() { driving = false; }
    } const guard{driving_};
    // A TLS handshake first (it leaves handshaking_ only by finishing, or by closing us),
    // behind a PROXY header when the listener is a balancer's.
    if (handshaking_) [[unlikely]] {
        if (proxy_header_ && !take_proxy_header_tls()) return;
        if (!shake()) return;
    }
    if (h2_) [[unlikely]] {
        drive_h2(fresh);
        return;
    }
    while (!closed_) {
        if (woken_) {
            woken_ = false;
            fresh = true;
        }
        if (fresh && in_len() != 0 && !session_.closing() && !session_.has_file() &&
            (!proxy_header_ || take_proxy_header(*io_))) [[likely]] {
            io_state& io = *io_;
            // HTTP/2 with prior knowledge: the first bytes of the first request are the client
            // preface (one comparison per connection: HTTP/1.1 methods differ at once).
            if (session_.requests() == 0 && io.in[0] == 'P' && ctx_.settings.http2 && !tls_ &&
                session_.current_phase() == http::session::phase::idle) [[unlikely]] {
                bool undecided = false;
                if (take_preface(io, undecided)) {
                    drive_h2(true);
                    return;
                }
                if (undecided) {
                    fresh = false;
                    if (peer_eof_) {
                        close(close_reason::client_close);
                        return;
                    }
                    if (!readable_) {
                        wait(false);
                        return;
                    }
                    if (read_some() == read_status::failed) return;
                    fresh = true;
                    continue;
                }
            }
            // Past its age the connection answers this request with Connection: close; it is
            // never closed idle for age. A clock read only when an age is set.
            const auto age = ctx_.settings.max_age;
            if (age != timeouts::clock::duration::zero() &&
                std::chrono::milliseconds(clock_ms(timeouts::clock::now()) - born_ms_) >= age)
                session_.retire();
            const std::size_t used =
                session_.consume(io.in.data(), io.in_len, io.out, ctx_.date.value(), peer_eof_);
            if (used != 0) {
                io.in_len -= static_cast<std::uint32_t>(used);
                if (io.in_len != 0) std::memmove(io.in.data(), io.in.data() + used, io.in_len);
            }
        } else if (closed_) {
            return; // a malformed PROXY header
        }
        fresh = false;
        // A tunnel's two directions are independent: while its output waits for the client to
        // read, it still reads what the client sends (the send timeout watches the output).
        bool out_waiting = false;
        if (output_waiting()) {
            const bool in_batch = sending_;
            switch (write_pending()) {
            case send_status::all:
                written();
                fresh = true;
                continue;
            case send_status::queued:
                // Answered from an idle phase (its next phase is decided when the batch has
                // sent this): no longer the oldest idle connection, which pressure would take.
                // (A clock read: a list's times never go back, and other entries were touched
                // since the batch's reading.)
                if (!in_batch && (phase_ == conn_phase::keep_alive || phase_ == conn_phase::silent))
                    timeout_registry::touch(idle_);
                break;
            case send_status::blocked:
                wait(true);
                break;
            case send_status::again: // (not from write_pending(): it sends again itself)
            case send_status::failed:
                break;
            }
            if (closed_ || !session_.tunneling()) return;
            out_waiting = true;
        }
        if (!out_waiting && session_.take_output_shutdown())
            shutdown_output(); // a tunnel's half-close, once its output is all out
        if (woken_) continue;
        if (session_.has_file()) {
            if (!send_file()) return;
            fresh = true;
            continue;
        }
        if (session_.closing() && !session_.answering()) {
            if (out_waiting) return; // the tunnel ended: what it queued goes out first
            finish();
            if (closed_) return;
        }
        if (peer_eof_) {
            // A tunnel passes the half-close on once every byte before it was taken.
            if (in_len() == 0 && session_.input_ended()) continue;
            // RFC 9112, 9.6: a client may half-close once its request is sent. A request read
            // whole that a handler is still answering gets its answer, and so does each
            // request pipelined behind it, in turn; the last says Connection: close, then the
            // connection closes. A request cut short (in its header or body) is an abort.
            if (session_.answering() && waits_for(session_) == protocol_wait::answer) {
                if (in_len() == 0) session_.retire();
                wait(out_waiting); // the handler's wake() drives the rest
                return;
            }
            if (out_waiting) return;
            close(session_.closing() ? close_reason::done : close_reason::client_close);
            return;
        }
        if (!readable_) {
            if (!out_waiting) wait(false);
            return;
        }
        if (io_ && io_->in_len != 0 && io_->in_len == io_->in.size() &&
            (waits_for(session_) == protocol_wait::answer ||
             waits_for(session_) == protocol_wait::paused)) {
            // The handler holds the request and the buffer is full (a paused body, or
            // pipelined requests behind an answer still to come): read again when it is done.
            // (A buffer just taken is empty, size 0: not full. Taken for a tunnel's output, it
            // once read as full here, and the tunnel stopped reading the client for good.)
            if (!out_waiting) wait(false);
            return;
        }
        const std::size_t had = in_len();
        if (read_some() == read_status::failed) return;
        fresh = io_->in_len != had;
        if (phase_ == conn_phase::linger) {
            io_->in_len = 0; // discard what a closing client sends
            fresh = false;
        }
    }
}

bool connection::shake() {
    tls::stream& s = tls_stream();
    // The first edge (OpenSSL's object comes with the ClientHello's first byte).
    if (!s.prepared() && (!ctx_.settings.tls || !s.start(ctx_.settings.tls, fd_))) {
        close(close_reason::error);
        return false;
    }
    worker_metrics::tls_counters& m = ctx_.metrics.tls;
    switch (s.handshake(fd_)) {
    case tls::step::done: {
        handshaking_ = false;
        if (tls::stream::burst_over()) [[unlikely]]
            heap_trimmer::after_handshakes(); // the burst's heap back, as a trim gives it
        m.handshakes[s.resumed() ? 1 : 0].add();
        const auto now = timeouts::clock::now();
        m.took(static_cast<std::int64_t>(clock_ms(now) - born_ms_) * 1000);
        m.open[s.suite()].add();
        if (s.own_records()) m.own_records.add();
        // Bytes that came behind the client's Finished are in the socket: read them now.
        readable_ = true;
        enter(conn_phase::silent, false); // header_timeout counts from here
        if (s.h2()) start_h2();           // ALPN chose HTTP/2: its preface is the first read
        return true;
    }
    case tls::step::want_read:
        readable_ = false;
        wait(false);
        return false;
    case tls::step::want_write:
        writable_ = false;
        wait(true);
        return false;
    case tls::step::plain_http: {
        // An HTTP request on the TLS port, or bytes that are not TLS: answered in plain text
        // with 400, as nginx does (the request with its hint), and closed lingering, so the
        // client reads the answer.
        const tls::handshake_failure why = s.failure();
        m.failures[static_cast<std::size_t>(why)].add();
        drop_tls();
        readable_ = true;
        if (read_some() == read_status::failed) return false;
        session_.fail(400, io().out, ctx_.date.value(), first_line(io()),
                      why == tls::handshake_failure::plain_http
                          ? "The plain HTTP request was sent to HTTPS port"
                          : std::string_view{});
        enter(conn_phase::header, false);
        return true;
    }
    case tls::step::failed:
        m.failures[static_cast<std::size_t>(s.failure())].add();
        close(close_reason::handshake);
        return false;
    }
    return false;
}

bool connection::send_file() {
    nodelay(); // the tail of a streamed body must not wait for the client's delayed ACK
    http::file_body& f = session_.file();
    if (tls_) {
        if (f.remaining != 0) return stage_file(f); // drive() sends the piece, then the next
    } else {
        switch (sendfile_some(f)) {
        case file_status::done:
            break;
        case file_status::yielded:
            // Still writable, so no edge will come: come back through the loop's queue.
            wait(true);
            boost::asio::post(ctx_.io,
                              [self = connection_ptr(this)] { self->on_events(EPOLLOUT); });
            return false;
        case file_status::blocked:
            wait(true);
            return false;
        case file_status::failed:
            return false;
        }
    }
    session_.file_done();
    measure_written();
    return true;
}

void connection::finish(close_reason why) {
    // Everything is written. If the client sent more than we read (pipelined requests after
    // Connection: close, the rest of a refused body), closing now would make the kernel answer
    // with RST and could destroy the response in flight: half-close, and read until the client
    // closes, lingering_timeout passes between two reads, or lingering_time in all.
    if (phase_ == conn_phase::linger) return; // lingering already: until EOF or a deadline
    if (in_len() == 0 && waits_for(session_) != protocol_wait::discard) {
        close(why);
        return;
    }
    shutdown_output();
    io().in_len = 0; // a total starts (enter below): it is kept beside the buffers
    enter(conn_phase::linger, false);
}

void connection::wait(bool writable) {
    if (h2_) [[unlikely]] {
        wait_h2(writable);
        return;
    }
    // A request was answered since the last wait: the header deadline of the next one, and the
    // keep-alive deadline, start again. Nothing else moves them: not empty lines, not bytes of
    // a header (its deadline is a total from its first byte).
    const bool answered = session_.requests() != answered_;
    answered_ = session_.requests();
    if (writable) {
        // (A handshake waiting to write stays in its phase: a total from accept.)
        enter(handshaking_ ? conn_phase::handshake : conn_phase::send, !handshaking_);
    } else if (phase_ == conn_phase::linger) {
        enter(conn_phase::linger, true);
    } else if (const protocol_wait w = waits_for(session_);
               w == protocol_wait::answer || w == protocol_wait::paused) {
        enter(conn_phase::waiting, false); // the handler has it: its own timeouts bound it
        if (session_.tunneling()) release_buffers(false); // a quiet tunnel holds no buffer
    } else if (w != protocol_wait::input) {
        enter(w == protocol_wait::discard ? conn_phase::discard : conn_phase::body, true);
    } else if (in_len() != 0 || (phase_ == conn_phase::header && session_.requests() == 0)) {
        enter(conn_phase::header, answered); // a total from the request's first byte
    } else if (handshaking_) [[unlikely]] {
        // A total from accept, or from the PROXY header, which comes under header_timeout
        // (silent: a connection that has sent nothing, as far as requests go, holds nothing).
        enter(proxy_header_ ? conn_phase::silent : conn_phase::handshake, false);
    } else if (phase_ == conn_phase::silent && session_.requests() == 0) {
        enter(conn_phase::silent, false); // from accept: empty lines do not move it
        // Nothing in flight (a TLS connection after its handshake, a browser's preconnected
        // socket): hold nothing but the socket, as an idle keep-alive connection.
        release_buffers(false);
        if (tls_) tls_stream().release();
    } else {
        enter(conn_phase::keep_alive, answered);
        release_buffers(false); // idle: hold nothing but the socket
        if (tls_) tls_stream().release();
        nodelay();
    }
    want_write_ = writable;
    want_read_ = !writable || session_.tunneling(); // a tunnel reads while its output waits
    // Phases with a total as well as a gap: the touch above read the clock.
    const timeouts::clock::duration total = ctx_.settings.total_for(phase_);
    if (total != timeouts::clock::duration::zero() && idle_.enrolled() && io_ &&
        idle_.idle_start() - io_->phase_start >= total)
        on_timeout();
}

void connection::enter(conn_phase p, bool touch_if_same) {
    // The time a response just ended, if one did since the last phase decision: taken here
    // whatever this decision is, so it never serves a later, unrelated touch.
    const timeouts::clock::time_point written =
        io_ ? std::exchange(io_->written_at, {}) : timeouts::clock::time_point{};
    const worker_settings& s = ctx_.settings;
    if (p != phase_) {
        worker_metrics& m = ctx_.metrics;
        m.phases[static_cast<std::size_t>(phase_)].add(-1);
        m.phases[static_cast<std::size_t>(p)].add();
    }
    const bool same = p == phase_ && idle_.enrolled();
    phase_ = p;
    if (!s.timeouts) return;
    if (p == conn_phase::waiting) {
        timeout_registry::unenroll(idle_);
        return;
    }
    const timeouts::clock::duration d = s.timeout_for(p);
    const timeouts::timeout_kind& k = kind_for(p);
    if (same && idle_.idle_timeout() == d && idle_.kind() == &k) {
        if (touch_if_same) {
            // Just after a response went out, its end is the time: the reading measure_written()
            // took (used once, by the next phase decision only: never a stale time).
            if (written != timeouts::clock::time_point{})
                timeout_registry::touch(idle_, written);
            else
                timeout_registry::touch(idle_);
        }
        return;
    }
    // A new phase, or a reload changed this phase's duration: move lists.
    ctx_.registry.enroll(idle_, k, d);
    // Only phases with a total (body, discard, linger) read it, and they always hold buffers.
    if (!same && io_) io_->phase_start = idle_.idle_start();
}

const timeouts::timeout_kind& connection::kind_for(conn_phase p) const noexcept {
    if (p == conn_phase::keep_alive && session_.retired()) return client_kinds::retired;
    return client_kinds::of(p);
}

void connection::retire_idle() noexcept {
    retire(close_reason::pressure); // HTTP/2: the graceful GOAWAY now
    if (phase_ != conn_phase::keep_alive || !idle_.enrolled()) return;
    try {
        enter(conn_phase::keep_alive, false); // kind_for() now says retired: it moves lists
    } catch (...) {
        // Out of memory for the retired list: it stays where it was, retired all the same.
    }
}

void connection::leave_timeouts() noexcept {
    timeout_registry::unenroll(idle_);
}

void connection::join_timeouts() {
    if (closed_ || phase_ == conn_phase::waiting) return;
    ctx_.registry.enroll(idle_, kind_for(phase_), ctx_.settings.timeout_for(phase_));
}

void connection::on_timeout() noexcept {
    // A response waits in the batch of sends, its phase not yet decided: the batch's answer
    // enrolls it again.
    if (sending_) return;
    if (h2_ && h2_timeout()) [[unlikely]]
        return;
    switch (phase_) {
    case conn_phase::keep_alive: {
        // A request may be in the socket already, its edge not yet handled: serve it rather
        // than close under it (the client sent it before our deadline, by its clock).
        if (input_waiting()) {
            ctx_.metrics.saved_at_timeout.add();
            readable_ = true;
            run_drive();
            return;
        }
        close(close_reason::keep_alive_timeout);
        return;
    }
    case conn_phase::discard:
        close(close_reason::body_timeout);
        return;
    case conn_phase::handshake:
        ctx_.metrics.tls.failures[static_cast<std::size_t>(tls::handshake_failure::timeout)].add();
        close(close_reason::handshake);
        return;
    case conn_phase::silent:
        // Nothing arrived: nothing to say. (A TLS connection may have part of a PROXY header
        // waiting in its socket, looked at but not read: read, so the close is not a reset.)
        if (proxy_header_ && tls_) drop_waiting();
        close(close_reason::header_timeout);
        return;
    case conn_phase::header:
    case conn_phase::body:
        // Part of a request arrived: say why before closing. Nothing did (or only part of a
        // PROXY header, from a balancer that expects no answer): close silently.
        if ((in_len() != 0 && !proxy_header_) || phase_ == conn_phase::body) {
            try {
                io_state& io = this->io();
                io.out.erase(0, io.out_off);
                io.out_off = 0;
                // For the log: what came of the request's head.
                const std::string_view received =
                    phase_ == conn_phase::header ? first_line(io) : std::string_view{};
                session_.fail(408, io.out, ctx_.date.value(), received);
                [[maybe_unused]] const ssize_t n = send_some(io.out.data(), io.out.size());
            } catch (...) {
                // out of memory: close without the courtesy
            }
        }
        close(phase_ == conn_phase::body ? close_reason::body_timeout
                                         : close_reason::header_timeout);
        return;
    case conn_phase::send: {
        // Reset rather than close, as nginx's reset_timedout_connection does: a plain close
        // leaves an orphaned socket holding the whole unsent send queue (megabytes on loopback)
        // until the client that stopped reading goes away.
        const linger reset{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        close(close_reason::send_timeout);
        return;
    }
    case conn_phase::linger:
    case conn_phase::waiting:
    case conn_phase::count_:
        close(close_reason::done);
        return;
    }
}

void connection::close(close_reason why) noexcept {
    if (closed_) return;
    if (h2_ && why == close_reason::pressure) goaway_h2();
    closed_ = true;
    want_read_ = want_write_ = false;
    if (sending_) ctx_.poll.cancel_send(this);
    sending_ = false;
    live.unlink();
    if (counted_) {
        if (const auto k = client()) ctx_.clients.leave(*k);
        counted_ = false;
    }
    if (peer_v6_) ctx_.proxied_v6.erase(this);
    session_.abort(); // a handler answering later stops and lets go of the request
    if (h2_) session_h2().abort();
    timeout_registry::unenroll(idle_);
    // The file's descriptor too, not when we are freed; and its log line, while the socket
    // (its port, its TLS version) is still there.
    if (session_.has_file()) session_.file_done();
    if (why == close_reason::tls && tls_) [[unlikely]] {
        if (const tls::stream* s = ctx_.tls.find(fd_); s != nullptr) {
            if (const tls::noop_limit l = s->limit_reached(); l != tls::noop_limit::none)
                ctx_.metrics.tls.noop_limits[static_cast<std::size_t>(l)].add();
        }
    }
    // Every close says so on TLS (close_notify, RFC 8446, 6.1), timeouts too, but a send
    // timeout's reset (nothing more reaches the client) and a TLS error's (its alert was the
    // last record: the stream sends nothing after it).
    close_socket(why != close_reason::send_timeout && why != close_reason::tls);
    const std::size_t freed = release_buffers(true);
    ctx_.date.release();
    // Counted once the descriptor is really gone, so "open" never runs ahead of the kernel.
    worker_metrics& m = ctx_.metrics;
    m.closed(why);
    m.phases[static_cast<std::size_t>(phase_)].add(-1);
    m.open.add(-1);
    ctx_.on_closed(ctx_.worker, freed);
    // Hand the accept's reference to a posted handler: the object outlives the event batch or
    // expiry round that is closing it, and goes right after. If the io_context is being torn
    // down, the handler is destroyed unrun, which frees it all the same.
    try {
        boost::asio::post(ctx_.io, [self = connection_ptr(this, false)] {});
    } catch (...) {
        intrusive_ptr_release(this); // could not defer: the caller holds no reference to us
    }
}

} // namespace tarry::server

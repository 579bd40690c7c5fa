// A connection speaking HTTP/2: the same socket I/O, output queue, sends and timeout lists as
// HTTP/1.1 (connection.cpp), driving an h2_session instead of http::session.
//
// Phases: before the first stream is answered, `header` (header_timeout, a total from the
// first byte of the preface); with a stream open, `waiting` (its handler's own timeouts bound
// it); no stream open, `keep_alive` (keep_alive_timeout; PINGs and other control frames do not
// move it), closed with GOAWAY(NO_ERROR) then the lingering close of HTTP/1.1; output the client
// does not drain, `send` (send_timeout).

#include "connection.hpp"

#include "h2_session.hpp"

#include <tarry/h2/frame_types.hpp>
#include <tarry/timeouts/timeout_registry.hpp>

#include <algorithm>
#include <cstring>

namespace tarry::server {
namespace {

/// As connection.cpp's: a steady-clock reading in milliseconds, modulo 2^32 (born_ms_'s unit).
std::uint32_t clock_ms(timeouts::clock::time_point t) noexcept {
    return static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

} // namespace

bool connection::take_preface(io_state& io, bool& undecided) {
    const std::string_view preface = h2::client_preface;
    const std::size_t n = std::min<std::size_t>(io.in_len, preface.size());
    if (std::memcmp(io.in.data(), preface.data(), n) != 0) return false; // HTTP/1.1
    if (n < preface.size()) {
        undecided = true;
        return false;
    }
    start_h2();
    return true;
}

void connection::start_h2() {
    auto s = std::make_unique<h2_session>(ctx_, *this);
    h2_session& h = *s;
    ctx_.h2s.by_connection[this] = std::move(s);
    h2_ = true;
    nodelay(); // many small frames each way: none may wait for a delayed ACK
    h.start(io().out);
}

h2_session& connection::session_h2() const noexcept {
    return *ctx_.h2s.by_connection.find(this)->second;
}

void connection::drive_h2(bool fresh) {
    h2_session& h = session_h2();
    while (!closed_) {
        if (woken_) {
            woken_ = false;
            fresh = true;
        }
        if (fresh && in_len() != 0) {
            io_state& io = *io_;
            // Past its age the connection goes away gracefully (GOAWAY, its streams finish); it
            // is never closed idle for age. A clock read only when an age is set.
            const auto age = ctx_.settings.max_age;
            if (age != timeouts::clock::duration::zero() && !h.closing() &&
                std::chrono::milliseconds(clock_ms(timeouts::clock::now()) - born_ms_) >= age)
                h.drain(io.out);
            const std::size_t used = h.consume(io.in.data(), io.in_len, io.out);
            if (used != 0) {
                io.in_len -= static_cast<std::uint32_t>(used);
                if (io.in_len != 0) std::memmove(io.in.data(), io.in.data() + used, io.in_len);
            }
        }
        h.settle();
        if (closed_) return;
        fresh = false;
        if (output_waiting()) {
            const bool in_batch = sending_;
            switch (write_pending()) {
            case send_status::all:
                written();
                fresh = true;
                continue;
            case send_status::queued:
                if (!in_batch && phase_ == conn_phase::keep_alive && idle_.enrolled())
                    timeouts::timeout_registry::touch(idle_);
                return; // the batch's answer (on_sent) drives the rest
            case send_status::blocked:
                wait(true);
                return;
            case send_status::again:
            case send_status::failed:
                return;
            }
        }
        if (woken_) continue;
        const bool lingering = phase_ == conn_phase::linger;
        // Why it ends once its GOAWAY is out: the idle one's timeout, a stop or pressure that
        // found it idle, or what the session saw.
        static constexpr close_reason idle_reasons[] = {
            close_reason::done, close_reason::keep_alive_timeout, close_reason::shutdown,
            close_reason::pressure};
        close_reason why = idle_goaway_ == 1 ? close_reason::keep_alive_timeout : h.ending();
        if (why == close_reason::done) why = idle_reasons[idle_goaway_];
        if (h.closing() && !lingering) {
            finish(why); // FIN, then lingering if the client sent more
            if (closed_) return;
            continue;
        }
        if (peer_eof_) {
            close(lingering ? why : close_reason::client_close);
            return;
        }
        if (!readable_) {
            wait(false);
            return;
        }
        const std::size_t had = in_len();
        if (read_some() == read_status::failed) return;
        fresh = io_->in_len != had;
        if (lingering) {
            io_->in_len = 0; // discard what a closing client sends
            fresh = false;
        }
    }
}

void connection::wait_h2(bool writable) {
    const h2_session& h = session_h2();
    const bool answered = h.requests() != answered_;
    answered_ = h.requests();
    if (writable) {
        enter(conn_phase::send, true);
    } else if (phase_ == conn_phase::linger) {
        enter(conn_phase::linger, true);
    } else if (!h.idle()) {
        enter(conn_phase::waiting, false); // streams open: their handlers' timeouts bound them
    } else if (h.requests() == 0) {
        enter(conn_phase::header, false); // the preface and the first request: a total
    } else {
        enter(conn_phase::keep_alive, answered);
        release_buffers(false); // idle: the socket and the protocol's state only
        session_h2().release();
        if (tls_) tls_stream().release();
    }
    want_write_ = writable;
    want_read_ = !writable;
}

bool connection::h2_timeout() noexcept {
    switch (phase_) {
    case conn_phase::keep_alive:
        if (input_waiting()) {
            ctx_.metrics.saved_at_timeout.add();
            readable_ = true;
            run_drive();
            return true;
        }
        // RFC 9113 6.8: GOAWAY with the last stream, then the close once it is written.
        idle_goaway_ = 1;
        try {
            session_h2().close_idle(io().out);
        } catch (...) {
            close(close_reason::keep_alive_timeout);
            return true;
        }
        run_drive(); // the GOAWAY out, then the close (h2_session::closing)
        return true;
    case conn_phase::header:
    case conn_phase::silent:
        close(close_reason::header_timeout); // no request came in time: nothing to answer
        return true;
    default:
        return false; // send, linger: as HTTP/1.1
    }
}

void connection::goaway_h2() noexcept {
    // Best effort, never waiting: the client learns that no stream of its was lost and opens a
    // new connection for its next request. Output in the batch of sends is left alone.
    if (sending_) return;
    try {
        io_state& io = this->io();
        io.out.erase(0, io.out_off);
        io.out_off = 0;
        session_h2().close_idle(io.out);
        [[maybe_unused]] const ssize_t n = send_some(io.out.data(), io.out.size());
    } catch (...) {
        // out of memory: close without the courtesy
    }
}

} // namespace tarry::server

#pragma once

// HTTP/2 as a connection's protocol: h2::connection (frames, HPACK, streams, flow control,
// without I/O) driven for the connection, and one h2_stream per request, the http::exchange
// its handler answers through. The same router and handlers as HTTP/1.1's session serve it.
//
// WHY it is its own allocation. An idle HTTP/1.1 connection is the connection object alone; an
// HTTP/2 one needs the h2::connection (its HPACK table, its windows) for as long as it lives.
// The connection takes this object when the client preface arrives (or ALPN chose h2), so the
// HTTP/1.1 connection keeps its size.
//
// Output goes to the connection's output queue (session_transport::output()), as HTTP/1.1's
// responses do: h2::connection appends its frames there. room() and on_writable() of a stream's
// exchange speak of the stream's windows AND of that queue, which is bounded like HTTP/1.1's
// (session_settings::max_queued_bytes): the peer's windows alone can be megabytes.
//
// Deadlines within the connection (h2::watch: a stream's body gap, its DATA held by the peer's
// windows, an incomplete frame or field block, SETTINGS or the graceful PING unacknowledged)
// are entries in the worker's timeout lists, one kind each (client_kinds::h2_*), never a timer:
// h2::connection says when each starts, goes on and ends (on_watch), an entry is enrolled,
// touched or dropped, and when one runs out expired() acts. An entry (an h2_deadline) exists
// only while its deadline runs: an idle connection holds none.

#include "close_reason.hpp"
#include "h2_stream.hpp"

#include <tarry/h2/connection.hpp>
#include <tarry/http/session.hpp>
#include <tarry/timeouts/idle_entry.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tarry::server {

struct connection_context;
struct worker_metrics;
class h2_session;

/// One of an HTTP/2 connection's deadlines (h2::watch) for one stream (0: the connection's),
/// enrolled in the worker's list for its kind and duration while it runs.
struct h2_deadline {
    h2_deadline(h2_session& s, std::uint32_t stream_id, h2::watch w) noexcept
        : entry(timeouts::member_callback<&h2_deadline::expired>, this), session(&s),
          stream(stream_id), what(w) {}
    void expired() noexcept;

    timeouts::idle_entry entry;
    h2_session* session;
    std::unique_ptr<h2_deadline> next; ///< the session's others
    std::uint32_t stream;
    h2::watch what;
};

class h2_session final : public h2::connection_owner {
public:
    /// `ctx`, the worker's (its settings, swapped in place by a reload; the timeout registry
    /// its deadlines enroll in; its counters), outlives the session. `transport`: the
    /// connection.
    h2_session(const connection_context& ctx, http::session_transport& transport);
    h2_session(const h2_session&) = delete;
    h2_session& operator=(const h2_session&) = delete;
    ~h2_session();

    /// The server preface (SETTINGS, the connection's WINDOW_UPDATE).
    void start(std::string& out) { conn_.start(out); }
    /// Bytes in (the client preface first); frames out. Returns the bytes taken: an incomplete
    /// frame's stay with the caller.
    std::size_t consume(const char* data, std::size_t size, std::string& out);
    /// Work a handler's calls left for the connection's next turn (a resumed body, finished
    /// streams' records): call after consume() and when woken.
    void settle();
    /// The connection is idle: the tables' storage goes back (an idle connection keeps only
    /// the h2::connection and what the peer indexed).
    void release() noexcept {
        if (!streams_.empty() || !resumed_.empty()) return;
        std::vector<std::unique_ptr<h2_stream>>().swap(streams_);
        std::vector<std::unique_ptr<h2_stream>>().swap(retired_);
        std::vector<std::uint32_t>().swap(resumed_);
    }
    /// The output queue was written out: streams waiting for room go on.
    void output_drained();
    /// Graceful stop (RFC 9113 6.8): GOAWAY(2^31-1) and a PING, the final GOAWAY with the last
    /// stream when its ACK comes; no new stream after it, the open ones finish.
    void drain(std::string& out) { conn_.shutdown(out); }
    /// Idle past its time: GOAWAY(NO_ERROR) with the last stream, then the close.
    void close_idle(std::string& out) { conn_.goaway(h2::error_code::no_error, out); }
    /// The connection is going away: every answer in progress is told and released, every
    /// deadline dropped.
    void abort() noexcept;
    /// A reload turned timeouts off: every deadline is dropped (new ones are not taken).
    void leave_timeouts() noexcept { deadlines_.reset(); }
    /// Why the connection ends (tarry_connection_closes_total), once closing(): one of its
    /// deadlines, the client's GOAWAY, or `done` (a limit's GOAWAY, a protocol error's).
    [[nodiscard]] close_reason ending() const noexcept {
        return static_cast<close_reason>(ending_);
    }

    /// Nothing more will come: close once the output is written.
    [[nodiscard]] bool closing() const noexcept {
        return broken_ || (conn_.closing() && streams_.empty());
    }
    /// No stream is open, and no answer is in progress.
    [[nodiscard]] bool idle() const noexcept { return conn_.idle() && streams_.empty(); }
    /// Streams answered, for the keep-alive and header deadlines.
    [[nodiscard]] std::uint32_t requests() const noexcept { return started_; }

private:
    friend class h2_stream;

    // h2::connection_owner
    void on_request(std::uint32_t id, const h2::request& head) override;
    std::size_t on_body(std::uint32_t id, std::string_view bytes) override;
    void on_body_end(std::uint32_t id, std::span<const h2::field> trailers) override;
    void on_reset(std::uint32_t id, h2::error_code code, bool by_peer) override;
    void on_writable(std::uint32_t id) override;
    void on_watch(std::uint32_t stream, h2::watch what, bool on) override;
    void on_goaway(std::uint32_t last_stream, h2::error_code code) override;
    void on_goaway_sent(h2::error_code code) override;
    void on_reset_sent(h2::error_code code) override;

    /// The first reason that ends the connection holds: the GOAWAY a timeout sent is what the
    /// client's answer to it, or a later deadline, would otherwise relabel.
    void end_for(close_reason why) noexcept {
        if (ending() == close_reason::done) ending_ = static_cast<std::uint8_t>(why);
    }

    friend struct h2_deadline;
    /// A deadline ran out (its entry is unlinked): dropped, then acted on.
    void expired(h2_deadline& d) noexcept;
    /// Takes `d` out of the session's deadlines; null if it is not there.
    std::unique_ptr<h2_deadline> unlink(const h2_deadline& d) noexcept;

    [[nodiscard]] h2_stream* find(std::uint32_t id) const noexcept;
    /// The stream's record is done with: out of the table now, freed at the next settle() (a
    /// handler's call that ended it is still on the stack).
    void retire(h2_stream& s) noexcept;
    /// The finished answers among `gone` that still wait for their request's body hear that
    /// it will not come (on_abort); `gone` is freed with the caller's vector.
    static void release_orphans(std::vector<std::unique_ptr<h2_stream>>& gone) noexcept;
    void dispatch(h2_stream& s);
    [[nodiscard]] std::string& output() { return transport_.output(); }
    /// Output or room changed outside consume(): the connection drives again.
    void wake() noexcept {
        if (!consuming_) transport_.wake();
    }

    [[nodiscard]] const http::session_settings& settings() const noexcept;
    [[nodiscard]] worker_metrics& metrics() const noexcept;

    const connection_context* ctx_; ///< one pointer for all the worker's: an idle session is small
    http::session_transport& transport_;
    h2::connection conn_;
    std::vector<std::unique_ptr<h2_stream>> streams_; ///< requests whose answer is not done
    std::vector<std::unique_ptr<h2_stream>> retired_; ///< done, freed at the next settle()
    std::vector<std::uint32_t> resumed_;              ///< bodies resumed within their own on_body()
    std::unique_ptr<h2_deadline> deadlines_;          ///< the deadlines running; none while idle
    std::uint32_t started_ = 0;
    bool consuming_ = false;
    bool broken_ : 1 = false;      ///< out of memory while a deadline acted: close as it is
    bool aborted_ : 1 = false;     ///< the connection went: no deadline starts any more
    bool said_goaway_ : 1 = false; ///< a GOAWAY of ours went out: the client's answers it
    std::uint8_t ending_ = static_cast<std::uint8_t>(close_reason::done); ///< a close_reason
};

} // namespace tarry::server

#pragma once

// An HTTP/2 server connection without I/O (RFC 9113): bytes in, events out to an owner,
// frames appended to the caller's output string.
//
// HOW it is driven. The owner (the server's connection) calls start() once for the server
// preface, then consume() with whatever the socket gave; consume() returns how many bytes it
// took, and only an incomplete frame's bytes stay with the caller, as with frame_reader. Events
// reach the owner through `connection_owner` while consume() runs: a request's head, body bytes,
// the body's end, a stream gone. The owner answers through respond(), data(), trailers() and
// reset(), now or later, with the output string it writes to the socket; what the peer's
// flow-control windows do not let out is queued per stream (bounded: room() says how much
// more) and sent, round robin across streams, as WINDOW_UPDATEs come; on_writable() tells an
// owner that was refused room when there is some again.
//
// WHY it is small while idle. Nothing but a few words and the HPACK decoder lives in the
// connection: the stream table is allocated with the first stream and freed with the last,
// a field block being gathered from CONTINUATION frames lives only until it is whole, and the
// strings a block decodes into are the `workspace`'s, one per worker (as the read buffer is).
//
// Abuse (floods of control frames, Rapid Reset and MadeYouReset) is counted per connection and
// ends it with GOAWAY(ENHANCE_YOUR_CALM); no abusive frame is answered by a frame of its own
// beyond what the RFC requires (a PING's ACK, a SETTINGS' ACK) before the bound ends it.

#include "frame.hpp"
#include "hpack_decoder.hpp"
#include "stream.hpp"
#include "window.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::h2 {

struct field {
    std::string_view name;
    std::string_view value;
};

/// A request's head, valid while on_request() runs: views into the connection's workspace.
struct request {
    std::string_view method;
    std::string_view scheme;
    std::string_view authority;    ///< :authority, or Host when it is absent
    std::string_view path;         ///< as sent: origin-form, "*", or empty for a CONNECT
    std::string_view protocol;     ///< :protocol of an extended CONNECT (RFC 8441), else empty
    std::span<const field> fields; ///< the regular fields in order, names in lower case
    std::int64_t content_length = -1;
    bool end_stream = false; ///< no body follows
};

/// A deadline the owner keeps for the connection (on_watch): the connection reads no clock, its
/// owner's timeouts do, and expired() says which ran out.
enum class watch : std::uint8_t {
    body,      ///< a stream's request body: the gap between its DATA (the owner's body timeout)
    stall,     ///< a stream's DATA held by the peer's windows: no progress (send timeout)
    block,     ///< a frame, or a field block in CONTINUATIONs, incomplete: a total (header timeout)
    settings,  ///< our SETTINGS unacknowledged (SETTINGS_TIMEOUT)
    ping,      ///< the graceful stop's PING unanswered
    probe,     ///< streams open and nothing read: a PING at its end (dead-peer detection)
    probe_ack, ///< that PING unanswered, and nothing else read: the connection ends
};
inline constexpr std::size_t watch_kinds = 7;

/// What the connection tells its owner. Each call may call back into the connection (respond,
/// data, reset...), with the owner's own output string.
class connection_owner {
public:
    /// A new stream's request head. The owner answers it with respond() now or later.
    virtual void on_request(std::uint32_t stream, const request& head) = 0;
    /// Body bytes: returns how many it took. Fewer pauses the stream: the rest is kept (the
    /// stream's window bounds it) until resume(); the window reopens only for bytes taken.
    virtual std::size_t on_body(std::uint32_t stream, std::string_view bytes) = 0;
    /// The request's end (END_STREAM), with its trailer fields if any.
    virtual void on_body_end(std::uint32_t stream, std::span<const field> trailers) = 0;
    /// A stream told of by on_request() is gone before both sides ended it: reset by the peer
    /// (`by_peer`), or by this side on a stream error or a connection error. The owner cancels
    /// what it was doing for it; the stream identifier means nothing any more.
    virtual void on_reset(std::uint32_t stream, error_code code, bool by_peer) = 0;
    /// room(stream) became non-zero after data() was refused some bytes.
    virtual void on_writable(std::uint32_t stream) = 0;
    /// The peer sent GOAWAY: it opens no new stream; the ones up to `last_stream` go on.
    virtual void on_goaway(std::uint32_t /*last_stream*/, error_code /*code*/) {}
    /// Our SETTINGS were acknowledged: the owner's SETTINGS_TIMEOUT deadline is off.
    virtual void on_settings_acked() {}
    /// The connection is ending on an error (the GOAWAY is written already): every stream's
    /// on_reset() follows.
    virtual void on_connection_error(error_code /*code*/) {}
    /// A deadline starts (`on`) or ends: for `stream` (body, stall) or for the connection
    /// (stream 0: block, settings, ping). `on` again while on is activity: body and stall start
    /// again from now; block starts again only when a new frame begins after a complete one.
    /// Every deadline is off once its stream or the connection is gone. When one runs out, the
    /// owner calls expired().
    virtual void on_watch(std::uint32_t /*stream*/, watch /*what*/, bool /*on*/) {}
    /// A GOAWAY, an RST_STREAM went into the output with this code (the owner's counters).
    virtual void on_goaway_sent(error_code /*code*/) {}
    virtual void on_reset_sent(error_code /*code*/) {}

protected:
    ~connection_owner() = default;
};

/// The strings a field block decodes into, one per worker (the connection keeps nothing of
/// them between blocks); they grow to the largest block seen and keep that capacity.
struct workspace {
    std::string scratch;                ///< Huffman-decoded strings (hpack_decoder)
    std::string text;                   ///< a block's names and values, copied once
    std::vector<std::uint32_t> offsets; ///< four per field into `text`
    std::vector<field> fields;
    std::string block; ///< a response's field block being encoded
};

/// What a server connection allows; one per listener, shared by its connections.
struct connection_config {
    std::uint32_t max_concurrent_streams = 100;
    std::uint32_t initial_window_size = 65535; ///< each stream's receive window
    std::uint32_t connection_window = 1 << 20; ///< the connection's receive window
    decoder_limits header_limits{};            ///< SETTINGS_MAX_HEADER_LIST_SIZE: max_list_size
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441): WebSockets over HTTP/2. On whatever the
    /// routes: an extended CONNECT to a route that takes no WebSocket is answered as any method
    /// it does not take.
    bool enable_connect_protocol = true;
    /// Dead-peer detection (off by default): a connection with streams open that reads nothing
    /// for the owner's interval (watch::probe) is sent a PING, and ends if nothing comes back
    /// within the owner's bound (watch::probe_ack). A client gone without a FIN (a dead NAT
    /// entry, a laptop closed) otherwise holds its streams, WebSocket tunnels above all, until
    /// their own timeouts, which a quiet WebSocket may never reach.
    bool probe_peer = false;
    std::uint32_t max_continuations = 16;     ///< CONTINUATION frames after one HEADERS
    std::uint32_t max_block_size = 64 * 1024; ///< a field block's bytes gathered
    std::uint32_t max_queued = 64 * 1024;     ///< DATA queued per stream beyond the windows
    /// Floods: each kind of frame (PING, SETTINGS, PRIORITY, WINDOW_UPDATE, RST_STREAM, empty
    /// DATA, HEADERS and CONTINUATION) at most this many times per connection, plus one for
    /// each request served.
    std::uint32_t max_control_frames = 1000;
    /// Rapid Reset, MadeYouReset: streams reset by either side (refused ones too) at most this
    /// many plus half the requests served.
    std::uint32_t max_resets = 100;
    /// Streams opened by one consume() call (nginx: twice the concurrent streams).
    std::uint32_t max_new_streams_per_read = 200;
};

class connection {
public:
    connection(const connection_config& config, connection_owner& owner, workspace& ws) noexcept;
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// The server preface: our SETTINGS (and a WINDOW_UPDATE raising the connection's window).
    /// The owner arms its SETTINGS_TIMEOUT deadline now; on_settings_acked() ends it.
    void start(std::string& out);

    /// Bytes received: the client preface and SETTINGS first, then any frame. Returns the bytes
    /// taken; the rest (an incomplete frame) comes again with more. After a connection error
    /// everything is taken and thrown away.
    std::size_t consume(const char* data, std::size_t size, std::string& out);

    // Output for one stream; false (nothing written) if the stream is gone or already ended.

    /// The response's HEADERS: `status` and `fields` (names lowered, connection-specific
    /// fields left out, as an HTTP/1.1 upstream's need). A 1xx status is an interim response
    /// (100 Continue): the final one follows.
    bool respond(std::uint32_t stream, unsigned status, std::span<const field> fields,
                 bool end_stream, std::string& out);
    /// Body bytes: sent as far as the windows allow, the rest queued up to max_queued. Returns
    /// the bytes accepted (fewer: room() is 0 until on_writable()); `end` applies only when all
    /// were accepted.
    std::size_t data(std::uint32_t stream, std::string_view body, bool end, std::string& out);
    /// Trailer fields, ending the stream, after whatever data is queued.
    bool trailers(std::uint32_t stream, std::span<const field> fields, std::string& out);
    /// RST_STREAM: the stream is gone (no on_reset for it).
    void reset(std::uint32_t stream, error_code code, std::string& out);
    /// Body bytes the owner had refused are given again (on_body), as many as it takes now.
    void resume(std::uint32_t stream, std::string& out);
    /// Bytes data() would accept now.
    [[nodiscard]] std::size_t room(std::uint32_t stream) const noexcept;

    // Closing (RFC 9113, 6.8).

    /// GOAWAY now with the last stream processed; no new stream is accepted, the open ones
    /// finish. An error code other than NO_ERROR ends the connection (closing() at once).
    void goaway(error_code code, std::string& out, std::string_view debug = {});
    /// The graceful sequence's first step: GOAWAY(2^31-1) and a PING; the final GOAWAY with
    /// the real last stream goes when the PING's ACK comes, or at finish_shutdown() (the
    /// owner's timer bounds the wait).
    void shutdown(std::string& out);
    void finish_shutdown(std::string& out);

    /// The owner's deadline `what` (on_watch) ran out: a body gap or a stall resets the stream
    /// (RST_STREAM(NO_ERROR) if its response went out whole, as RFC 9113 8.1 lets a server stop
    /// a request it no longer needs, else CANCEL); an incomplete block ends the connection
    /// (GOAWAY(ENHANCE_YOUR_CALM)), an unacknowledged SETTINGS too (GOAWAY(SETTINGS_TIMEOUT));
    /// the graceful PING's wait ends with the final GOAWAY (finish_shutdown); a quiet
    /// connection with streams is sent a PING (probe), and ends with GOAWAY(NO_ERROR) when
    /// nothing answered it (probe_ack).
    void expired(std::uint32_t stream, watch what, std::string& out);

    /// No stream is open.
    [[nodiscard]] bool idle() const noexcept { return !table_ || table_->empty(); }
    /// Nothing new will come: a connection error, or a GOAWAY either way with no stream left.
    /// The owner closes once its output is written.
    [[nodiscard]] bool closing() const noexcept;
    /// Our SETTINGS wait for their ACK (the owner's SETTINGS_TIMEOUT).
    [[nodiscard]] bool settings_pending() const noexcept { return settings_pending_ != 0; }
    /// A stream is gathering its field block (the owner's header timeout applies).
    [[nodiscard]] bool receiving_headers() const noexcept { return gather_ != nullptr; }
    /// Streams answered whole; streams reset by either side.
    [[nodiscard]] std::uint32_t requests() const noexcept { return requests_; }
    [[nodiscard]] std::uint32_t resets() const noexcept { return resets_; }
    [[nodiscard]] std::size_t open_streams() const noexcept { return table_ ? table_->size() : 0; }
    /// The heap bytes the connection holds now, besides sizeof(connection): the HPACK table
    /// (what the peer indexed), and while streams are open their table and their buffers.
    [[nodiscard]] std::size_t allocated() const noexcept;
    /// The peer's SETTINGS as it sent them.
    [[nodiscard]] const settings& peer_settings() const noexcept { return peer_; }

private:
    enum class phase : std::uint8_t { preface, first_settings, frames, closed };
    enum flood : std::uint8_t {
        ping_frames,
        settings_frames,
        priority_frames,
        window_update_frames,
        rst_stream_frames,
        empty_frames,
        flood_kinds,
    };
    struct gathering; // a field block arriving in CONTINUATION frames
    using table = std::vector<std::unique_ptr<stream>>;

    std::size_t consume_frames(bytes in, std::string& out);
    void on_frame(const frame_reader::result& r, std::string& out);
    void on_data(const frame_reader::result& r, std::string& out);
    void on_headers(const frame_header& h, bytes fragment, frame_error priority_error,
                    std::string& out);
    void on_continuation(const frame_header& h, bytes fragment, std::string& out);
    void on_block(std::uint32_t id, std::uint8_t flags, bytes block, frame_error priority_error,
                  std::string& out);
    void on_settings(const frame_header& h, bytes payload, std::string& out);
    void on_ping(const frame_header& h, bytes payload, std::string& out);
    void on_goaway_frame(bytes payload);
    void on_rst_stream(const frame_header& h, bytes payload, std::string& out);
    void on_window_update(const frame_header& h, bytes payload, std::string& out);

    stream* find(std::uint32_t id) const noexcept;
    stream* open(std::uint32_t id);
    void erase(std::uint32_t id, std::string& out);
    /// A stream at or below the highest seen and not open is closed; whether it closed lately
    /// (its identifier, with reset_here if this side reset it) or long ago (0).
    [[nodiscard]] std::uint32_t recently_closed(std::uint32_t id) const noexcept;
    void remember_closed(std::uint32_t id) noexcept;

    void deliver(std::uint32_t id, std::string& out);
    void release(std::uint32_t n, std::string& out);
    void replenish(stream& s, std::string& out);
    bool send_one(stream& s, std::string& out);
    void flush(std::string& out);
    void notify_writable();
    void maybe_close(std::uint32_t id, std::string& out);
    void send_rst_stream(std::string& out, std::uint32_t id, error_code code);
    void send_goaway(std::string& out, std::uint32_t last, error_code code,
                     std::string_view debug = {});
    /// Tells the owner a stream's deadline starts, goes on (activity) or ends.
    void watch_stream(stream& s, watch what, bool on);
    /// The body deadline: on while the peer is to send more and the owner takes it. Never for
    /// an extended CONNECT: its DATA are a tunnel's bytes, which may rest as long as the
    /// tunnel's own idle timeout lets them.
    void watch_body(stream& s) {
        watch_stream(s, watch::body, !s.remote_closed && !s.paused && s.in.empty() && !s.tunnel);
    }
    void watch_connection(watch what, bool on);
    /// Something was read: with streams open the dead-peer interval starts again, and an
    /// outstanding probe is answered (anything read proves the peer alive, as its ACK would).
    void heard_from_peer();
    /// No stream is open any more: the dead-peer deadlines end (an idle connection holds none).
    void stop_probing();

    void stream_error(std::uint32_t id, error_code code, std::string& out);
    void connection_error(error_code code, std::string& out, std::string_view debug = {});
    bool count(flood kind, std::string& out);
    bool count_reset(std::string& out);

    const connection_config& config_;
    connection_owner& owner_;
    workspace& ws_;
    std::unique_ptr<table> table_;      ///< open streams; none while idle
    std::unique_ptr<gathering> gather_; ///< a field block in CONTINUATION frames
    frame_reader reader_;
    hpack_decoder decoder_;
    settings peer_;
    window send_window_;                 ///< the peer's connection window for our DATA
    window recv_window_;                 ///< ours for its DATA
    std::uint32_t held_ = 0;             ///< body bytes received and not taken by the owner
    std::uint32_t recv_initial_ = 65535; ///< each stream's receive window, as the peer knows it
    std::uint32_t last_stream_ = 0;      ///< the highest stream the peer opened
    std::uint32_t goaway_last_ = max_stream_id; ///< streams past this are ignored
    std::uint32_t closed_[2] = {};              ///< the last streams closed, for STREAM_CLOSED
    std::uint32_t data_stream_ = 0;             ///< the DATA frame in progress
    std::uint32_t data_seen_ = 0;               ///< its payload bytes so far
    std::uint32_t requests_ = 0;
    std::uint32_t resets_ = 0;
    std::uint32_t floods_[flood_kinds] = {};
    std::uint16_t new_streams_ = 0;  ///< streams opened by this consume() (saturating)
    std::uint16_t preface_seen_ = 0; ///< client preface bytes matched so far
    std::uint16_t rr_ = 0;           ///< where the next round robin starts
    phase phase_ = phase::preface;
    // Flags in one byte, the deadlines in the next: the object keeps its size. (Unsigned bits
    // rather than bool ones: GCC 12's -fsanitize=bool misreads a bool bit-field's byte.)
    std::uint8_t settings_pending_ : 1 = 0;
    std::uint8_t goaway_sent_ : 1 = 0;
    std::uint8_t goaway_received_ : 1 = 0;
    std::uint8_t shutdown_ping_ : 1 = 0; ///< the graceful PING is out, waiting for its ACK
    std::uint8_t data_discard_ : 1 = 0;  ///< the DATA frame in progress goes nowhere
    std::uint8_t probe_ping_ : 1 = 0;    ///< the dead-peer PING is out, nothing read since
    std::uint8_t watching_ = 0;          ///< the connection's deadlines on (bits by watch)
};

} // namespace tarry::h2

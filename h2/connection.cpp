#include "connection.hpp"

#include "hpack_encoder.hpp"
#include "request_checks.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace tarry::h2 {

namespace {

/// The opaque data of the graceful shutdown's PING.
constexpr std::array<std::uint8_t, 8> shutdown_opaque{'t', 'a', 'r', 'r', 'y', 'b', 'y', 'e'};
/// The dead-peer PING's: its ACK must not be taken for the graceful one's.
constexpr std::array<std::uint8_t, 8> probe_opaque{'t', 'a', 'r', 'r', 'y', 'p', 'i', 'n'};
/// In `closed_`: this side reset the stream, so frames still in flight on it are ignored
/// (RFC 9113, 5.4.2) rather than answered.
constexpr std::uint32_t reset_here = 0x80000000U;

/// Appends a response's fields: names in lower case as HTTP/2 requires (an HTTP/1.1 upstream's
/// are not), connection-specific fields left out (8.2.2).
void encode_fields(std::string& block, std::span<const field> fields) {
    std::string lower;
    for (const field& f : fields) {
        std::string_view name = f.name;
        if (std::any_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
            lower.assign(name);
            for (char& c : lower)
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            name = lower;
        }
        if (connection_specific(name)) continue;
        encode_field(block, name, f.value);
    }
}

std::uint32_t connection_target(const connection_config& c) noexcept {
    return std::max<std::uint32_t>(c.connection_window, window::initial);
}

/// A deadline's bit in stream::watching and the connection's own.
constexpr std::uint8_t bit(watch w) noexcept {
    return static_cast<std::uint8_t>(1U << static_cast<unsigned>(w));
}

} // namespace

struct connection::gathering {
    std::uint32_t stream = 0;
    std::uint8_t flags = 0;
    std::uint32_t continuations = 0;
    frame_error priority_error{};
    std::string block;
};

connection::connection(const connection_config& config, connection_owner& owner,
                       workspace& ws) noexcept
    : config_(config), owner_(owner), ws_(ws) {}

connection::~connection() = default;

void connection::start(std::string& out) {
    settings ours;
    ours.max_concurrent_streams = config_.max_concurrent_streams;
    ours.initial_window_size = std::min(config_.initial_window_size, max_window);
    ours.max_header_list_size = static_cast<std::uint32_t>(
        std::min<std::size_t>(config_.header_limits.max_list_size, settings::unlimited));
    ours.enable_connect_protocol = config_.enable_connect_protocol ? 1 : 0;
    write_settings(out, ours);
    settings_pending_ = true;
    watch_connection(watch::settings, true);
    const std::uint32_t target = connection_target(config_);
    if (target > static_cast<std::uint32_t>(window::initial)) {
        write_window_update(out, 0, target - window::initial);
        recv_window_ = window(static_cast<std::int32_t>(std::min(target, max_window)));
    }
}

std::size_t connection::consume(const char* data, std::size_t size, std::string& out) {
    new_streams_ = 0;
    if (phase_ == phase::closed) return size;
    std::size_t at = 0;
    if (phase_ == phase::preface) {
        const std::size_t n = std::min(size, client_preface.size() - preface_seen_);
        if (n != 0 && std::memcmp(data, client_preface.data() + preface_seen_, n) != 0) {
            connection_error(error_code::protocol_error, out);
            return size;
        }
        preface_seen_ = static_cast<std::uint16_t>(preface_seen_ + n);
        at = n;
    }
    if (preface_seen_ == client_preface.size()) {
        if (phase_ == phase::preface) phase_ = phase::first_settings;
        const auto* p = reinterpret_cast<const std::uint8_t*>(data);
        at += consume_frames(bytes(p + at, size - at), out);
    }
    if (phase_ == phase::closed) return size;
    // An incomplete frame, or a field block in CONTINUATIONs, is held to a total: one that is
    // trickled a byte at a time must not hold a connection whose streams are busy. A frame
    // that begins after complete ones (and outside a block) has its own total.
    const bool watched = (watching_ & bit(watch::block)) != 0;
    // Inside a field block the total runs from the HEADERS on (told once).
    if (gather_ || (at != size && !watched))
        watch_connection(watch::block, true);
    else if (at == size)
        watch_connection(watch::block, false);
    else if (at != 0)
        owner_.on_watch(0, watch::block, true); // a new frame began: its own total, from now
    heard_from_peer();
    return at;
}

void connection::heard_from_peer() {
    if (probe_ping_ != 0) {
        probe_ping_ = 0;
        watch_connection(watch::probe_ack, false);
    }
    if (!config_.probe_peer || idle()) return;
    if ((watching_ & bit(watch::probe)) == 0)
        watch_connection(watch::probe, true);
    else
        owner_.on_watch(0, watch::probe, true); // activity: the interval from now
}

void connection::stop_probing() {
    probe_ping_ = 0;
    watch_connection(watch::probe, false);
    watch_connection(watch::probe_ack, false);
}

std::size_t connection::consume_frames(bytes in, std::string& out) {
    std::size_t taken = 0;
    while (phase_ != phase::closed) {
        const frame_reader::result r = reader_.read(in.subspan(taken));
        taken += r.consumed;
        switch (r.what) {
        case frame_reader::event::need_more:
            return taken;
        case frame_reader::event::error:
            if (r.error.connection_error() || gather_ || phase_ == phase::first_settings)
                connection_error(r.error.code, out);
            else
                stream_error(r.error.stream, r.error.code, out);
            break;
        case frame_reader::event::frame:
            if (phase_ == phase::first_settings &&
                (!r.header.is(frame_type::settings) || r.header.has(flag::ack))) {
                connection_error(error_code::protocol_error, out); // 3.4
                break;
            }
            on_frame(r, out);
            break;
        case frame_reader::event::data:
            if (phase_ == phase::first_settings) {
                connection_error(error_code::protocol_error, out);
                break;
            }
            on_data(r, out);
            break;
        }
    }
    return taken;
}

void connection::on_frame(const frame_reader::result& r, std::string& out) {
    const frame_header& h = r.header;
    if (gather_ && !h.is(frame_type::continuation)) {
        connection_error(error_code::protocol_error, out); // 6.10: nothing may interleave
        return;
    }
    if (h.type > last_known_frame_type) return; // an extension's frame: ignored (5.5)
    switch (h.kind()) {
    case frame_type::headers:
        on_headers(h, r.payload, r.error, out);
        break;
    case frame_type::continuation:
        on_continuation(h, r.payload, out);
        break;
    case frame_type::priority:
        // Deprecated (5.3.2): validated by the reader, otherwise ignored, but counted.
        count(priority_frames, out);
        break;
    case frame_type::rst_stream:
        on_rst_stream(h, r.payload, out);
        break;
    case frame_type::settings:
        on_settings(h, r.payload, out);
        break;
    case frame_type::push_promise:
        connection_error(error_code::protocol_error, out); // 8.4: a client cannot push
        break;
    case frame_type::ping:
        on_ping(h, r.payload, out);
        break;
    case frame_type::goaway:
        on_goaway_frame(r.payload);
        break;
    case frame_type::window_update:
        on_window_update(h, r.payload, out);
        break;
    case frame_type::data:
        break; // data events, never frames
    }
}

// HEADERS and CONTINUATION.

void connection::on_headers(const frame_header& h, bytes fragment, frame_error priority_error,
                            std::string& out) {
    if (h.stream % 2 == 0) {
        connection_error(error_code::protocol_error, out); // 5.1.1: a client's are odd
        return;
    }
    if (h.has(flag::end_headers)) {
        on_block(h.stream, h.flags, fragment, priority_error, out);
        return;
    }
    if (fragment.empty() && !count(empty_frames, out)) return;
    if (fragment.size() > config_.max_block_size) {
        connection_error(error_code::enhance_your_calm, out);
        return;
    }
    gather_ = std::make_unique<gathering>();
    gather_->stream = h.stream;
    gather_->flags = h.flags;
    gather_->priority_error = priority_error;
    gather_->block.assign(reinterpret_cast<const char*>(fragment.data()), fragment.size());
}

void connection::on_continuation(const frame_header& h, bytes fragment, std::string& out) {
    if (!gather_ || gather_->stream != h.stream) {
        connection_error(error_code::protocol_error, out); // 6.10
        return;
    }
    if (fragment.empty() && !h.has(flag::end_headers) && !count(empty_frames, out)) return;
    if (++gather_->continuations > config_.max_continuations ||
        gather_->block.size() + fragment.size() > config_.max_block_size) {
        connection_error(error_code::enhance_your_calm, out);
        return;
    }
    gather_->block.append(reinterpret_cast<const char*>(fragment.data()), fragment.size());
    if (!h.has(flag::end_headers)) return;
    const std::unique_ptr<gathering> g = std::move(gather_);
    on_block(g->stream, g->flags, as_bytes(g->block), g->priority_error, out);
}

void connection::on_block(std::uint32_t id, std::uint8_t flags, bytes block,
                          frame_error priority_error, std::string& out) {
    // Decoded whatever becomes of the stream: the table must stay in step with the peer's.
    ws_.text.clear();
    ws_.offsets.clear();
    const decode_status status = decoder_.decode(
        block, ws_.scratch, config_.header_limits,
        [this](std::string_view name, std::string_view value) {
            const auto at = static_cast<std::uint32_t>(ws_.text.size());
            ws_.text.append(name);
            ws_.text.append(value);
            ws_.offsets.insert(ws_.offsets.end(), {at, static_cast<std::uint32_t>(name.size()),
                                                   at + static_cast<std::uint32_t>(name.size()),
                                                   static_cast<std::uint32_t>(value.size())});
        });
    if (status == decode_status::compression_error) {
        connection_error(error_code::compression_error, out);
        return;
    }
    ws_.fields.clear();
    const std::string_view text = ws_.text;
    for (std::size_t i = 0; i + 3 < ws_.offsets.size(); i += 4)
        ws_.fields.push_back({text.substr(ws_.offsets[i], ws_.offsets[i + 1]),
                              text.substr(ws_.offsets[i + 2], ws_.offsets[i + 3])});

    const bool end_stream = (flags & flag::end_stream) != 0;
    const bool is_new = id > last_stream_;
    if (goaway_sent_ && id > goaway_last_) return; // 6.8: ignored, never opened
    if (!is_new) {
        stream* s = find(id);
        if (s == nullptr) {
            const std::uint32_t closed = recently_closed(id);
            if ((closed & reset_here) != 0) return; // in flight when we reset it
            // 5.1: a HEADERS on a stream that closed is a connection error; one whose
            // identifier was never used is a lower identifier than the last (5.1.1).
            connection_error(closed != 0 ? error_code::stream_closed : error_code::protocol_error,
                             out);
            return;
        }
        if (s->remote_closed) {
            stream_error(id, error_code::stream_closed, out); // half-closed (remote)
            return;
        }
        // Trailers (8.1): END_STREAM, no pseudo-field, within the limits.
        request_checks checks(true);
        for (const field& f : ws_.fields)
            checks.field(f.name, f.value);
        if (!end_stream || priority_error.code != error_code::no_error ||
            status != decode_status::ok || !checks.finish() ||
            (s->content_length >= 0 &&
             s->received != static_cast<std::uint64_t>(s->content_length))) {
            stream_error(id, error_code::protocol_error, out);
            return;
        }
        s->remote_closed = true;
        watch_body(*s);
        if (s->paused || !s->in.empty()) {
            s->end_pending = true; // told after the body, without the trailers
            return;
        }
        owner_.on_body_end(id, ws_.fields);
        maybe_close(id, out);
        return;
    }

    last_stream_ = id;
    if (new_streams_ < UINT16_MAX) ++new_streams_;
    if (new_streams_ > config_.max_new_streams_per_read) {
        connection_error(error_code::enhance_your_calm, out); // Rapid Reset
        return;
    }
    if (priority_error.code != error_code::no_error) {
        stream_error(id, priority_error.code, out);
        return;
    }
    if (status == decode_status::too_large) {
        // 431 as HTTP/1.1 answers it; a body still coming is refused by the reset.
        ws_.block.clear();
        encode_status(ws_.block, 431);
        write_headers(out, id, ws_.block, true, peer_.max_frame_size);
        if (!end_stream) send_rst_stream(out, id, error_code::no_error);
        remember_closed(id | reset_here);
        count_reset(out);
        return;
    }
    request_checks checks(false, config_.enable_connect_protocol);
    for (const field& f : ws_.fields)
        checks.field(f.name, f.value);
    if (!checks.finish() || (end_stream && checks.content_length > 0)) {
        stream_error(id, error_code::protocol_error, out); // 8.1.1: malformed
        return;
    }
    if (open_streams() >= config_.max_concurrent_streams) {
        stream_error(id, error_code::refused_stream, out); // 5.1.2
        return;
    }
    stream* s = open(id);
    s->remote_closed = end_stream;
    s->content_length = checks.content_length;
    s->tunnel = !checks.protocol.empty();
    watch_body(*s);
    const auto first_regular =
        std::find_if(ws_.fields.begin(), ws_.fields.end(),
                     [](const field& f) { return !request_checks::pseudo(f.name); });
    request head;
    head.method = checks.method;
    head.scheme = checks.scheme;
    head.authority = checks.authority.empty() ? checks.host : checks.authority;
    head.path = checks.path;
    head.protocol = checks.protocol;
    head.fields = std::span<const field>(first_regular, ws_.fields.end());
    head.content_length = checks.content_length;
    head.end_stream = end_stream;
    owner_.on_request(id, head);
    maybe_close(id, out);
}

// DATA.

void connection::on_data(const frame_reader::result& r, std::string& out) {
    const frame_header& h = r.header;
    if (gather_) {
        connection_error(error_code::protocol_error, out);
        return;
    }
    if (r.first) {
        data_stream_ = h.stream;
        data_seen_ = 0;
        data_discard_ = true;
        if (h.stream > last_stream_) {
            connection_error(error_code::protocol_error, out); // 5.1: idle
            return;
        }
        // The connection's window counts every DATA frame, whatever its stream (6.9).
        if (recv_window_.consume(h.length) != error_code::no_error) {
            connection_error(error_code::flow_control_error, out);
            return;
        }
        held_ += h.length;
        if (h.length == 0 && !h.has(flag::end_stream) && !count(empty_frames, out)) return;
        stream* s = find(h.stream);
        if (s == nullptr) {
            const std::uint32_t closed = recently_closed(h.stream);
            if ((closed & reset_here) == 0 && !(goaway_sent_ && h.stream > goaway_last_))
                stream_error(h.stream, error_code::stream_closed, out);
        } else if (s->remote_closed) {
            stream_error(h.stream, error_code::stream_closed, out);
        } else if (s->recv.consume(h.length) != error_code::no_error) {
            stream_error(h.stream, error_code::flow_control_error, out);
        } else {
            data_discard_ = false;
        }
        if (phase_ == phase::closed) return;
    }
    const std::uint32_t id = data_stream_;
    if (!r.payload.empty()) {
        const auto n = static_cast<std::uint32_t>(r.payload.size());
        data_seen_ += n;
        stream* s = data_discard_ ? nullptr : find(id);
        if (s == nullptr) {
            data_discard_ = true;
            release(n, out);
        } else {
            s->received += n;
            if (s->content_length >= 0 &&
                s->received > static_cast<std::uint64_t>(s->content_length)) {
                release(n, out);
                data_discard_ = true;
                stream_error(id, error_code::protocol_error, out); // 8.1.1
                if (phase_ == phase::closed) return;
            } else if (s->paused || !s->in.empty()) {
                s->in.append(reinterpret_cast<const char*>(r.payload.data()), n);
            } else {
                const std::string_view piece(reinterpret_cast<const char*>(r.payload.data()), n);
                const std::size_t took = std::min<std::size_t>(owner_.on_body(id, piece), n);
                release(static_cast<std::uint32_t>(took), out);
                s = find(id);
                if (s == nullptr) {
                    release(static_cast<std::uint32_t>(n - took), out);
                    data_discard_ = true;
                } else {
                    if (took < n) {
                        s->in.append(piece.substr(took));
                        s->paused = true;
                    }
                    watch_body(*s); // bytes came: the gap starts again (off if paused)
                    replenish(*s, out);
                }
            }
        }
    }
    if (!r.last || phase_ == phase::closed) return;
    release(h.length - data_seen_, out); // padding and its length
    stream* s = data_discard_ ? nullptr : find(id);
    data_stream_ = 0;
    if (s == nullptr) return;
    replenish(*s, out);
    if (!h.has(flag::end_stream)) return;
    if (s->content_length >= 0 && s->received != static_cast<std::uint64_t>(s->content_length)) {
        stream_error(id, error_code::protocol_error, out);
        return;
    }
    s->remote_closed = true;
    watch_body(*s);
    if (s->paused || !s->in.empty()) {
        s->end_pending = true;
        return;
    }
    owner_.on_body_end(id, {});
    maybe_close(id, out);
}

void connection::release(std::uint32_t n, std::string& out) {
    held_ -= std::min(n, held_);
    if (phase_ == phase::closed) return;
    const auto target = static_cast<std::int64_t>(std::min(connection_target(config_), max_window));
    const std::int64_t increment = target - held_ - recv_window_.size();
    if (increment <= 0 || increment < target / 2) return;
    write_window_update(out, 0, static_cast<std::uint32_t>(increment));
    (void)recv_window_.increase(static_cast<std::uint32_t>(increment));
}

void connection::replenish(stream& s, std::string& out) {
    if (s.remote_closed || phase_ == phase::closed) return;
    const auto target = static_cast<std::int64_t>(recv_initial_);
    const std::int64_t increment = target - static_cast<std::int64_t>(s.in.size()) - s.recv.size();
    if (increment <= 0 || increment < target / 2) return;
    write_window_update(out, s.id, static_cast<std::uint32_t>(increment));
    (void)s.recv.increase(static_cast<std::uint32_t>(increment));
}

void connection::deliver(std::uint32_t id, std::string& out) {
    stream* s = find(id);
    if (s == nullptr) return;
    if (!s->in.empty()) {
        // Moved out while the owner reads it: it may reset the stream from on_body().
        std::string pending = std::move(s->in);
        s->in.clear();
        const std::size_t took = std::min(owner_.on_body(id, pending), pending.size());
        release(static_cast<std::uint32_t>(took), out);
        s = find(id);
        if (s == nullptr) {
            release(static_cast<std::uint32_t>(pending.size() - took), out);
            return;
        }
        if (took < pending.size()) {
            pending.erase(0, took);
            s->in = std::move(pending);
            s->paused = true;
            replenish(*s, out);
            return;
        }
    }
    s->paused = false;
    watch_body(*s); // the peer may send again: the gap starts now
    replenish(*s, out);
    if (!s->end_pending) return;
    s->end_pending = false;
    owner_.on_body_end(id, {});
    maybe_close(id, out);
}

void connection::resume(std::uint32_t id, std::string& out) {
    if (stream* s = find(id)) {
        s->paused = false;
        deliver(id, out);
    }
}

// Control frames.

void connection::on_settings(const frame_header& h, bytes payload, std::string& out) {
    if (h.has(flag::ack)) {
        if (!settings_pending_) return;
        settings_pending_ = false;
        watch_connection(watch::settings, false);
        // Our stream window now holds for every stream, open ones too (6.9.2).
        const std::uint32_t ours = std::min(config_.initial_window_size, max_window);
        const std::int64_t delta = std::int64_t{ours} - recv_initial_;
        recv_initial_ = ours;
        if (table_)
            for (auto& s : *table_)
                (void)s->recv.adjust(delta);
        owner_.on_settings_acked();
        return;
    }
    if (!count(settings_frames, out)) return;
    const std::uint32_t before = peer_.initial_window_size;
    if (const error_code e = apply_settings(peer_, payload); e != error_code::no_error) {
        connection_error(e, out);
        return;
    }
    write_settings_ack(out);
    if (phase_ == phase::first_settings) phase_ = phase::frames;
    if (peer_.initial_window_size != before && table_) {
        const std::int64_t delta = std::int64_t{peer_.initial_window_size} - before;
        for (auto& s : *table_) {
            if (s->send.adjust(delta) != error_code::no_error) {
                connection_error(error_code::flow_control_error, out);
                return;
            }
        }
    }
    flush(out);
}

void connection::on_ping(const frame_header& h, bytes payload, std::string& out) {
    if (!count(ping_frames, out)) return;
    if (!h.has(flag::ack)) {
        write_ping_ack(out, payload);
        return;
    }
    if (shutdown_ping_ && std::equal(payload.begin(), payload.end(), shutdown_opaque.begin()))
        finish_shutdown(out);
}

void connection::on_goaway_frame(bytes payload) {
    const goaway_payload g = parse_goaway(payload);
    goaway_received_ = true;
    owner_.on_goaway(g.last_stream, static_cast<error_code>(g.code));
}

void connection::on_rst_stream(const frame_header& h, bytes payload, std::string& out) {
    if (!count(rst_stream_frames, out)) return;
    if (h.stream > last_stream_) {
        connection_error(error_code::protocol_error, out); // 5.1: idle
        return;
    }
    if (find(h.stream) == nullptr) return; // closed: nothing to do
    erase(h.stream, out);
    owner_.on_reset(h.stream, static_cast<error_code>(read_u32(payload.data())), true);
    count_reset(out);
}

void connection::on_window_update(const frame_header& h, bytes payload, std::string& out) {
    if (!count(window_update_frames, out)) return;
    const std::uint32_t increment = read_u31(payload);
    if (h.stream == 0) {
        if (send_window_.increase(increment) != error_code::no_error) {
            connection_error(error_code::flow_control_error, out);
            return;
        }
    } else {
        if (h.stream > last_stream_) {
            connection_error(error_code::protocol_error, out); // 5.1: idle
            return;
        }
        stream* s = find(h.stream);
        if (s == nullptr) return;
        if (s->send.increase(increment) != error_code::no_error) {
            stream_error(h.stream, error_code::flow_control_error, out);
            return;
        }
    }
    flush(out);
}

// Output.

bool connection::respond(std::uint32_t id, unsigned status, std::span<const field> fields,
                         bool end_stream, std::string& out) {
    stream* s = find(id);
    if (s == nullptr || s->responded || phase_ == phase::closed) return false;
    // An interim response (100 Continue, 103 Early Hints) never ends the stream (8.1).
    const bool interim = status < 200;
    if (interim && end_stream) return false;
    ws_.block.clear();
    encode_status(ws_.block, status);
    encode_fields(ws_.block, fields);
    write_headers(out, id, ws_.block, end_stream, peer_.max_frame_size);
    if (interim) return true;
    s->responded = true;
    if (s->tunnel && status >= 300) {
        // An extended CONNECT refused (RFC 8441 5: only a 2xx opens the tunnel): what else the
        // client sends on it is a request body like any, under the body deadline.
        s->tunnel = false;
        watch_body(*s);
    }
    if (end_stream) {
        s->end_queued = true;
        s->local_closed = true;
        maybe_close(id, out);
    }
    return true;
}

std::size_t connection::data(std::uint32_t id, std::string_view body, bool end, std::string& out) {
    stream* s = find(id);
    if (s == nullptr || !s->responded || s->end_queued || phase_ == phase::closed) return 0;
    std::size_t sent = 0;
    if (s->queued() == 0) {
        // Straight out as far as the windows go, copied nowhere.
        for (;;) {
            const std::int64_t fit =
                std::min<std::int64_t>({static_cast<std::int64_t>(body.size() - sent),
                                        s->send.size(), send_window_.size(), peer_.max_frame_size});
            if (fit <= 0) break;
            const auto n = static_cast<std::uint32_t>(fit);
            const bool last = end && sent + n == body.size();
            write_data(out, id, body.substr(sent, n), last);
            (void)s->send.consume(n);
            (void)send_window_.consume(n);
            floods_[window_update_frames] = 0; // updates for this are expected
            sent += n;
            if (last) {
                s->end_queued = true;
                s->local_closed = true;
                maybe_close(id, out);
                return sent;
            }
        }
    }
    const std::size_t queue = std::min(body.size() - sent, room(id));
    s->out.append(body.substr(sent, queue));
    sent += queue;
    // Held by the peer's windows from now (progress, in send_one, starts it again).
    if (s->queued() != 0 && (s->watching & bit(watch::stall)) == 0)
        watch_stream(*s, watch::stall, true);
    if (sent < body.size()) {
        s->want_room = true;
    } else if (end) {
        s->end_queued = true;
        if (s->queued() == 0) { // an empty last piece
            write_data(out, id, {}, true);
            s->local_closed = true;
            maybe_close(id, out);
        }
    }
    return sent;
}

bool connection::trailers(std::uint32_t id, std::span<const field> fields, std::string& out) {
    stream* s = find(id);
    if (s == nullptr || !s->responded || s->end_queued || phase_ == phase::closed) return false;
    std::string block;
    encode_fields(block, fields);
    s->end_queued = true;
    if (s->queued() != 0) {
        s->trailers = std::move(block);
        return true;
    }
    write_headers(out, id, block, true, peer_.max_frame_size);
    s->local_closed = true;
    maybe_close(id, out);
    return true;
}

std::size_t connection::room(std::uint32_t id) const noexcept {
    const stream* s = find(id);
    if (s == nullptr || s->end_queued) return 0;
    return config_.max_queued - std::min<std::size_t>(config_.max_queued, s->queued());
}

void connection::reset(std::uint32_t id, error_code code, std::string& out) {
    if (find(id) == nullptr || phase_ == phase::closed) return;
    send_rst_stream(out, id, code);
    erase(id, out);
    remember_closed(id | reset_here);
    if (code != error_code::no_error) count_reset(out);
}

/// One DATA frame (or the end alone) of a stream's queue, as the windows allow: whether it
/// wrote anything.
bool connection::send_one(stream& s, std::string& out) {
    if (s.local_closed) return false;
    if (s.queued() == 0) {
        if (!s.end_queued) return false;
        if (s.trailers.empty()) {
            write_data(out, s.id, {}, true);
        } else {
            write_headers(out, s.id, s.trailers, true, peer_.max_frame_size);
            s.trailers = {};
        }
        s.local_closed = true;
        return true;
    }
    const std::int64_t fit =
        std::min<std::int64_t>({static_cast<std::int64_t>(s.queued()), s.send.size(),
                                send_window_.size(), peer_.max_frame_size});
    if (fit <= 0) return false;
    const auto n = static_cast<std::uint32_t>(fit);
    const bool last = n == s.queued() && s.end_queued && s.trailers.empty();
    write_data(out, s.id, std::string_view(s.out).substr(s.out_at, n), last);
    (void)s.send.consume(n);
    (void)send_window_.consume(n);
    floods_[window_update_frames] = 0;
    s.out_at += n;
    if (s.out_at == s.out.size()) {
        s.out.clear();
        s.out_at = 0;
    }
    if (last) s.local_closed = true;
    watch_stream(s, watch::stall, s.queued() != 0 && !s.local_closed); // progress, or done
    return true;
}

void connection::flush(std::string& out) {
    if (!table_ || phase_ == phase::closed) return;
    // Round robin: one frame per stream a round, the round starting one stream further on.
    for (bool progress = true; progress && table_;) {
        progress = false;
        const std::size_t n = table_->size();
        for (std::size_t k = 0; k < n; ++k)
            if (send_one(*(*table_)[(rr_ + k) % n], out)) progress = true;
        rr_ = static_cast<std::uint16_t>((rr_ + 1) % n);
    }
    // Streams that are done now leave; then owners waiting for room hear of it.
    for (std::size_t i = table_ ? table_->size() : 0; i-- > 0;) {
        if (!table_ || i >= table_->size()) continue;
        const stream& s = *(*table_)[i];
        if (s.local_closed && s.remote_closed) maybe_close(s.id, out);
    }
    notify_writable();
}

void connection::notify_writable() {
    // The owner may write (or reset) from on_writable(): the table is looked at afresh each
    // time, until a round tells nobody.
    for (bool again = true; again && table_;) {
        again = false;
        for (const auto& s : *table_) {
            if (!s->want_room || s->end_queued || s->queued() >= config_.max_queued) continue;
            s->want_room = false;
            owner_.on_writable(s->id);
            again = true;
            break;
        }
    }
}

void connection::maybe_close(std::uint32_t id, std::string& out) {
    stream* s = find(id);
    if (s == nullptr || !s->local_closed || !s->remote_closed) return;
    ++requests_;
    erase(id, out);
}

// Frames the owner counts.

void connection::send_rst_stream(std::string& out, std::uint32_t id, error_code code) {
    write_rst_stream(out, id, code);
    owner_.on_reset_sent(code);
}

void connection::send_goaway(std::string& out, std::uint32_t last, error_code code,
                             std::string_view debug) {
    write_goaway(out, last, code, debug);
    owner_.on_goaway_sent(code);
}

// The owner's deadlines.

void connection::watch_stream(stream& s, watch what, bool on) {
    const std::uint8_t b = bit(what);
    if (!on && (s.watching & b) == 0) return;
    s.watching = static_cast<std::uint8_t>(on ? s.watching | b : s.watching & ~b);
    owner_.on_watch(s.id, what, on);
}

void connection::watch_connection(watch what, bool on) {
    const std::uint8_t b = bit(what);
    if (on == ((watching_ & b) != 0)) return; // connection deadlines are totals: told once
    watching_ = static_cast<std::uint8_t>(on ? watching_ | b : watching_ & ~b);
    owner_.on_watch(0, what, on);
}

void connection::expired(std::uint32_t id, watch what, std::string& out) {
    if (phase_ == phase::closed) return;
    switch (what) {
    case watch::body:
    case watch::stall: {
        stream* s = find(id);
        if (s == nullptr) return;
        s->watching = static_cast<std::uint8_t>(s->watching & ~bit(what));
        if (s->local_closed) {
            // Answered whole: the rest of the request is not needed (RFC 9113 8.1).
            send_rst_stream(out, id, error_code::no_error);
            ++requests_;
            erase(id, out);
            remember_closed(id | reset_here);
            return;
        }
        stream_error(id, error_code::cancel, out);
        return;
    }
    case watch::block:
        watching_ = static_cast<std::uint8_t>(watching_ & ~bit(what));
        connection_error(error_code::enhance_your_calm, out, "header timeout");
        return;
    case watch::settings:
        watching_ = static_cast<std::uint8_t>(watching_ & ~bit(what));
        connection_error(error_code::settings_timeout, out);
        return;
    case watch::ping:
        watching_ = static_cast<std::uint8_t>(watching_ & ~bit(what));
        finish_shutdown(out);
        return;
    case watch::probe:
        watching_ = static_cast<std::uint8_t>(watching_ & ~bit(what));
        if (idle() || probe_ping_ != 0) return;
        write_ping(out, probe_opaque, false);
        probe_ping_ = 1;
        watch_connection(watch::probe_ack, true);
        return;
    case watch::probe_ack:
        watching_ = static_cast<std::uint8_t>(watching_ & ~bit(what));
        probe_ping_ = 0;
        // Not an error of the peer's that it could read about: most likely it reads nothing.
        connection_error(error_code::no_error, out, "no answer to PING");
        return;
    }
}

// Closing.

void connection::goaway(error_code code, std::string& out, std::string_view debug) {
    if (phase_ == phase::closed) return;
    if (code != error_code::no_error) {
        connection_error(code, out, debug);
        return;
    }
    if (goaway_sent_) return; // its last stream cannot have moved since: one says it all
    send_goaway(out, last_stream_, code, debug);
    goaway_sent_ = true;
    goaway_last_ = last_stream_;
    shutdown_ping_ = false;
    watch_connection(watch::ping, false);
}

void connection::shutdown(std::string& out) {
    if (phase_ == phase::closed || goaway_sent_ || shutdown_ping_) return;
    send_goaway(out, max_stream_id, error_code::no_error);
    write_ping(out, shutdown_opaque, false);
    shutdown_ping_ = true;
    watch_connection(watch::ping, true);
}

void connection::finish_shutdown(std::string& out) {
    if (!shutdown_ping_) return;
    goaway(error_code::no_error, out);
}

bool connection::closing() const noexcept {
    if (phase_ == phase::closed) return true;
    return (goaway_sent_ || goaway_received_) && !shutdown_ping_ && idle();
}

void connection::stream_error(std::uint32_t id, error_code code, std::string& out) {
    if (phase_ == phase::closed) return;
    send_rst_stream(out, id, code);
    const bool known = find(id) != nullptr;
    if (known) erase(id, out);
    remember_closed(id | reset_here);
    if (known) owner_.on_reset(id, code, false);
    count_reset(out);
}

void connection::connection_error(error_code code, std::string& out, std::string_view debug) {
    if (phase_ == phase::closed) return;
    send_goaway(out, last_stream_, code, debug);
    phase_ = phase::closed;
    goaway_sent_ = true;
    shutdown_ping_ = false;
    gather_.reset();
    for (std::size_t w = 0; w < watch_kinds; ++w)
        watch_connection(static_cast<watch>(w), false);
    owner_.on_connection_error(code);
    const std::unique_ptr<table> gone = std::move(table_);
    held_ = 0;
    if (gone)
        for (const auto& s : *gone) {
            watch_stream(*s, watch::body, false);
            watch_stream(*s, watch::stall, false);
            owner_.on_reset(s->id, code, false);
        }
}

bool connection::count(flood kind, std::string& out) {
    if (++floods_[kind] <= config_.max_control_frames + requests_) return true;
    connection_error(error_code::enhance_your_calm, out);
    return false;
}

bool connection::count_reset(std::string& out) {
    if (++resets_ <= config_.max_resets + requests_ / 2) return true;
    connection_error(error_code::enhance_your_calm, out); // Rapid Reset, MadeYouReset
    return false;
}

// The stream table.

std::size_t connection::allocated() const noexcept {
    std::size_t n = decoder_.table().allocated();
    if (gather_) n += sizeof(gathering) + gather_->block.capacity();
    if (table_) {
        n += sizeof(table) + table_->capacity() * sizeof(table::value_type);
        for (const auto& s : *table_)
            n += sizeof(stream) + s->in.capacity() + s->out.capacity() + s->trailers.capacity();
    }
    return n;
}

stream* connection::find(std::uint32_t id) const noexcept {
    if (!table_) return nullptr;
    for (const auto& s : *table_)
        if (s->id == id) return s.get();
    return nullptr;
}

stream* connection::open(std::uint32_t id) {
    if (!table_) table_ = std::make_unique<table>();
    auto s = std::make_unique<stream>(id);
    s->send = window(static_cast<std::int32_t>(peer_.initial_window_size));
    s->recv = window(static_cast<std::int32_t>(recv_initial_));
    table_->push_back(std::move(s));
    return table_->back().get();
}

void connection::erase(std::uint32_t id, std::string& out) {
    if (!table_) return;
    const auto it =
        std::find_if(table_->begin(), table_->end(), [id](const auto& s) { return s->id == id; });
    if (it == table_->end()) return;
    const std::unique_ptr<stream> s = std::move(*it);
    table_->erase(it);
    watch_stream(*s, watch::body, false);
    watch_stream(*s, watch::stall, false);
    if (table_->empty()) {
        table_.reset(); // no table while idle
        stop_probing();
    }
    remember_closed(id);
    if (!s->in.empty()) release(static_cast<std::uint32_t>(s->in.size()), out);
}

std::uint32_t connection::recently_closed(std::uint32_t id) const noexcept {
    for (const std::uint32_t c : closed_)
        if ((c & ~reset_here) == id) return c;
    return 0;
}

void connection::remember_closed(std::uint32_t id) noexcept {
    if ((closed_[0] & ~reset_here) == (id & ~reset_here)) {
        closed_[0] |= id & reset_here;
        return;
    }
    closed_[1] = closed_[0];
    closed_[0] = id;
}

} // namespace tarry::h2

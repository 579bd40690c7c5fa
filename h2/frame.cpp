#include "frame.hpp"

#include <algorithm>
#include <array>

namespace tarry::h2 {

namespace {

constexpr frame_error connection(error_code code) noexcept {
    return {code, 0};
}

frame_reader::result error_event(frame_error e, std::size_t consumed) noexcept {
    frame_reader::result r;
    r.what = frame_reader::event::error;
    r.error = e;
    r.consumed = consumed;
    return r;
}

void put_u32(std::string& out, std::uint32_t v) {
    const std::array<char, 4> b{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                                static_cast<char>(v >> 8), static_cast<char>(v)};
    out.append(b.data(), b.size());
}

} // namespace

std::string_view to_string(error_code code) noexcept {
    static constexpr std::array<std::string_view, 14> names{"NO_ERROR",
                                                            "PROTOCOL_ERROR",
                                                            "INTERNAL_ERROR",
                                                            "FLOW_CONTROL_ERROR",
                                                            "SETTINGS_TIMEOUT",
                                                            "STREAM_CLOSED",
                                                            "FRAME_SIZE_ERROR",
                                                            "REFUSED_STREAM",
                                                            "CANCEL",
                                                            "COMPRESSION_ERROR",
                                                            "CONNECT_ERROR",
                                                            "ENHANCE_YOUR_CALM",
                                                            "INADEQUATE_SECURITY",
                                                            "HTTP_1_1_REQUIRED"};
    const auto i = static_cast<std::uint32_t>(code);
    return i < names.size() ? names[i] : "UNKNOWN";
}

error_code settings::apply(std::uint16_t id, std::uint32_t value) noexcept {
    switch (static_cast<settings_id>(id)) {
    case settings_id::header_table_size:
        header_table_size = value;
        break;
    case settings_id::enable_push:
        if (value > 1) return error_code::protocol_error;
        enable_push = value;
        break;
    case settings_id::max_concurrent_streams:
        max_concurrent_streams = value;
        break;
    case settings_id::initial_window_size:
        if (value > max_window) return error_code::flow_control_error;
        initial_window_size = value;
        break;
    case settings_id::max_frame_size:
        if (value < default_max_frame_size || value > largest_max_frame_size)
            return error_code::protocol_error;
        max_frame_size = value;
        break;
    case settings_id::max_header_list_size:
        max_header_list_size = value;
        break;
    case settings_id::enable_connect_protocol:
        if (value > 1) return error_code::protocol_error;
        enable_connect_protocol = value;
        break;
    }
    return error_code::no_error;
}

error_code apply_settings(settings& to, bytes payload) noexcept {
    error_code first = error_code::no_error;
    for_each_setting(payload, [&](std::uint16_t id, std::uint32_t value) {
        if (first == error_code::no_error) first = to.apply(id, value);
    });
    return first;
}

goaway_payload parse_goaway(bytes payload) noexcept {
    return {read_u32(payload.data()) & max_stream_id, read_u32(payload.data() + 4),
            payload.subspan(8)};
}

frame_header parse_frame_header(const std::uint8_t* p) noexcept {
    frame_header h;
    h.length = (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
    h.type = p[3];
    h.flags = p[4];
    h.stream = read_u32(p + 5) & max_stream_id;
    return h;
}

frame_error check_frame_header(const frame_header& h) noexcept {
    constexpr frame_error ok{};
    const bool on_stream = h.stream != 0;
    if (h.type > last_known_frame_type) return ok;
    // The fields a flag announces must fit: else the frame is too small for its mandatory
    // data (4.2).
    std::uint32_t least = 0;
    switch (h.kind()) {
    case frame_type::data:
    case frame_type::headers:
    case frame_type::push_promise:
        if (!on_stream) return connection(error_code::protocol_error);
        least = (h.has(flag::padded) ? 1 : 0) +
                (h.is(frame_type::headers) && h.has(flag::priority) ? 5 : 0) +
                (h.is(frame_type::push_promise) ? 4 : 0);
        if (h.length < least) return connection(error_code::frame_size_error);
        return ok;
    case frame_type::priority:
        if (!on_stream) return connection(error_code::protocol_error);
        if (h.length != 5) return {error_code::frame_size_error, h.stream};
        return ok;
    case frame_type::rst_stream:
        if (!on_stream) return connection(error_code::protocol_error);
        if (h.length != 4) return connection(error_code::frame_size_error);
        return ok;
    case frame_type::settings:
        if (on_stream) return connection(error_code::protocol_error);
        if (h.has(flag::ack) ? h.length != 0 : h.length % 6 != 0)
            return connection(error_code::frame_size_error);
        return ok;
    case frame_type::ping:
        if (on_stream) return connection(error_code::protocol_error);
        if (h.length != 8) return connection(error_code::frame_size_error);
        return ok;
    case frame_type::goaway:
        if (on_stream) return connection(error_code::protocol_error);
        if (h.length < 8) return connection(error_code::frame_size_error);
        return ok;
    case frame_type::window_update:
        if (h.length != 4) return connection(error_code::frame_size_error);
        return ok;
    case frame_type::continuation:
        if (!on_stream) return connection(error_code::protocol_error);
        return ok;
    }
    return ok;
}

frame_reader::result frame_reader::read(bytes in) noexcept {
    switch (state_) {
    case state::header:
        return start(in);
    case state::skip: {
        const auto n = std::min<std::size_t>(in.size(), left_);
        left_ -= static_cast<std::uint32_t>(n);
        if (left_ != 0) return {.consumed = n};
        state_ = state::header;
        auto r = start(in.subspan(n));
        r.consumed += n;
        return r;
    }
    case state::data_payload:
    case state::data_padding:
        return continue_data(in);
    }
    return {};
}

frame_reader::result frame_reader::start(bytes in) noexcept {
    if (in.size() < frame_header_size) return {};
    const frame_header h = parse_frame_header(in.data());
    if (h.length > max_frame_size_) return error_event(connection(error_code::frame_size_error), 0);
    if (const frame_error e = check_frame_header(h); e.code != error_code::no_error) {
        if (e.connection_error()) return error_event(e, 0);
        // A stream error: the frame is dropped, the connection goes on.
        left_ = h.length;
        if (left_ != 0) state_ = state::skip;
        return error_event(e, frame_header_size);
    }
    if (h.type > last_known_frame_type) {
        left_ = h.length;
        if (left_ != 0) state_ = state::skip;
        return {.what = event::frame, .consumed = frame_header_size, .header = h};
    }
    if (h.is(frame_type::data)) {
        std::size_t at = frame_header_size;
        std::uint8_t pad = 0;
        if (h.has(flag::padded)) {
            if (in.size() < frame_header_size + 1) return {};
            pad = in[frame_header_size];
            if (pad >= h.length) return error_event(connection(error_code::protocol_error), 0);
            ++at;
        }
        current_ = h;
        left_ = h.length - static_cast<std::uint32_t>(at - frame_header_size) - pad;
        pad_left_ = pad;
        auto r = continue_data(in.subspan(at));
        r.first = true;
        r.what = event::data; // even with no payload yet: the session learns of the frame now
        r.header = h;
        r.consumed += at;
        return r;
    }
    const std::size_t whole = frame_header_size + h.length;
    if (in.size() < whole) return {};
    return finish_frame(h, in.subspan(frame_header_size, h.length), whole);
}

frame_reader::result frame_reader::continue_data(bytes in) noexcept {
    result r{.what = event::data, .header = current_};
    if (state_ != state::data_padding) {
        const auto piece = std::min<std::size_t>(in.size(), left_);
        r.payload = in.first(piece);
        left_ -= static_cast<std::uint32_t>(piece);
        r.consumed = piece;
        in = in.subspan(piece);
        if (left_ != 0) {
            state_ = state::data_payload;
            if (piece == 0) r.what = event::need_more;
            return r;
        }
    }
    const auto skip = std::min<std::size_t>(in.size(), pad_left_);
    pad_left_ = static_cast<std::uint8_t>(pad_left_ - skip);
    r.consumed += skip;
    if (pad_left_ != 0) {
        // Only padding remains and not all of it came: nothing to show unless data did.
        if (state_ == state::data_padding || r.payload.empty()) r.what = event::need_more;
        state_ = state::data_padding;
        return r;
    }
    r.last = true;
    state_ = state::header;
    return r;
}

frame_reader::result frame_reader::finish_frame(const frame_header& h, bytes payload,
                                                std::size_t consumed) noexcept {
    result r{.what = event::frame, .consumed = consumed, .header = h, .payload = payload};
    switch (h.kind()) {
    case frame_type::headers:
    case frame_type::push_promise: {
        std::size_t pad = 0;
        if (h.has(flag::padded)) {
            pad = payload[0];
            payload = payload.subspan(1);
        }
        std::uint32_t depends_on = 0;
        if (h.is(frame_type::headers) && h.has(flag::priority)) {
            depends_on = read_u32(payload.data()) & max_stream_id;
            payload = payload.subspan(5);
        }
        // The promised stream identifier is not padding either (6.6).
        const std::size_t fixed = h.is(frame_type::push_promise) ? 4 : 0;
        if (pad > payload.size() - fixed)
            return error_event(connection(error_code::protocol_error), 0);
        r.payload = payload.first(payload.size() - pad);
        if (h.has(flag::priority) && depends_on == h.stream)
            r.error = {error_code::protocol_error, h.stream}; // 5.3.1
        return r;
    }
    case frame_type::priority:
        if ((read_u32(payload.data()) & max_stream_id) == h.stream)
            return error_event({error_code::protocol_error, h.stream}, consumed);
        return r;
    case frame_type::window_update:
        if (read_u31(payload) == 0) // 6.9: on the connection's window, a connection error
            return error_event({error_code::protocol_error, h.stream}, h.stream ? consumed : 0);
        return r;
    default:
        return r;
    }
}

void write_frame_header(std::string& out, std::uint32_t length, frame_type type, std::uint8_t flags,
                        std::uint32_t stream) {
    const std::array<char, frame_header_size> b{
        static_cast<char>(length >> 16), static_cast<char>(length >> 8),
        static_cast<char>(length),       static_cast<char>(type),
        static_cast<char>(flags),        static_cast<char>((stream >> 24) & 0x7f),
        static_cast<char>(stream >> 16), static_cast<char>(stream >> 8),
        static_cast<char>(stream)};
    out.append(b.data(), b.size());
}

void write_settings(std::string& out, std::span<const setting> values) {
    write_frame_header(out, static_cast<std::uint32_t>(values.size() * 6), frame_type::settings, 0,
                       0);
    for (const setting& s : values) {
        const auto id = static_cast<std::uint16_t>(s.id);
        out.push_back(static_cast<char>(id >> 8));
        out.push_back(static_cast<char>(id));
        put_u32(out, s.value);
    }
}

void write_settings(std::string& out, const settings& ours, const settings& known) {
    std::array<setting, 7> changed{};
    std::size_t n = 0;
    auto add = [&](settings_id id, std::uint32_t value, std::uint32_t was) {
        if (value != was) changed[n++] = {id, value};
    };
    add(settings_id::header_table_size, ours.header_table_size, known.header_table_size);
    add(settings_id::enable_push, ours.enable_push, known.enable_push);
    add(settings_id::max_concurrent_streams, ours.max_concurrent_streams,
        known.max_concurrent_streams);
    add(settings_id::initial_window_size, ours.initial_window_size, known.initial_window_size);
    add(settings_id::max_frame_size, ours.max_frame_size, known.max_frame_size);
    add(settings_id::max_header_list_size, ours.max_header_list_size, known.max_header_list_size);
    add(settings_id::enable_connect_protocol, ours.enable_connect_protocol,
        known.enable_connect_protocol);
    write_settings(out, std::span<const setting>(changed.data(), n));
}

void write_settings_ack(std::string& out) {
    write_frame_header(out, 0, frame_type::settings, flag::ack, 0);
}

void write_ping(std::string& out, bytes opaque8, bool ack) {
    write_frame_header(out, 8, frame_type::ping, ack ? flag::ack : 0, 0);
    std::array<char, 8> b{};
    std::copy_n(opaque8.begin(), std::min<std::size_t>(opaque8.size(), 8), b.begin());
    out.append(b.data(), b.size());
}

void write_goaway(std::string& out, std::uint32_t last_stream, error_code code,
                  std::string_view debug) {
    write_frame_header(out, static_cast<std::uint32_t>(8 + debug.size()), frame_type::goaway, 0, 0);
    put_u32(out, last_stream & max_stream_id);
    put_u32(out, static_cast<std::uint32_t>(code));
    out.append(debug);
}

void write_rst_stream(std::string& out, std::uint32_t stream, error_code code) {
    write_frame_header(out, 4, frame_type::rst_stream, 0, stream);
    put_u32(out, static_cast<std::uint32_t>(code));
}

void write_window_update(std::string& out, std::uint32_t stream, std::uint32_t increment) {
    write_frame_header(out, 4, frame_type::window_update, 0, stream);
    put_u32(out, increment & max_window);
}

void write_headers(std::string& out, std::uint32_t stream, std::string_view block, bool end_stream,
                   std::uint32_t max_frame_size) {
    const std::uint8_t end = end_stream ? flag::end_stream : 0;
    auto type = frame_type::headers;
    do {
        const auto n = std::min<std::size_t>(block.size(), max_frame_size);
        const bool final = n == block.size();
        write_frame_header(out, static_cast<std::uint32_t>(n), type,
                           static_cast<std::uint8_t>((final ? flag::end_headers : 0) |
                                                     (type == frame_type::headers ? end : 0)),
                           stream);
        out.append(block.substr(0, n));
        block.remove_prefix(n);
        type = frame_type::continuation;
    } while (!block.empty());
}

void write_data(std::string& out, std::uint32_t stream, std::string_view payload, bool end_stream) {
    write_data_header(out, stream, static_cast<std::uint32_t>(payload.size()), end_stream);
    out.append(payload);
}

void write_data_header(std::string& out, std::uint32_t stream, std::uint32_t length,
                       bool end_stream) {
    write_frame_header(out, length, frame_type::data, end_stream ? flag::end_stream : 0, stream);
}

} // namespace tarry::h2

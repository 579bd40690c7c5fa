#include "session.hpp"

#include "field_writer.hpp"
#include "hop_by_hop.hpp"
#include "method_gate.hpp"
#include "request_error.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace tarry::http {
namespace bh = boost::beast::http;

namespace {

constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";

} // namespace

// --- exchange: what a handler calls -------------------------------------------------------------

std::string_view session::request_state::peer() const noexcept {
    return owner->transport_ != nullptr ? owner->transport_->peer() : std::string_view{};
}

bool session::request_state::secure() const noexcept {
    return owner->transport_ != nullptr && owner->transport_->secure();
}

int session::request_state::certificate() const noexcept {
    return owner->transport_ != nullptr ? owner->transport_->certificate() : -1;
}

void session::request_state::respond(response_head rh) {
    owner->start_response(rh);
}

void session::start_response(response_head& head) {
    session& s = *this;
    const request_head& req = s.state_->head;
    const bool keep = s.keep_alive_now();
    head.close = !keep;
    head.keep_alive_field = keep && req.version == 10;
    head.keep_alive_timeout_s = keep ? s.settings_->keep_alive_timeout_s : 0;
    s.r_.head_only = req.method == bh::verb::head || head.status == 304 || head.status == 204;
    if (head.length_unknown && !s.r_.head_only) {
        if (req.version == 11) {
            head.chunked = true;
            s.r_.chunked = true;
        } else {
            head.close = true; // an HTTP/1.0 client reads such a body to the close
            head.keep_alive_field = false;
            head.keep_alive_timeout_s = 0;
        }
    }
    if (head.close) s.closing_ = true;
    s.r_.responding = true;
    if (s.run_ != nullptr) {
        s.emit(s.run_->out, head, s.run_->date);
        return;
    }
    s.emit(s.output(), head, s.transport_->date());
    s.wake_transport();
}

void session::request_state::write(std::string_view bytes) {
    session& s = *owner;
    if (s.r_.head_only || bytes.empty()) return;
    std::string& out = s.output();
    // A body streamed in pieces grows the queue to the bound once (and the connection frees it
    // when it goes quiet), rather than doubling past it: a slow client costs the bound.
    const std::size_t need = out.size() + bytes.size() + 32; // and chunk framing
    if (need > out.capacity() && need > (16 << 10))
        out.reserve(std::max(need, s.settings_->max_queued_bytes + 64));
    const std::size_t before = out.size();
    if (s.r_.chunked) {
        append_chunk(out, bytes);
    } else {
        out.append(bytes);
    }
    s.state_->sent += out.size() - before; // chunk framing counts, as nginx counts it
    s.wake_transport();
}

void session::request_state::send_file(unique_fd fd, std::uint64_t offset, std::uint64_t length) {
    session& s = *owner;
    if (!s.r_.head_only && length != 0) {
        s.file_ = session::files::take();
        static_cast<file_body&>(*s.file_) = file_body{std::move(fd), offset, length};
        s.state_->file_bytes = length;
    }
    finish();
}

void session::request_state::finish() {
    session& s = *owner;
    if (s.tunneling()) {
        // The tunnel is over: both sides are done (or one failed). The connection closes.
        s.r_.body_done = true;
        s.closing_ = true;
    }
    ++s.requests_;
    if (s.r_.chunked) {
        constexpr std::string_view last_chunk = "0\r\n\r\n";
        s.output().append(last_chunk);
        s.state_->sent += last_chunk.size();
    }
    s.r_.chunked = false;
    s.r_.responding = false;
    s.r_.finished = true;
    s.end_response();
}

void session::request_state::answer_text(unsigned code, std::string_view body,
                                         std::string_view extra_fields) {
    // The common answer of synchronous handlers: one pass, no chunking to consider.
    session& s = *owner;
    response_head rh = text_head(code, body.size());
    rh.extra_fields = extra_fields;
    s.start_response(rh);
    if (!s.r_.head_only) {
        s.output().append(body);
        s.state_->sent += body.size();
    }
    ++s.requests_;
    s.r_.responding = false;
    s.r_.finished = true;
    if (s.run_ == nullptr) s.end_response(); // within consume(), dispatch() settles the request
}

std::size_t session::request_state::room() const noexcept {
    const std::size_t queued =
        owner->run_ != nullptr ? owner->run_->out.size() : owner->transport_->output().size();
    const std::size_t limit = owner->settings_->max_queued_bytes;
    return queued < limit ? limit - queued : 0;
}

void session::request_state::defer(deferred& d) {
    owner->set_deferred(&d);
}

void session::request_state::read_body() {
    session& s = *owner;
    s.r_.body_to_handler = true;
    const request_parser& p = *s.state_->parser;
    // Not when body bytes came with the header: the client is sending it already.
    if (s.state_->head.expect_continue && !s.r_.sent_continue && !p.is_done() &&
        !s.r_.body_in_hand) {
        s.output().append(continue_line);
        s.r_.sent_continue = true;
        s.wake_transport();
    }
}

void session::request_state::abort() {
    session& s = *owner;
    s.closing_ = true;
    s.set_deferred(nullptr);
    s.finish_request();
    s.wake_transport();
}

std::string_view session::request_state::upgrade_asked() const noexcept {
    const session& s = *owner;
    const request_head& req = s.state_->head;
    // A request with a body cannot switch: where its body ends and the new protocol starts
    // would be the proxy's guess.
    if (req.method != bh::verb::get || req.version != 11 || !s.state_->parser->is_done()) return {};
    const std::string_view value = find_field(req.header, "Upgrade");
    if (value.empty() || !listed_in(find_field(req.header, "Connection"), "upgrade")) return {};
    return value;
}

void session::request_state::upgrade(response_head rh) {
    session& s = *owner;
    std::string fields(rh.extra_fields);
    fields.append("Connection: upgrade\r\n");
    rh.status = 101;
    rh.extra_fields = fields;
    rh.close = rh.keep_alive_field = rh.chunked = false;
    rh.keep_alive_timeout_s = 0;
    rh.length_unknown = true; // no framing: the bytes that follow are the new protocol's
    s.state_->mode = session::tunnel::open;
    s.r_.responding = true;
    s.r_.head_only = s.r_.chunked = false;
    // From now on the client's bytes are the tunnel's: its stream ends when the client
    // half-closes (input_ended), not with the request's (empty) body.
    s.r_.body_done = s.r_.body_paused = false;
    if (s.run_ != nullptr) {
        s.emit(s.run_->out, rh, s.run_->date);
        return;
    }
    s.emit(s.output(), rh, s.transport_->date());
    s.wake_transport();
}

void session::request_state::shutdown_output() {
    session& s = *owner;
    if (s.state_->mode != session::tunnel::open) return;
    s.state_->mode = session::tunnel::shut_asked;
    s.wake_transport();
}

upstream_timing* session::request_state::upstream_record() noexcept {
    session& s = *owner;
    if (!s.settings_->record_responses || !s.state_) return nullptr;
    s.state_->proxied = true;
    return &s.state_->upstream;
}

void session::request_state::resume_body() {
    session& s = *owner;
    if (s.state_ && s.state_->delivering) {
        // From within on_body(), which then returns what it took: the session offers the rest
        // again rather than pausing (a pause now would never be resumed).
        s.state_->resumed = true;
        return;
    }
    if (!s.r_.body_paused) return;
    s.r_.body_paused = false;
    s.wake_transport();
}

// --- session ------------------------------------------------------------------------------------

std::size_t session::request_state::on_body(std::string_view bytes) {
    session& s = *owner;
    if (!s.r_.body_to_handler || answer == nullptr) return bytes.size(); // discarded
    delivering = true;
    resumed = false;
    const std::size_t taken = answer->on_body(bytes);
    delivering = false;
    if (taken < bytes.size()) s.paused_or_again(resumed);
    return taken;
}

void session::paused_or_again(bool resumed) noexcept {
    if (!resumed) {
        r_.body_paused = true; // until resume_body()
        return;
    }
    // Room again: the connection offers the rest, even from within consume() (its parse may
    // have stopped at what the answer refused).
    if (transport_ != nullptr) transport_->wake();
}

void session::release_kept() noexcept {
    states::release();
    files::release();
}

session::~session() {
    transport_ = nullptr; // the connection is going: nothing more is told to it
    abort();
    finish_request();
}

void session::drain() noexcept {
    draining_ = true;
    if (current_phase() == phase::idle && !file_) closing_ = true;
}

void session::file_done() noexcept {
    file_->fd.reset(); // the file closes now, whether or not the body is kept for reuse
    if (file_->request) {
        // Its line waited for the file: what of it went out (all, or up to a close).
        complete(*file_->request, file_->request->file_bytes - file_->remaining);
        give_back(std::move(file_->request));
    }
    try {
        files::give(std::move(file_));
    } catch (...) {
        file_.reset();
    }
    if (draining_ && current_phase() == phase::idle) closing_ = true;
}

std::string& session::output() {
    return run_ != nullptr ? run_->out : transport_->output();
}

void session::finish_request() noexcept {
    r_ = {};
    if (draining_) closing_ = true;
    if (!state_) return;
    state_->answer = nullptr;
    state_->parser.reset();
    state_->held.reset();
    if (file_ && !file_->request && state_->status != 0 && settings_->record_responses) {
        file_->request = std::move(state_); // its line is written once the file is sent
        return;
    }
    complete(*state_);
    give_back(std::move(state_));
}

void session::give_back(states::pointer st) noexcept {
    try {
        states::give(std::move(st));
    } catch (...) {
        // could not keep it for reuse: it is freed
    }
}

namespace {

/// The request line of a validated header block.
std::string_view first_line(std::string_view header) noexcept {
    return header.substr(0, std::min(header.find('\r'), header.find('\n')));
}

} // namespace

void session::complete(request_state& st, std::uint64_t file_sent) noexcept {
    if (st.status == 0 || transport_ == nullptr || !settings_->record_responses) return;
    response_record r;
    r.request = st.unparsed ? nullptr : &st.head;
    r.received = st.received;
    // A method the parser does not know is logged as it came, not as "<unknown>" (while its
    // head is still at hand: an answer within on_request()).
    if (!st.unparsed && st.head.method == bh::verb::unknown && !st.head.header.empty())
        r.received = first_line(st.head.header);
    r.status = st.status;
    r.body_bytes = st.sent + file_sent;
    r.tunnel_bytes_in = st.tunnel_in;
    r.started = st.started;
    r.upstream = st.proxied ? &st.upstream : nullptr;
    st.status = 0; // once
    st.received = {};
    transport_->completed(r);
}

void session::end_response() noexcept {
    // The request ends when both its response and its body are done; until then a body still
    // arriving is read (for the handler, or to discard it).
    if (!r_.finished || !r_.body_done) {
        wake_transport();
        return;
    }
    finish_request();
    wake_transport();
}

void session::abort() noexcept {
    deferred* d = deferred_answer();
    if (d == nullptr) return;
    // The client went away before its answer began: nginx's 499 (client closed request).
    if (state_->status == 0 && !r_.responding) state_->status = 499;
    finish_request();
    d->on_abort();
}

bool session::input_ended() {
    if (!tunneling() || r_.body_done) return false;
    r_.body_done = true;
    if (deferred* d = deferred_answer()) d->on_body_end();
    return true;
}

std::size_t session::tunnel_in(const char* data, std::size_t size) {
    // No HTTP here any more: the bytes go to the tunnel as they are, whatever the output holds
    // (the two directions do not wait for each other).
    deferred* d = deferred_answer();
    if (d == nullptr || r_.body_paused || r_.body_done || size == 0) return 0;
    state_->delivering = true;
    state_->resumed = false;
    const std::size_t taken = d->on_body(std::string_view(data, size));
    if (state_) {
        state_->tunnel_in += taken;
        state_->delivering = false;
        if (taken < size) paused_or_again(state_->resumed);
    }
    return taken;
}

namespace {

constexpr std::size_t cut_short = std::string_view::npos;
constexpr std::size_t malformed = cut_short - 1;

/// Where the body of a request whose header was just read ends in `rest` (the bytes after the
/// header): 0 with no body (or one read whole), cut_short if `rest` does not hold all of it,
/// malformed for a chunk-size line the parser will refuse anyway (it answers 400).
std::size_t body_end(const request_parser& parser, std::string_view rest) noexcept {
    if (parser.is_done()) return 0;
    if (const auto length = parser.content_length())
        return *length <= rest.size() ? *length : cut_short;
    std::size_t at = 0; // chunked (RFC 9112, 7.1): size lines, data, then trailers to an empty line
    for (;;) {
        const std::size_t eol = rest.find("\r\n", at);
        if (eol == std::string_view::npos) return cut_short;
        std::uint64_t chunk = 0;
        if (std::from_chars(rest.data() + at, rest.data() + eol, chunk, 16).ec != std::errc{})
            return malformed; // no digit, or past 64 bits
        at = eol + 2;
        if (chunk == 0) {
            for (;;) {
                const std::size_t end = rest.find("\r\n", at);
                if (end == std::string_view::npos) return cut_short;
                if (end == at) return end + 2;
                at = end + 2;
            }
        }
        if (chunk > rest.size() - at || rest.size() - at - chunk < 2) return cut_short;
        at += chunk + 2;
    }
}

} // namespace

bool session::ends_input(const request_parser& parser, std::string_view rest) noexcept {
    if (rest.data() == nullptr) return false; // its header was read in an earlier call
    const std::size_t end = body_end(parser, rest);
    return end <= rest.size() && rest.find_first_not_of("\r\n", end) == std::string_view::npos;
}

std::size_t session::consume(const char* data, std::size_t size, std::string& out,
                             std::string_view date, bool all) {
    if (tunneling()) return tunnel_in(data, size);
    std::size_t used = 0;
    consume_run run{out, date, all};
    run_ = &run;
    struct forget {
        session& s;
        ~forget() { s.run_ = nullptr; } // even if an allocation throws: never a stale pointer
    } const guard{*this};
    while (!closing_ && !file_ && out.size() < settings_->max_queued_bytes) {
        if (!state_) {
            // RFC 9112, 2.2: ignore empty lines received before a request-line.
            while (used < size && (data[used] == '\r' || data[used] == '\n'))
                ++used;
            if (used == size) break;
            state_ = states::take();
            // A recycled state keeps what its last request left: everything a request starts
            // from is set here (a tunnel's mode once leaked into the next connection).
            state_->owner = this;
            state_->stats = nullptr; // until dispatch() finds the route
            state_->mode = tunnel::none;
            state_->delivering = state_->resumed = false;
            state_->status = 0;
            state_->sent = state_->file_bytes = state_->tunnel_in = 0;
            state_->received = {};
            state_->unparsed = state_->proxied = false;
            state_->upstream = {};
            if (settings_->record_responses && transport_ != nullptr)
                state_->started = transport_->request_started();
            state_->parser.emplace(state_->head, settings_->max_header_bytes,
                                   settings_->max_body_bytes, *state_);
        }
        request_parser& parser = *state_->parser;
        if (r_.body_paused || (r_.body_done && !r_.finished)) break; // the handler has the request
        boost::system::error_code ec;
        const std::size_t n = parser.feed(data + used, size - used, ec);
        if (ec && ec != bh::error::need_more) {
            // No header byte is consumed before the header is whole, so data + used is where
            // this request starts: a line feed within the header limit means the request line
            // ended there (past the limit, it ended too late: 414).
            const std::size_t seen = std::min(size - used, settings_->max_header_bytes);
            const void* eol = std::memchr(data + used, '\n', seen);
            const bool line_complete = !r_.dispatched && eol != nullptr;
            // For the log: the request line as it came (or its start), bounded.
            std::string_view received;
            if (!r_.dispatched) {
                const std::size_t line =
                    eol != nullptr ? static_cast<const char*>(eol) - (data + used) : size - used;
                received =
                    std::string_view(data + used, std::min(line, response_record::received_max));
                if (!received.empty() && received.back() == '\r') received.remove_suffix(1);
            }
            fail(status_for(ec, line_complete), out, date, received);
            break;
        }
        if (parser.is_header_done() && !r_.dispatched) {
            // After the client's end, a request whose body cannot come whole is cut short: it is
            // an abort, never started (a proxy would send it up; a 100 Continue would go out).
            // Nothing of it is consumed: the connection closes as the client's (an abort).
            if (all) {
                run.rest = data + used + n;
                run.rest_size = size - used - n;
                if (body_end(parser, std::string_view(run.rest, run.rest_size)) == cut_short) {
                    finish_request();
                    break;
                }
            }
            state_->head.header = std::string_view(data + used, n);
            used += n;
            r_.body_in_hand = used < size;
            dispatch();
            if (state_) state_->head.header = {};
            if (!state_) continue; // answered, and no body: the next request
            parser.eager(true);
            continue;
        }
        used += n;
        if (parser.is_done() && !r_.body_done) {
            r_.body_done = true;
            if (all) {
                run.rest = data + used;
                run.rest_size = size - used;
            }
            if (deferred* d = deferred_answer(); r_.body_to_handler && d != nullptr)
                d->on_body_end();
            if (!state_) continue; // it answered: the request is over
            if (r_.finished) {
                finish_request();
                continue;
            }
            break;
        }
        if (n == 0 && parser.is_header_done() && size - used > settings_->max_header_bytes) {
            // A chunk header or trailer section the parser needs whole, larger than a header
            // may be: without a limit here it would fill the connection's buffer and stall.
            fail(431, out, date);
            break;
        }
        if (n == 0 || used == size) break;
    }
    return used;
}

void session::dispatch() {
    r_.dispatched = true;
    request_head& req = state_->head;
    const router::route* route = nullptr;
    if (req.target.size() == 1 && req.target[0] == '*') {
        // OPTIONS * asks about the server itself (the parser allows "*" for OPTIONS only).
        response_head head;
        head.extra_fields = allow_field;
        as_exchange().respond(head);
        as_exchange().finish();
    } else {
        route = settings_->routes != nullptr ? settings_->routes->find(req) : nullptr;
        state_->stats = route != nullptr ? route->stats : nullptr;
        if (route != nullptr)
            route->target->on_request(as_exchange());
        else // no router, or no route for this target (the server always has "/")
            as_exchange().respond_text(404, "Not Found\n");
        if (!r_.finished && deferred_answer() == nullptr) {
            // A handler must answer or say it answers later; refuse rather than hang.
            if (!r_.responding) {
                as_exchange().respond_text(500, "Internal Server Error\n");
            } else {
                closing_ = true;
                finish_request();
                return;
            }
        }
    }
    if (!state_) return;
    if (state_->answer != nullptr && route != nullptr) state_->held = route->target;
    if (state_->parser->is_done()) {
        r_.body_done = true;
        if (r_.body_to_handler && state_->answer != nullptr) state_->answer->on_body_end();
        if (state_ && r_.finished) finish_request();
    }
}

void session::emit(std::string& out, response_head& head, std::string_view date) {
    append_head(out, head, date);
    const request_head* req = state_ ? &state_->head : nullptr;
    if (state_) state_->status = head.status;
    const std::uint64_t bytes = r_.head_only || head.length_unknown ? 0 : head.content_length;
    // Every response, the deferred ones too (a proxied answer comes outside consume()).
    if (transport_ != nullptr)
        transport_->responded(req, state_ ? state_->stats : nullptr, head.status, bytes);
}

void session::fail(unsigned status, std::string& out, std::string_view date,
                   std::string_view received, std::string_view text) {
    if (deferred* d = deferred_answer()) {
        state_->answer = nullptr;
        d->on_abort();
    }
    if (state_ && !r_.dispatched) {
        state_->received = received; // completed below, while the bytes are still there
        state_->unparsed = true;
    }
    // After its answer went out, a request whose body turns out malformed gets no second
    // response (the client would take it for the next request's): it only closes.
    if (!r_.responding && !r_.finished) {
        const std::string_view why = text.empty() ? reason(status) : text;
        response_head r = text_head(status, why.size() + 1);
        r.close = true;
        emit(out, r, date);
        out.append(why);
        out.push_back('\n');
        if (state_) {
            state_->sent = why.size() + 1;
        } else if (settings_->record_responses && transport_ != nullptr) {
            // Bytes that never started a request (plain HTTP on a TLS port).
            response_record rec;
            rec.received = received;
            rec.status = status;
            rec.body_bytes = why.size() + 1;
            rec.started = transport_->request_started();
            transport_->completed(rec);
        }
    }
    closing_ = true;
    finish_request();
}

} // namespace tarry::http

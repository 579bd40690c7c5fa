#include "h2_session.hpp"

#include "client_kinds.hpp"
#include "close_reason.hpp"
#include "connection_context.hpp"
#include "worker_metrics.hpp"
#include "worker_settings.hpp"

#include <tarry/http/method_gate.hpp>
#include <tarry/timeouts/timeout_registry.hpp>

#include <algorithm>

namespace tarry::server {
namespace {

/// The strings field blocks decode into: one per worker thread, as the read buffer is.
h2::workspace& workspace() noexcept {
    thread_local h2::workspace ws;
    return ws;
}

} // namespace

h2_session::h2_session(const connection_context& ctx, http::session_transport& transport)
    : ctx_(&ctx), transport_(transport), conn_(ctx.settings.h2, *this, workspace()) {
    ctx.metrics.h2.connections.add();
}

h2_session::~h2_session() {
    abort();
    metrics().h2.connections.add(-1);
}

const http::session_settings& h2_session::settings() const noexcept {
    return ctx_->settings.session;
}

worker_metrics& h2_session::metrics() const noexcept {
    return ctx_->metrics;
}

namespace {

/// An error code's counter (the codes of RFC 9113 section 7; the last slot any other).
std::size_t slot(h2::error_code code) noexcept {
    const auto c = static_cast<std::size_t>(code);
    return c + 1 < worker_metrics::h2_counters::codes ? c : worker_metrics::h2_counters::codes - 1;
}

} // namespace

void h2_session::on_goaway(std::uint32_t /*last_stream*/, h2::error_code /*code*/) {
    // The client ends the connection (a browser closing a tab's last page, curl at its exit):
    // as HTTP/1.1's client closing between requests, whatever its code says of us. Its GOAWAY
    // in answer to ours (a graceful stop's, a timeout's) ends nothing that ours did not.
    if (!said_goaway_) end_for(close_reason::client_close);
}

void h2_session::on_goaway_sent(h2::error_code code) {
    said_goaway_ = true;
    metrics().h2.goaways[slot(code)].add();
}

void h2_session::on_reset_sent(h2::error_code code) {
    metrics().h2.resets_sent[slot(code)].add();
}

// Deadlines.

void h2_deadline::expired() noexcept {
    session->expired(*this);
}

void h2_session::on_watch(std::uint32_t stream, h2::watch what, bool on) {
    std::unique_ptr<h2_deadline>* at = &deadlines_;
    while (*at && ((*at)->stream != stream || (*at)->what != what))
        at = &(*at)->next;
    if (!on) {
        if (*at) *at = std::move((*at)->next); // its entry leaves its list with it
        return;
    }
    if (*at) {
        timeouts::timeout_registry::touch((*at)->entry); // activity: from now
        return;
    }
    const worker_settings& ws = ctx_->settings;
    if (!ws.timeouts || aborted_) return;
    const timeouts::timeout_kind* kind = &client_kinds::h2_ack;
    timeouts::clock::duration d = ws.h2_ack;
    switch (what) {
    case h2::watch::body:
        kind = &client_kinds::h2_body;
        d = ws.body;
        break;
    case h2::watch::stall:
        kind = &client_kinds::h2_stall;
        d = ws.send;
        break;
    case h2::watch::block:
        kind = &client_kinds::h2_block;
        d = ws.header;
        break;
    case h2::watch::probe:
        kind = &client_kinds::h2_ping;
        d = ws.h2_ping;
        break;
    case h2::watch::settings:
    case h2::watch::ping:
    case h2::watch::probe_ack:
        break;
    }
    auto fresh = std::make_unique<h2_deadline>(*this, stream, what);
    ctx_->registry.enroll(fresh->entry, *kind, d); // may throw: nothing kept then
    fresh->next = std::move(deadlines_);
    deadlines_ = std::move(fresh);
}

std::unique_ptr<h2_deadline> h2_session::unlink(const h2_deadline& d) noexcept {
    for (std::unique_ptr<h2_deadline>* at = &deadlines_; *at; at = &(*at)->next) {
        if (at->get() != &d) continue;
        std::unique_ptr<h2_deadline> gone = std::move(*at);
        *at = std::move(gone->next);
        return gone;
    }
    return nullptr;
}

void h2_session::expired(h2_deadline& d) noexcept {
    const std::uint32_t id = d.stream;
    const h2::watch what = d.what;
    unlink(d);                               // freed: its entry is unlinked already
    if (!worker_settings().timeouts) return; // a reload turned timeouts off since
    try {
        std::string& out = output();
        switch (what) {
        case h2::watch::body:
            // As HTTP/1.1 answers a body that stopped coming: 408 if nothing was answered yet
            // (then RST_STREAM(NO_ERROR) once it is out whole), the handler told it is over.
            if (h2_stream* s = find(id); s != nullptr && !s->over_ && s->status_ == 0) {
                http::deferred* answer = s->finished_ ? nullptr : s->answer_;
                s->answer_ = nullptr;
                if (answer != nullptr) answer->on_abort();
                s->respond_text(408, "Request Timeout\n");
            }
            break;
        case h2::watch::block:
            end_for(close_reason::header_timeout);
            break;
        case h2::watch::settings:  // GOAWAY(SETTINGS_TIMEOUT)
        case h2::watch::probe_ack: // a dead peer: GOAWAY(NO_ERROR), every stream reset
            end_for(close_reason::http2_ack_timeout);
            break;
        case h2::watch::stall: // a stream's: the connection goes on
        case h2::watch::ping:  // the graceful stop's final GOAWAY: the stop's (or limit's) end
        case h2::watch::probe: // the PING goes out
            break;
        }
        conn_.expired(id, what, out);
    } catch (...) {
        // Out of memory for a frame: the connection ends as it is.
        broken_ = true;
        abort();
    }
    transport_.wake(); // the frames out, then whatever comes of them (a close)
}

std::size_t h2_session::consume(const char* data, std::size_t size, std::string& out) {
    consuming_ = true;
    struct done {
        bool& flag;
        ~done() { flag = false; }
    } const guard{consuming_};
    return conn_.consume(data, size, out);
}

void h2_session::settle() {
    if (!resumed_.empty()) {
        std::vector<std::uint32_t> ids;
        ids.swap(resumed_);
        for (const std::uint32_t id : ids)
            conn_.resume(id, output());
    }
    if (retired_.empty()) return;
    std::vector<std::unique_ptr<h2_stream>> gone;
    gone.swap(retired_);
    release_orphans(gone);
}

void h2_session::release_orphans(std::vector<std::unique_ptr<h2_stream>>& gone) noexcept {
    // An answer finished before its request's body ended (a proxied answer that overtook the
    // body, an extended CONNECT refused by the upstream) waits, as HTTP/1.1 lets it, for the
    // body's end: its stream's record is done with and the rest of the body is dropped, so it
    // is told the client is gone, now that no call of its own is on the stack.
    for (const auto& s : gone) {
        http::deferred* d = s->answer_;
        if (d == nullptr || !s->finished_ || !s->body_to_handler_ || s->body_done_) continue;
        s->answer_ = nullptr;
        d->on_abort();
    }
}

h2_stream* h2_session::find(std::uint32_t id) const noexcept {
    for (const auto& s : streams_)
        if (s->id() == id) return s.get();
    return nullptr;
}

void h2_session::retire(h2_stream& s) noexcept {
    const auto it = std::find_if(streams_.begin(), streams_.end(),
                                 [&s](const auto& p) { return p.get() == &s; });
    if (it == streams_.end()) return;
    try {
        retired_.push_back(std::move(*it));
    } catch (...) {
        // Out of memory to keep it until the stack unwinds: leaked rather than freed under
        // the caller (one stream's record).
        (void)it->release();
    }
    streams_.erase(it);
}

void h2_session::on_request(std::uint32_t id, const h2::request& r) {
    ++started_;
    metrics().h2.streams_total.add();
    // max_requests_per_connection: the graceful GOAWAY (RFC 9113 6.8) once it is reached; the
    // streams the client opened meanwhile are still served.
    if (settings().max_requests != 0 && started_ >= settings().max_requests)
        conn_.shutdown(output());
    streams_.push_back(std::make_unique<h2_stream>(*this, id));
    metrics().h2.streams.add(); // until the stream's done()
    h2_stream& s = *streams_.back();
    thread_local std::string block;
    to_request_head(r, s.head_, block);
    s.protocol_.assign(r.protocol);
    s.body_done_ = r.end_stream;
    if (settings().record_responses) s.started_ = transport_.request_started();
    if (r.content_length >= 0 &&
        static_cast<std::uint64_t>(r.content_length) > settings().max_body_bytes)
        s.respond_text(413, "Content Too Large\n");
    else
        dispatch(s);
    s.head_.header = {}; // the block is the worker's, reused by the next request
}

void h2_session::dispatch(h2_stream& s) {
    const http::router::route* route = nullptr;
    if (s.head_.method == boost::beast::http::verb::connect && s.protocol_.empty()) {
        // A plain CONNECT (RFC 9113 8.5: a tunnel to :authority) asks for a forward proxy:
        // 501 whatever the route, as HTTP/1.1's CONNECT gets (http/request_parser). Routed, it
        // would reach a proxy as a request with no target.
        s.respond_text(501, "Not Implemented\n");
        return;
    }
    if (s.head_.target == "*") {
        // OPTIONS * asks about the server itself.
        http::response_head head;
        head.extra_fields = http::allow_field;
        s.respond(head);
        s.finish();
        return;
    }
    route = settings().routes != nullptr ? settings().routes->find(s.head_) : nullptr;
    s.stats_ = route != nullptr ? route->stats : nullptr;
    if (route != nullptr)
        route->target->on_request(s);
    else // no router, or no route for this target
        s.respond_text(404, "Not Found\n");
    if (s.over_) return;
    if (!s.finished_ && s.answer_ == nullptr) {
        // A handler must answer or say it answers later; refuse rather than hang.
        if (s.status_ == 0)
            s.respond_text(500, "Internal Server Error\n");
        else
            s.abort();
        return;
    }
    if (s.answer_ != nullptr && route != nullptr) s.held_ = route->target;
    if (s.body_done_ && s.body_to_handler_ && s.answer_ != nullptr && !s.finished_)
        s.answer_->on_body_end();
}

std::size_t h2_session::on_body(std::uint32_t id, std::string_view bytes) {
    h2_stream* s = find(id);
    if (s == nullptr || s->over_ || s->gone_) return bytes.size(); // answered: thrown away
    s->received_ += bytes.size();
    if (s->received_ > settings().max_body_bytes && !s->upgraded_) { // a tunnel's are no body
        // Past the limit: the answer is told the client went (its request cannot be whole),
        // and the client hears 413 if nothing was answered yet; what else comes is dropped.
        http::deferred* d = s->finished_ ? nullptr : s->answer_;
        s->answer_ = nullptr;
        if (d != nullptr) d->on_abort();
        if (s->status_ == 0 && !s->over_) {
            s->respond_text(413, "Content Too Large\n");
        } else if (!s->over_) {
            s->gone_ = true;
            s->done();
        }
        return bytes.size();
    }
    if (s->answer_ == nullptr || !s->body_to_handler_ || s->finished_) return bytes.size();
    s->delivering_ = true;
    s->resumed_ = false;
    const std::size_t taken = s->answer_->on_body(bytes);
    s->delivering_ = false;
    if (taken < bytes.size() && s->resumed_) resumed_.push_back(id);
    return taken;
}

void h2_session::on_body_end(std::uint32_t id, std::span<const h2::field> trailers) {
    (void)trailers;
    h2_stream* s = find(id);
    if (s == nullptr || s->over_) return;
    s->body_done_ = true;
    if (s->answer_ != nullptr && s->body_to_handler_ && !s->finished_) s->answer_->on_body_end();
}

void h2_session::on_reset(std::uint32_t id, h2::error_code code, bool by_peer) {
    if (by_peer) metrics().h2.resets_received[slot(code)].add();
    h2_stream* s = find(id);
    if (s == nullptr || s->over_) return;
    s->gone_ = true;
    http::deferred* d = s->finished_ ? nullptr : s->answer_;
    if (d != nullptr) s->answer_ = nullptr; // a finished one waiting for the body: at settle()
    // The client went before its answer began: nginx's 499 (client closed request).
    if (d != nullptr && s->status_ == 0) s->status_ = 499;
    s->done();
    if (d != nullptr) d->on_abort();
}

void h2_session::on_writable(std::uint32_t id) {
    if (h2_stream* s = find(id)) {
        s->pump();
        s->tell_writable();
    }
}

void h2_session::output_drained() {
    if (streams_.empty()) return;
    // A snapshot: a stream that ends meanwhile is retired, not freed, until settle().
    thread_local std::vector<h2_stream*> open;
    open.clear();
    for (const auto& s : streams_)
        open.push_back(s.get());
    for (h2_stream* s : open) {
        s->pump();
        s->tell_writable();
    }
}

void h2_session::abort() noexcept {
    aborted_ = true;
    deadlines_.reset();
    while (!streams_.empty()) {
        h2_stream& s = *streams_.back();
        s.gone_ = true;
        http::deferred* d = s.finished_ ? nullptr : s.answer_;
        if (d != nullptr) s.answer_ = nullptr; // a finished one waiting for the body: below
        if (d != nullptr && s.status_ == 0) s.status_ = 499;
        s.done(); // out of streams_
        if (d != nullptr) d->on_abort();
    }
    std::vector<std::unique_ptr<h2_stream>> gone;
    gone.swap(retired_);
    release_orphans(gone);
}

} // namespace tarry::server

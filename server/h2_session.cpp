#include "h2_session.hpp"

#include <tarry/http/method_gate.hpp>

#include <algorithm>

namespace tarry::server {
namespace {

/// The strings field blocks decode into: one per worker thread, as the read buffer is.
h2::workspace& workspace() noexcept {
    thread_local h2::workspace ws;
    return ws;
}

} // namespace

h2_session::h2_session(const h2::connection_config& config, const http::session_settings& settings,
                       http::session_transport& transport)
    : settings_(&settings), transport_(transport), conn_(config, *this, workspace()) {}

h2_session::~h2_session() {
    abort();
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
    retired_.clear();
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
    streams_.push_back(std::make_unique<h2_stream>(*this, id));
    h2_stream& s = *streams_.back();
    thread_local std::string block;
    to_request_head(r, s.head_, block);
    s.body_done_ = r.end_stream;
    if (settings_->record_responses) s.started_ = transport_.request_started();
    if (r.content_length >= 0 &&
        static_cast<std::uint64_t>(r.content_length) > settings_->max_body_bytes)
        s.respond_text(413, "Content Too Large\n");
    else
        dispatch(s);
    s.head_.header = {}; // the block is the worker's, reused by the next request
}

void h2_session::dispatch(h2_stream& s) {
    const http::router::route* route = nullptr;
    if (s.head_.target == "*") {
        // OPTIONS * asks about the server itself.
        http::response_head head;
        head.extra_fields = http::allow_field;
        s.respond(head);
        s.finish();
        return;
    }
    route = settings_->routes != nullptr ? settings_->routes->find(s.head_) : nullptr;
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
    if (s->received_ > settings_->max_body_bytes) {
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
    (void)code, (void)by_peer;
    h2_stream* s = find(id);
    if (s == nullptr || s->over_) return;
    s->gone_ = true;
    http::deferred* d = s->finished_ ? nullptr : s->answer_;
    s->answer_ = nullptr;
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
    while (!streams_.empty()) {
        h2_stream& s = *streams_.back();
        s.gone_ = true;
        http::deferred* d = s.finished_ ? nullptr : s.answer_;
        s.answer_ = nullptr;
        if (d != nullptr && s.status_ == 0) s.status_ = 499;
        s.done(); // out of streams_
        if (d != nullptr) d->on_abort();
    }
}

} // namespace tarry::server

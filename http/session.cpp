#include "session.hpp"

#include "request_error.hpp"

#include <boost/beast/http/error.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tarry::http {
namespace bh = boost::beast::http;

namespace {

constexpr std::string_view hello = "Hello, World!";
constexpr std::string_view allow = "Allow: GET, HEAD, OPTIONS\r\n";
constexpr std::string_view text_plain = "text/plain";
constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
/// Files up to this size are copied into the output with the head: one write, no sendfile.
constexpr std::uint64_t inline_file_bytes = 16 * std::uint64_t{1024};

} // namespace

session::~session() {
    finish_request();
}

session::phase session::current_phase() const noexcept {
    if (!state_ || !state_->parser) return phase::idle;
    return state_->parser->is_header_done() ? phase::body : phase::headers;
}

void session::drain() noexcept {
    draining_ = true;
    if (current_phase() == phase::idle && !file_) closing_ = true;
}

void session::finish_request() noexcept {
    sent_continue_ = false;
    if (!state_) return;
    state_->parser.reset();
    try {
        states::give(std::move(state_));
    } catch (...) {
        state_.reset(); // could not keep it for reuse: free it
    }
}

std::size_t session::consume(const char* data, std::size_t size, std::string& out,
                             std::string_view date, exchange_log* log) {
    std::size_t used = 0;
    log_ = log;
    struct forget {
        exchange_log*& log;
        ~forget() { log = nullptr; } // even if an allocation throws: never keep a stale observer
    } const guard{log_};
    while (!closing_ && !file_ && out.size() < settings_->max_queued_bytes) {
        if (!state_) {
            // RFC 9112, 2.2: ignore empty lines received before a request-line.
            while (used < size && (data[used] == '\r' || data[used] == '\n'))
                ++used;
            if (used == size) break;
            state_ = states::take();
            state_->parser.emplace(state_->head, settings_->max_header_bytes,
                                   settings_->max_body_bytes);
        }
        request_parser& parser = *state_->parser;
        boost::system::error_code ec;
        const std::size_t n = parser.feed(data + used, size - used, ec);
        if (ec && ec != bh::error::need_more) {
            // No header byte is consumed before the header is whole, so data + used is where
            // this request starts: a line feed within the header limit means the request line
            // ended there (past the limit, it ended too late: 414).
            const bool line_complete =
                std::memchr(data + used, '\n',
                            std::min(size - used, settings_->max_header_bytes)) != nullptr;
            fail(status_for(ec, line_complete), out, date);
            break;
        }
        used += n;
        if (parser.is_done()) {
            respond(out, date);
            finish_request();
            continue;
        }
        if (parser.is_header_done() && state_->head.expect_continue && !sent_continue_ &&
            parser.body_bytes() == 0) {
            out.append(continue_line);
            sent_continue_ = true;
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

response_head session::base_head(unsigned status, bool keep_alive) noexcept {
    response_head r;
    r.status = status;
    r.close = !keep_alive;
    r.keep_alive_field = keep_alive && state_ && state_->head.version == 10;
    r.keep_alive_timeout_s = keep_alive ? settings_->keep_alive_timeout_s : 0;
    return r;
}

void session::respond(std::string& out, std::string_view date) {
    ++requests_;
    const request_head& req = state_->head;
    const bool keep_alive = state_->parser->keep_alive() && !draining_ &&
                            (settings_->max_requests == 0 || requests_ < settings_->max_requests);
    if (!keep_alive) closing_ = true;

    if (req.method == bh::verb::options) {
        response_head r = base_head(200, keep_alive);
        r.extra_fields = allow;
        emit(out, r, date);
        return;
    }
    if (req.method == bh::verb::unknown) {
        // A method this server does not recognise (RFC 9110, 9.1 and 15.6.2); 405 is for one
        // it knows but the resource does not allow.
        const std::string_view body = "Not Implemented\n";
        response_head r = base_head(501, keep_alive);
        r.content_type = text_plain;
        r.content_length = body.size();
        emit(out, r, date);
        out.append(body);
        return;
    }
    if (req.method != bh::verb::get && req.method != bh::verb::head) {
        const std::string_view body = "Method Not Allowed\n";
        response_head r = base_head(405, keep_alive);
        r.content_type = text_plain;
        r.content_length = body.size();
        r.extra_fields = allow;
        emit(out, r, date);
        out.append(body);
        return;
    }
    if (settings_->files == nullptr) {
        response_head r = base_head(200, keep_alive);
        r.content_type = text_plain;
        r.content_length = hello.size();
        emit(out, r, date);
        if (req.method == bh::verb::get) out.append(hello);
        return;
    }
    respond_file(out, date, base_head(200, keep_alive));
}

void session::respond_file(std::string& out, std::string_view date, const response_head& base) {
    static_files::file f = settings_->files->open(state_->head.target);
    response_head r = base;
    if (f.status != 200) {
        const std::string_view why = reason(f.status);
        r.status = f.status;
        r.content_type = text_plain;
        r.content_length = why.size() + 1;
        emit(out, r, date);
        out.append(why);
        out.push_back('\n');
        return;
    }
    r.content_type = f.content_type;
    r.content_length = f.size;
    emit(out, r, date);
    if (state_->head.method == bh::verb::head || f.size == 0) return;
    if (f.size <= inline_file_bytes) {
        const std::size_t at = out.size();
        out.resize(at + f.size);
        const ssize_t got = ::pread(f.fd.get(), out.data() + at, f.size, 0);
        if (got == static_cast<ssize_t>(f.size)) return;
        // The file changed under us: stream whatever is there, and the length decides.
        out.resize(at + static_cast<std::size_t>(got > 0 ? got : 0));
        file_ = file_body{std::move(f.fd), static_cast<std::uint64_t>(got > 0 ? got : 0),
                          f.size - static_cast<std::uint64_t>(got > 0 ? got : 0)};
        return;
    }
    file_ = file_body{std::move(f.fd), 0, f.size};
}

void session::emit(std::string& out, const response_head& head, std::string_view date) {
    append_head(out, head, date);
    if (log_ == nullptr) return;
    const request_head* req = state_ ? &state_->head : nullptr;
    const bool head_only = req != nullptr && req->method == bh::verb::head;
    log_->on_response(req, head.status, head_only ? 0 : head.content_length);
}

void session::fail(unsigned status, std::string& out, std::string_view date) {
    const std::string_view why = reason(status);
    response_head r;
    r.status = status;
    r.close = true;
    r.content_type = text_plain;
    r.content_length = why.size() + 1;
    emit(out, r, date);
    out.append(why);
    out.push_back('\n');
    closing_ = true;
    finish_request();
}

} // namespace tarry::http

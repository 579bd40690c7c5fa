#include "h2_stream.hpp"

#include "h2_session.hpp"
#include "worker_metrics.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/verb.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <random>

namespace tarry::server {
namespace {

namespace bh = boost::beast::http;
using boost::beast::iequals;

/// A file body is read this much at a time at most (four DATA frames of the default size).
constexpr std::size_t file_piece = 64 << 10;

/// Connection-specific fields (RFC 9113 8.2.2): an HTTP/2 message carries none. Content-Length
/// is handled apart (the head's own, kept).
bool connection_specific(std::string_view name) noexcept {
    return iequals(name, "connection") || iequals(name, "keep-alive") ||
           iequals(name, "proxy-connection") || iequals(name, "transfer-encoding") ||
           iequals(name, "upgrade") || iequals(name, "te");
}

/// A Sec-WebSocket-Key for the upstream (RFC 6455 4.1: 16 random bytes in base64). It proves
/// nothing past us (the upstream's Accept stops here), so a per-thread generator will do.
void append_websocket_key(std::string& out) {
    thread_local std::mt19937_64 random{std::random_device{}()};
    static constexpr std::string_view digits =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const std::uint64_t a = random();
    const std::uint64_t b = random();
    // 16 bytes are 128 bits: 21 digits of 6 bits and a last one of 2, then "==".
    for (int i = 0; i < 10; ++i)
        out.push_back(digits[(a >> (6 * i)) & 63]);
    out.push_back(digits[((a >> 60) | (b << 4)) & 63]);
    for (int i = 0; i < 10; ++i)
        out.push_back(digits[(b >> (2 + 6 * i)) & 63]);
    out.push_back(digits[(b >> 62) << 4]);
    out.append("==");
}

std::string_view trim(std::string_view v) noexcept {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
        v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
        v.remove_suffix(1);
    return v;
}

} // namespace

void to_request_head(const h2::request& r, http::request_head& head, std::string& block) {
    head.clear();
    head.method = bh::string_to_verb(r.method);
    head.version = 20;
    // A plain CONNECT has no :path: its target is :authority, HTTP/1.1's authority-form (the
    // access log's request line says what it asked for).
    head.target.assign(r.path.empty() && r.method == "CONNECT" ? r.authority : r.path);
    head.host.assign(r.authority);
    block.clear();
    const bool tunnel = !r.protocol.empty();
    const bool websocket = tunnel && iequals(r.protocol, "websocket");
    block.append(tunnel ? std::string_view("GET") : r.method);
    block.append(" ").append(head.target.empty() ? "/" : head.target).append(" HTTP/1.1\r\n");
    if (!r.authority.empty()) block.append("host: ").append(r.authority).append("\r\n");
    if (websocket) {
        block.append("sec-websocket-key: ");
        append_websocket_key(block);
        block.append("\r\n");
    }
    // Cookies may come as several fields (RFC 9113 8.2.3): one field again, joined with "; ".
    bool cookie = false;
    for (const h2::field& f : r.fields) {
        if (f.name == "cookie") {
            cookie = true;
            continue;
        }
        if (f.name == "host") continue; // :authority says it (and request_checks matched them)
        if (websocket && f.name == "sec-websocket-key") continue; // ours went up instead
        if (f.name == "user-agent") head.user_agent.assign(f.value);
        if (f.name == "referer") head.referer.assign(f.value);
        block.append(f.name).append(": ").append(f.value).append("\r\n");
    }
    if (cookie) {
        block.append("cookie: ");
        bool first = true;
        for (const h2::field& f : r.fields) {
            if (f.name != "cookie") continue;
            if (!first) block.append("; ");
            block.append(f.value);
            first = false;
        }
        block.append("\r\n");
    }
    // A body whose length is not announced: in HTTP/1.1's terms it is chunked, which is how a
    // proxy frames it upstream.
    if (!r.end_stream && r.content_length < 0 && !tunnel)
        block.append("transfer-encoding: chunked\r\n");
    block.append("\r\n");
    head.header = block;
}

void to_response_fields(const http::response_head& head, std::string_view date,
                        std::vector<h2::field>& fields, std::string& text) {
    fields.clear();
    text.clear();
    // Lowered names and the length's digits: never more than this, so views into it hold.
    text.reserve(head.extra_fields.size() + 32);
    if (head.server_date) {
        fields.push_back({"server", "tarry"});
        fields.push_back({"date", date});
    }
    if (!head.content_type.empty()) fields.push_back({"content-type", head.content_type});
    const bool length = !head.length_unknown && !head.chunked;
    if (length) {
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof digits, head.content_length).ptr;
        const std::size_t at = text.size();
        text.append(digits, end);
        fields.push_back({"content-length", std::string_view(text).substr(at)});
    }
    std::string_view rest = head.extra_fields;
    while (!rest.empty()) {
        const std::size_t eol = rest.find('\n');
        std::string_view line = rest.substr(0, eol);
        rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) continue;
        const std::string_view name = line.substr(0, colon);
        if (connection_specific(name) || (length && iequals(name, "content-length"))) continue;
        const std::size_t at = text.size();
        for (const char c : name)
            text.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
        fields.push_back({std::string_view(text).substr(at), trim(line.substr(colon + 1))});
    }
}

std::string_view h2_stream::peer() const noexcept {
    return session_->transport_.peer();
}

bool h2_stream::secure() const noexcept {
    return session_->transport_.secure();
}

int h2_stream::certificate() const noexcept {
    return session_->transport_.certificate();
}

void h2_stream::respond(http::response_head h) {
    if (gone_ || status_ != 0) return;
    head_only_ = head_.method == bh::verb::head || h.status == 304 || h.status == 204;
    thread_local std::vector<h2::field> fields;
    thread_local std::string text;
    http::session_transport& t = session_->transport_;
    to_response_fields(h, h.server_date ? t.date() : std::string_view{}, fields, text);
    session_->conn_.respond(id_, h.status, fields, head_only_, session_->output());
    status_ = h.status;
    if (head_only_) end_sent_ = true;
    const std::uint64_t bytes = head_only_ || h.length_unknown ? 0 : h.content_length;
    t.responded(&head_, stats_, h.status, bytes);
    session_->wake();
}

void h2_stream::write(std::string_view bytes) {
    if (gone_ || head_only_ || finished_ || out_shut_ || bytes.empty()) return;
    sent_ += bytes.size();
    send(bytes, false);
    session_->wake();
}

void h2_stream::send(std::string_view bytes, bool end) {
    if (!pending_.empty() || file_) {
        pending_.append(bytes);
        return;
    }
    const std::size_t n = session_->conn_.data(id_, bytes, end, session_->output());
    if (n < bytes.size()) {
        pending_.append(bytes.substr(n));
        return;
    }
    if (end) end_sent_ = true;
}

void h2_stream::send_file(http::unique_fd fd, std::uint64_t offset, std::uint64_t length) {
    if (gone_ || finished_) return;
    if (!head_only_ && length != 0) file_.emplace(http::file_body{std::move(fd), offset, length});
    finished_ = true;
    pump();
    session_->wake();
}

void h2_stream::finish() {
    if (gone_ || finished_) return;
    finished_ = true;
    pump();
    session_->wake();
}

void h2_stream::answer_text(unsigned status, std::string_view body, std::string_view extra_fields) {
    if (gone_ || finished_) return;
    http::response_head h = http::text_head(status, body.size());
    h.extra_fields = extra_fields;
    respond(h);
    finished_ = true;
    if (!head_only_) {
        sent_ += body.size();
        send(body, true);
    }
    pump();
}

void h2_stream::pump() {
    if (gone_ || over_) return;
    std::string& out = session_->output();
    h2::connection& c = session_->conn_;
    const bool ending = finished_ || out_shut_;
    if (!pending_.empty()) {
        const bool last = ending && !file_;
        const std::size_t n = c.data(id_, pending_, last, out);
        pending_.erase(0, n);
        if (!pending_.empty()) return; // on_writable() comes when there is room
        if (last) end_sent_ = true;
    }
    while (file_) {
        const std::size_t r = space();
        if (r == 0) return; // the connection's on_writable or the output's drain comes back
        const std::size_t piece = std::min<std::uint64_t>({r, file_piece, file_->remaining});
        thread_local std::string buffer;
        buffer.resize(piece);
        ssize_t n = 0;
        do {
            n = ::pread(file_->fd.get(), buffer.data(), piece, static_cast<off_t>(file_->offset));
        } while (n < 0 && errno == EINTR);
        if (n <= 0) { // the file shrank: the length promised cannot be kept
            file_.reset();
            abort();
            return;
        }
        const auto got = static_cast<std::size_t>(n);
        file_->offset += got;
        file_->remaining -= got;
        sent_ += got;
        const bool last = file_->remaining == 0;
        if (last) file_.reset();
        const std::size_t taken = c.data(id_, std::string_view(buffer.data(), got), last, out);
        if (taken < got) {
            pending_.assign(buffer, taken, got - taken);
            return;
        }
        if (last) end_sent_ = true;
    }
    if (ending && !end_sent_) {
        c.data(id_, {}, true, out);
        end_sent_ = true;
    }
    if (finished_ && end_sent_) done();
}

std::size_t h2_stream::room() const noexcept {
    return gone_ || finished_ || out_shut_ ? 0 : space();
}

std::size_t h2_stream::space() const noexcept {
    if (gone_) return 0;
    const std::size_t queued = session_->transport_.output().size();
    const std::size_t limit = session_->settings().max_queued_bytes;
    const std::size_t out = queued < limit ? limit - queued : 0;
    const std::size_t held = pending_.size();
    const std::size_t stream = session_->conn_.room(id_);
    return std::min(out, stream > held ? stream - held : 0);
}

void h2_stream::tell_writable() {
    if (gone_ || over_ || finished_ || answer_ == nullptr || room() == 0) return;
    answer_->on_writable();
}

void h2_stream::resume_body() {
    if (delivering_) {
        resumed_ = true; // on_body() returns what it took: the rest is offered again after
        return;
    }
    if (gone_ || over_) return;
    session_->resumed_.push_back(id_);
    session_->transport_.wake();
}

void h2_stream::abort() {
    if (gone_ || over_) return;
    gone_ = true;
    answer_ = nullptr;
    // A tunnel's abrupt end is CANCEL (RFC 8441 5), a failed answer's INTERNAL_ERROR.
    session_->conn_.reset(id_, upgraded_ ? h2::error_code::cancel : h2::error_code::internal_error,
                          session_->output());
    done();
    session_->wake();
}

void h2_stream::upgrade(http::response_head h) {
    if (protocol_.empty() || upgraded_ || gone_) {
        abort(); // nothing asked for a tunnel here
        return;
    }
    // RFC 8441 5: the upstream's 101 is our 200. Its Upgrade and Connection are HTTP/1.1's
    // (to_response_fields leaves them out); Sec-WebSocket-Accept answered our key, not the
    // client's; Sec-WebSocket-Protocol and -Extensions pass.
    std::string fields;
    std::string_view rest = h.extra_fields;
    while (!rest.empty()) {
        const std::size_t eol = rest.find('\n');
        const std::string_view line =
            rest.substr(0, eol == std::string_view::npos ? rest.size() : eol + 1);
        rest.remove_prefix(line.size());
        if (line.size() >= 21 && iequals(line.substr(0, 21), "sec-websocket-accept:")) continue;
        fields.append(line);
    }
    h.status = 200;
    h.extra_fields = fields;
    h.length_unknown = true;
    h.chunked = false;
    upgraded_ = true;
    respond(h);
    session_->metrics().h2.tunnels.add();
    session_->metrics().h2.tunnels_total.add();
    // The client's END_STREAM may have come before the upstream's 101: the tunnel hears of it.
    if (body_done_ && answer_ != nullptr && body_to_handler_) answer_->on_body_end();
}

void h2_stream::shutdown_output() {
    if (!upgraded_ || gone_ || over_ || out_shut_) return;
    out_shut_ = true; // END_STREAM once what is pending went; the client may still send
    pump();
    session_->wake();
}

http::upstream_timing* h2_stream::upstream_record() noexcept {
    if (!session_->settings().record_responses) return nullptr;
    proxied_ = true;
    return &upstream_;
}

http::response_record h2_stream::record() const noexcept {
    http::response_record r;
    r.request = &head_;
    r.status = status_;
    r.body_bytes = sent_;
    r.started = started_;
    r.upstream = proxied_ ? &upstream_ : nullptr;
    return r;
}

void h2_stream::done() noexcept {
    if (over_) return;
    over_ = true;
    session_->metrics().h2.streams.add(-1);
    if (upgraded_) session_->metrics().h2.tunnels.add(-1);
    if (status_ != 0 && session_->settings().record_responses)
        session_->transport_.completed(record());
    session_->retire(*this);
}

} // namespace tarry::server

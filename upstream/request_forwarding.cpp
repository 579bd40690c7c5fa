#include "request_forwarding.hpp"

#include <tarry/http/field_writer.hpp>
#include <tarry/http/hop_by_hop.hpp>

#include <boost/beast/core/string.hpp>

namespace tarry::upstream {

namespace bh = boost::beast::http;
using boost::beast::iequals;
using http::append_field;

bool is_idempotent(bh::verb method) noexcept {
    switch (method) {
    case bh::verb::get:
    case bh::verb::head:
    case bh::verb::options:
    case bh::verb::trace:
    case bh::verb::put:
    case bh::verb::delete_:
        return true;
    default:
        return false;
    }
}

forwarded_head forward_head(const http::request_head& req, const forward_context& ctx) {
    const std::string_view header = req.header;
    forwarded_head out;
    std::string& head = out.bytes;
    head.reserve(header.size() + 128);
    head.append(header.substr(0, header.find(' '))); // the method as the client spelled it
    head.push_back(' ');
    head.append(req.target);
    head.append(" HTTP/1.1\r\n");
    if (!req.host.empty())
        append_field(head, "Host", req.host);
    else
        append_field(head, "Host", ctx.server.starts_with("unix:") ? "localhost" : ctx.server);
    const std::string_view connection = http::find_field(header, "Connection");
    std::string forwarded_for;
    bool has_proto = false;
    bool has_host = false;
    std::string_view content_length;
    http::for_each_field(header, [&](std::string_view name, std::string_view value) {
        if (iequals(name, "Content-Length")) content_length = value;
        if (iequals(name, "Transfer-Encoding")) out.chunked = true;
        if (http::hop_by_hop(name) || iequals(name, "Host") || http::listed_in(connection, name))
            return;
        if (iequals(name, "X-Forwarded-For")) {
            if (ctx.trust_forwarded) {
                if (!forwarded_for.empty()) forwarded_for.append(", ");
                forwarded_for.append(value);
            }
            return;
        }
        if (iequals(name, "X-Forwarded-Proto")) {
            if (!ctx.trust_forwarded) return;
            has_proto = true;
        }
        if (iequals(name, "X-Forwarded-Host")) {
            if (!ctx.trust_forwarded) return;
            has_host = true;
        }
        append_field(head, name, value);
    });
    if (!ctx.peer.empty()) {
        if (!forwarded_for.empty()) forwarded_for.append(", ");
        forwarded_for.append(ctx.peer);
    }
    if (!forwarded_for.empty()) append_field(head, "X-Forwarded-For", forwarded_for);
    if (!has_proto) append_field(head, "X-Forwarded-Proto", ctx.secure ? "https" : "http");
    if (!has_host && !req.host.empty()) append_field(head, "X-Forwarded-Host", req.host);
    if (!ctx.upgrade.empty()) {
        // The one hop-by-hop field passed on, with its Connection token: the upstream decides
        // whether to switch (RFC 9110 7.8).
        append_field(head, "Upgrade", ctx.upgrade);
        head.append("Connection: upgrade\r\n");
    }
    if (out.chunked) {
        head.append("Transfer-Encoding: chunked\r\n");
    } else if (!content_length.empty()) {
        append_field(head, "Content-Length", content_length);
    }
    head.append("\r\n");
    return out;
}

void request_writer::append(std::string_view bytes) {
    pending_.append(bytes);
    if (!replayable_) return;
    if (replay_.size() + bytes.size() > max_replay) {
        replayable_ = false;
        std::string().swap(replay_);
        return;
    }
    replay_.append(bytes);
}

void request_writer::append_body(std::string_view bytes) {
    if (!chunked_) {
        append(bytes);
        return;
    }
    std::string frame; // a few bytes: no allocation
    http::append_chunk_size(frame, bytes.size());
    append(frame);
    append(bytes);
    append("\r\n");
}

void request_writer::end_body() {
    if (chunked_) append("0\r\n\r\n");
}

void request_writer::replay() {
    pending_ = replay_;
    writing_.clear();
}

void request_writer::forget_replay() noexcept {
    replayable_ = false;
    std::string().swap(replay_);
}

} // namespace tarry::upstream

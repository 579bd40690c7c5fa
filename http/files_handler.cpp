#include "files_handler.hpp"

#include "accept_encoding.hpp"
#include "byte_ranges.hpp"
#include "conditional.hpp"
#include "method_gate.hpp"
#include "session.hpp"

#include <unistd.h>

#include <charconv>

namespace tarry::http {
namespace bh = boost::beast::http;
namespace {

/// Files up to this size are copied into the output with the head: one write, no sendfile.
constexpr std::uint64_t inline_file_bytes = 16 * std::uint64_t{1024};

/// Types worth precompressing; for the others (images, video, fonts already compressed) no
/// sibling is looked for, so they cost no extra open.
bool compressible(std::string_view type) noexcept {
    return type.starts_with("text/") || type.starts_with("application/json") ||
           type.starts_with("application/xml") || type.starts_with("application/wasm") ||
           type.starts_with("image/svg+xml") || type.starts_with("application/manifest+json") ||
           type.starts_with("image/x-icon");
}

void append_number(std::string& out, std::uint64_t n) {
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, n);
    out.append(digits, r.ptr);
}

void respond_error(exchange& ex, unsigned status, std::string_view fields = {}) {
    const std::string_view why = reason(status);
    response_head head = text_head(status, why.size() + 1);
    head.extra_fields = fields;
    ex.respond(head);
    ex.write(why);
    ex.write("\n");
    ex.finish();
}

/// Sends [offset, offset + length) of the file as the body: inline when small, else sendfile.
void send_body(exchange& ex, unique_fd fd, std::uint64_t offset, std::uint64_t length) {
    if (length == 0) {
        ex.finish();
        return;
    }
    if (length <= inline_file_bytes) {
        char buffer[inline_file_bytes];
        const ssize_t got = ::pread(fd.get(), buffer, length, static_cast<off_t>(offset));
        const auto n = static_cast<std::uint64_t>(got > 0 ? got : 0);
        ex.write(std::string_view(buffer, n));
        if (n == length) {
            ex.finish();
            return;
        }
        // The file changed under us: stream whatever is there, and the length decides.
        ex.send_file(std::move(fd), offset + n, length - n);
        return;
    }
    ex.send_file(std::move(fd), offset, length);
}

} // namespace

files_handler::files_handler(const std::filesystem::path& root, std::string cache_control)
    : files_(root) {
    if (!cache_control.empty()) cache_control_ = "Cache-Control: " + cache_control + "\r\n";
}

void files_handler::on_request(exchange& ex) {
    if (answer_unless_get(ex)) return;
    const request_head& req = ex.request();
    static_files::file f = files_.open(req.target);
    if (f.status == 301) {
        fields_.assign("Location: ");
        fields_.append(f.location);
        fields_.append("\r\n");
        respond_error(ex, 301, fields_);
        return;
    }
    if (f.status != 200) {
        respond_error(ex, f.status);
        return;
    }
    const request_conditions c = request_conditions::from_header(req.header);
    const std::string_view content_type = f.content_type;

    // Precompressed siblings. Whether one exists decides Vary even for a client that accepts
    // neither coding: a cache must not hand the plain response to one that does, or the reverse.
    std::string_view content_encoding;
    bool vary = false;
    if (compressible(content_type)) {
        const accepted_codings accepts = parse_accept_encoding(c.accept_encoding);
        static_files::file br = files_.open_sibling(f.path, ".br");
        static_files::file gz = files_.open_sibling(f.path, ".gz");
        vary = br.status == 200 || gz.status == 200;
        switch (choose_coding(accepts, br.status == 200, gz.status == 200)) {
        case coding::br:
            f = std::move(br);
            content_encoding = "br";
            break;
        case coding::gzip:
            f = std::move(gz);
            content_encoding = "gzip";
            break;
        case coding::identity:
            break;
        }
    }

    const std::string etag = make_etag(f.mtime, f.size, f.inode);
    fields_.clear();
    fields_.append("Last-Modified: ");
    append_http_date(fields_, f.mtime);
    fields_.append("\r\nETag: ");
    fields_.append(etag);
    fields_.append("\r\n");
    fields_.append(cache_control_);
    if (vary) fields_.append("Vary: Accept-Encoding\r\n");
    // What a 304 repeats of a 200 ends here (RFC 9110 §15.4.5).
    const std::size_t validator_fields = fields_.size();

    const bool get = req.method == bh::verb::get;
    switch (evaluate_preconditions(c, true, etag, f.mtime)) {
    case precondition_result::not_modified: {
        // No Content-Length: the one a 304 may carry is the full representation's, which says
        // nothing useful, and nginx sends none either. The session sends no body for a 304.
        response_head head;
        head.status = 304;
        head.length_unknown = true;
        head.extra_fields = std::string_view(fields_).substr(0, validator_fields);
        ex.respond(head);
        ex.finish();
        return;
    }
    case precondition_result::failed:
        respond_error(ex, 412);
        return;
    case precondition_result::proceed:
        break;
    }

    if (!content_encoding.empty()) {
        fields_.append("Content-Encoding: ");
        fields_.append(content_encoding);
        fields_.append("\r\n");
    }
    fields_.append("Accept-Ranges: bytes\r\n");

    // Range is defined for GET only (RFC 9110 §14.2): HEAD and others ignore it. Several ranges
    // are answered with the whole file (200), which RFC 9110 allows: multipart/byteranges costs a
    // body framing of its own for what browsers and download managers never ask (they resume
    // with one open range), and overlapping or many small ranges are a known amplification
    // vector; parse_byte_ranges() also stops at max_byte_ranges.
    if (get && !c.range.empty() && if_range_allows(c.if_range, etag, f.mtime)) {
        const byte_range_request r = parse_byte_ranges(c.range, f.size);
        if (r.what == byte_range_request::kind::unsatisfiable) {
            fields_.resize(validator_fields);
            fields_.append("Content-Range: bytes */");
            append_number(fields_, f.size);
            fields_.append("\r\n");
            respond_error(ex, 416, fields_);
            return;
        }
        if (r.what == byte_range_request::kind::single) {
            fields_.append("Content-Range: bytes ");
            append_number(fields_, r.first);
            fields_.push_back('-');
            append_number(fields_, r.first + r.count - 1);
            fields_.push_back('/');
            append_number(fields_, f.size);
            fields_.append("\r\n");
            response_head head;
            head.status = 206;
            head.content_type = content_type;
            head.content_length = r.count;
            head.extra_fields = fields_;
            ex.respond(head);
            send_body(ex, std::move(f.fd), r.first, r.count);
            return;
        }
    }

    response_head head;
    head.content_type = content_type;
    head.content_length = f.size;
    head.extra_fields = fields_;
    ex.respond(head);
    if (!get) {
        ex.finish();
        return;
    }
    send_body(ex, std::move(f.fd), 0, f.size);
}

} // namespace tarry::http

#include "files_handler.hpp"

#include "accept_encoding.hpp"
#include "byte_ranges.hpp"
#include "conditional.hpp"
#include "field_writer.hpp"
#include "method_gate.hpp"
#include "session.hpp"

#include <fcntl.h>
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

void respond_error(exchange& ex, unsigned status, std::string_view fields = {}) {
    const std::string_view why = reason(status);
    response_head head = text_head(status, why.size() + 1);
    head.extra_fields = fields;
    ex.respond(head);
    ex.write(why);
    ex.write("\n");
    ex.finish();
}

/// Responds with `head` and [offset, offset + length) of `fd` as the body: inline when small,
/// else with sendfile, from `fd` itself or, when the cache keeps it (`shared`), a duplicate.
void send_body(exchange& ex, const response_head& head, unique_fd& fd, bool shared,
               std::uint64_t offset, std::uint64_t length) {
    if (length == 0) {
        ex.respond(head);
        ex.finish();
        return;
    }
    if (length <= inline_file_bytes) {
        char buffer[inline_file_bytes];
        const ssize_t got = ::pread(fd.get(), buffer, length, static_cast<off_t>(offset));
        const auto n = static_cast<std::uint64_t>(got > 0 ? got : 0);
        ex.respond(head);
        ex.write(std::string_view(buffer, n));
        if (n == length) {
            ex.finish();
            return;
        }
        // The file shrank under us: the connection's sendfile finds the end and closes.
        // (Should the duplicate fail, sendfile fails on it and the connection closes: the
        // length promised cannot be met either way.)
        unique_fd own = shared ? unique_fd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0)) : std::move(fd);
        ex.send_file(std::move(own), offset + n, length - n);
        return;
    }
    unique_fd own = shared ? unique_fd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0)) : std::move(fd);
    if (!own) {
        respond_error(ex, 503);
        return;
    }
    ex.respond(head);
    ex.send_file(std::move(own), offset, length);
}

} // namespace

files_handler::files_handler(const std::filesystem::path& root, std::string_view cache_control,
                             std::size_t open_files, std::chrono::milliseconds open_file_valid)
    : files_(root), cache_(open_files, open_file_valid) {
    if (!cache_control.empty()) append_field(cache_control_, "Cache-Control", cache_control);
}

void files_handler::on_request(exchange& ex) {
    if (answer_unless_get(ex)) return;
    const request_head& req = ex.request();
    const std::string_view path =
        std::string_view(req.target).substr(0, req.target.find_first_of("?#"));
    const bool caching = cache_.enabled();
    const auto now = caching ? open_file_cache::clock::now() : open_file_cache::clock::time_point{};
    open_file* entry = caching ? cache_.find(path, now) : nullptr;
    open_file fresh;
    if (entry == nullptr) {
        if (!open(ex, fresh)) return;
        fresh.opened = now;
        entry = caching ? &cache_.insert(path, std::move(fresh)) : &fresh;
    }
    const request_conditions c = request_conditions::from_header(req.header);
    answer(ex, c, *entry, choose(*entry, c.accept_encoding), caching);
}

bool files_handler::open(exchange& ex, open_file& fresh) {
    fresh.plain.file = files_.open(ex.request().target);
    const static_files::file& plain = fresh.plain.file;
    if (plain.status == 301) {
        fields_.clear();
        append_field(fields_, "Location", plain.location);
        respond_error(ex, 301, fields_);
        return false;
    }
    if (plain.status != 200) {
        // Out of descriptors: give back the ones kept for later requests.
        if (plain.status == 503) cache_.clear();
        respond_error(ex, plain.status);
        return false;
    }
    // Precompressed siblings are looked for only for types that have them, so images and the
    // like cost no extra open.
    if (compressible(plain.content_type)) {
        fresh.br.file = files_.open_sibling(plain.path, ".br");
        fresh.gz.file = files_.open_sibling(plain.path, ".gz");
        // Not knowing whether a sibling exists would drop Vary from what caches keep.
        if (fresh.br.file.status == 503 || fresh.gz.file.status == 503) {
            cache_.clear();
            respond_error(ex, 503);
            return false;
        }
    }
    for (representation* r : {&fresh.plain, &fresh.br, &fresh.gz}) {
        if (r->file.status != 200) continue;
        r->etag = make_etag(r->file.mtime, r->file.size, r->file.inode);
        append_http_date(r->last_modified, r->file.mtime);
    }
    return true;
}

files_handler::choice files_handler::choose(open_file& entry, std::string_view accept_encoding) {
    // Whether a sibling exists decides Vary even for a client that accepts neither coding: a
    // cache must not hand the plain response to one that does, or the reverse.
    const bool has_br = entry.br.file.status == 200;
    const bool has_gz = entry.gz.file.status == 200;
    choice chosen{&entry.plain, {}, has_br || has_gz};
    if (!chosen.vary) return chosen;
    switch (choose_coding(parse_accept_encoding(accept_encoding), has_br, has_gz)) {
    case coding::br:
        return {&entry.br, "br", true};
    case coding::gzip:
        return {&entry.gz, "gzip", true};
    case coding::identity:
        break;
    }
    return chosen;
}

void files_handler::answer(exchange& ex, const request_conditions& c, const open_file& entry,
                           const choice& chosen, bool caching) {
    static_files::file& f = chosen.rep->file;
    const std::string_view etag = chosen.rep->etag;
    const std::string_view content_type = entry.plain.file.content_type;

    fields_.clear();
    append_field(fields_, "Last-Modified", chosen.rep->last_modified);
    append_field(fields_, "ETag", etag);
    fields_.append(cache_control_);
    if (chosen.vary) fields_.append("Vary: Accept-Encoding\r\n");
    // What a 304 repeats of a 200 ends here (RFC 9110 §15.4.5).
    const std::size_t validator_fields = fields_.size();

    const bool get = ex.request().method == bh::verb::get;
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

    if (!chosen.encoding.empty()) append_field(fields_, "Content-Encoding", chosen.encoding);
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
            send_body(ex, head, f.fd, caching, r.first, r.count);
            return;
        }
    }

    response_head head;
    head.content_type = content_type;
    head.content_length = f.size;
    head.extra_fields = fields_;
    if (!get) {
        ex.respond(head);
        ex.finish();
        return;
    }
    send_body(ex, head, f.fd, caching, 0, f.size);
}

} // namespace tarry::http

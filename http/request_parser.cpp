#include "request_parser.hpp"

#include "ows.hpp"

#include "request_error.hpp"

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <array>
#include <cstring>

namespace tarry::http {
namespace bh = boost::beast::http;

namespace {

constexpr bool alnum(unsigned char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

constexpr bool hexdig(unsigned char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/// RFC 9110, 5.6.2.
/// A byte class as a table: the checks below run on every byte of every request line, where a
/// search of a character list per byte costs tens of instructions.
constexpr std::array<bool, 256> byte_class(std::string_view extra) {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c)
        t[static_cast<std::size_t>(c)] = alnum(static_cast<unsigned char>(c));
    for (const char c : extra)
        t[static_cast<unsigned char>(c)] = true;
    return t;
}

constexpr auto tchars = byte_class("!#$%&'*+-.^_`|~");

constexpr bool tchar(unsigned char c) noexcept {
    return tchars[c];
}

/// RFC 3986's characters (unreserved, gen-delims, sub-delims and "%"), plus "{", "}", "|",
/// "^" and "`": browsers leave those unencoded in a query, and "|" and "^" in a path too (the
/// WHATWG URL standard's percent-encode sets), so refusing them refuses real traffic, as Tomcat
/// found when it did (and added relaxedQueryChars). Anything else in a request-target (bytes
/// >= 0x80, raw UTF-8 or overlong forms like C0 AF, controls, DEL, space, DQUOTE, "<", ">",
/// "\") is malformed; percent-decoding is left to whoever uses the target.
constexpr auto uri_chars = byte_class("-._~:/?#[]@!$&'()*+,;=%{}|^`");

constexpr bool uri_char(unsigned char c) noexcept {
    return uri_chars[c];
}

/// Control bytes other than HTAB, which no field value or chunk extension may hold.
constexpr bool control(unsigned char c) noexcept {
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/// The common case of a whole request line, in three tight loops: a method token, a target of
/// RFC 3986's characters, "HTTP/" DIGIT "." DIGIT CRLF. False means it is not that; the byte by
/// byte check then says exactly what is wrong.
bool plain_request_line(std::string_view line, std::size_t max_method) noexcept {
    const auto* b = reinterpret_cast<const unsigned char*>(line.data());
    const std::size_t n = line.size();
    std::size_t i = 0;
    while (i < n && tchars[b[i]])
        ++i;
    if (i == 0 || i > max_method || i == n || b[i] != ' ') return false;
    const std::size_t target = ++i;
    while (i < n && uri_chars[b[i]])
        ++i;
    if (i == target || i == n || b[i] != ' ') return false;
    ++i;
    const auto digit = [](unsigned char c) { return c >= '0' && c <= '9'; };
    return n - i == 10 && line.substr(i, 5) == "HTTP/" && digit(b[i + 5]) && b[i + 6] == '.' &&
           digit(b[i + 7]) && b[i + 8] == '\r' && b[i + 9] == '\n';
}

/// Longer than any method this server knows (Beast's longest is 11 bytes), still a token: RFC
/// 9112 (3) has a server answer 501 to a method longer than any it implements, rather than
/// wait for a request line that would end in 414.
constexpr std::size_t max_method_bytes = 32;

// unreserved / pct-encoded / sub-delims (RFC 3986 reg-name), as a table: it runs on every byte
// of every Host field (isalnum and strchr per byte cost a call each, and strchr matched NUL).
constexpr std::array<bool, 256> host_chars = [] {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c)
        t[static_cast<std::size_t>(c)] = true;
    for (int c = 'a'; c <= 'z'; ++c) {
        const int upper = c - 'a' + 'A';
        t[static_cast<std::size_t>(c)] = t[static_cast<std::size_t>(upper)] = true;
    }
    for (const char c : std::string_view("-._~%!$&'()*+,;="))
        t[static_cast<unsigned char>(c)] = true;
    return t;
}();

bool host_char(unsigned char c) noexcept {
    return host_chars[c];
}

} // namespace

bool valid_host(std::string_view host) noexcept {
    std::string_view name = host;
    std::string_view port;
    if (!host.empty() && host.front() == '[') {
        const auto close = host.find(']');
        if (close == std::string_view::npos) return false;
        for (char c : host.substr(1, close - 1)) {
            if (std::isxdigit(static_cast<unsigned char>(c)) == 0 && c != ':' && c != '.')
                return false;
        }
        const auto rest = host.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') return false;
        port = rest.empty() ? rest : rest.substr(1);
        name = {};
    } else if (const auto colon = host.rfind(':'); colon != std::string_view::npos) {
        name = host.substr(0, colon);
        port = host.substr(colon + 1);
        if (port.empty()) return false;
    }
    if (!std::all_of(name.begin(), name.end(),
                     [](char c) { return host_char(static_cast<unsigned char>(c)); }))
        return false;
    return std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
           port.size() <= 5;
}

std::string_view find_field(std::string_view header, std::string_view name) noexcept {
    std::string_view found;
    bool seen = false;
    for_each_field(header, [&](std::string_view n, std::string_view v) {
        if (!seen && boost::beast::iequals(n, name)) {
            found = v;
            seen = true;
        }
    });
    return found;
}

request_parser::request_parser(request_head& head, std::size_t max_header_bytes,
                               std::uint64_t max_body_bytes, request_body_sink& body)
    : head_(head), body_(body), max_header_bytes_(max_header_bytes) {
    header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(max_header_bytes, UINT32_MAX)));
    body_limit(max_body_bytes);
    eager(false);
    head_.clear();
}

std::size_t request_parser::feed(const char* data, std::size_t size,
                                 boost::system::error_code& ec) {
    if (!is_header_done()) {
        // A whole header goes to Beast, which checks every field line itself: check the request
        // line only (what Beast lets through there: long methods, bytes outside RFC 3986 in the
        // target). An incomplete one is checked byte by byte, so garbage is refused at once.
        boost::system::error_code presence;
        const bool whole = header_present(data, size, presence);
        std::size_t check = size;
        const std::string_view window(data, std::min(size, max_header_bytes_));
        // Beast waits for CRLF CRLF: a header ended by a bare LF is refused by the full check.
        bool plain = false;
        if (whole && window.find("\r\n\r\n") != std::string_view::npos) {
            const auto lf = window.find('\n');
            check = lf == std::string_view::npos ? size : lf + 1;
            plain = lf != std::string_view::npos &&
                    plain_request_line(window.substr(0, lf + 1), max_method_bytes);
        }
        if (!plain) check_header(data, check, ec);
        if (ec) return 0;
        if (!whole) {
            ec = presence;
            return 0;
        }
    } else if (size < 5 && chunk_ >= chunk_part::trailer_start && chunk_ <= chunk_part::end_lf) {
        // Beast has the last chunk's line and waits for its trailer section. Given fewer than
        // five bytes then, it asserts (a CRLF before the line, as after a chunk's data): check
        // them here and wait.
        check_chunk_bytes(data, size, ec);
        if (!ec) ec = bh::error::need_more;
        return 0;
    }
    std::size_t n = put_raw(data, size, ec);
    if (ec == bh::error::bad_version) n = retry_version(data, size, ec);
    if (n != 0) {
        chunk_ = chunk_part::start;
        chunk_scanned_ = 0;
    }
    // Between two chunks, the bytes Beast leaves unconsumed are a chunk header it has not all
    // of. (Within a chunk's data they are data a body consumer has not taken yet.)
    if (ec == bh::error::need_more && is_header_done() && chunked() && chunk_left_ == 0)
        check_chunk_bytes(data + n, size - n, ec);
    return n;
}

void request_parser::check_header(const char* data, std::size_t size,
                                  boost::system::error_code& ec) {
    // request-line = method SP request-target SP HTTP-version CRLF (RFC 9112, 3), then
    // *( field-line CRLF ) CRLF (RFC 9112, 5). Past the header limit the header is too long
    // (414 or 431), whatever it holds. Beast checks all of this again once the header is
    // whole: this only refuses sooner.
    static constexpr std::string_view http = "HTTP/";
    const std::size_t window = std::min(size, max_header_bytes_);
    for (; header_scanned_ < window && header_ != header_part::done; ++header_scanned_) {
        const auto c = static_cast<unsigned char>(data[header_scanned_]);
        switch (header_) {
        case header_part::method:
            if (c == ' ' && part_bytes_ != 0) {
                header_ = header_part::target;
                part_bytes_ = 0;
            } else if (!tchar(c)) {
                ec = bh::error::bad_method;
                return;
            } else if (++part_bytes_ > max_method_bytes) {
                ec = request_error::method_not_implemented;
                return;
            }
            break;
        case header_part::target:
            if (c == ' ' && part_bytes_ != 0) {
                header_ = header_part::version;
                part_bytes_ = 0;
            } else if (!uri_char(c)) {
                ec = bh::error::bad_target;
                return;
            } else {
                ++part_bytes_;
            }
            break;
        case header_part::version: {
            // "HTTP/" DIGIT "." DIGIT CR: which versions are served is Beast's and
            // retry_version's to say, once the line is whole.
            const std::size_t at = part_bytes_++;
            const bool ok = at < http.size()     ? c == static_cast<unsigned char>(http[at])
                            : at == 5 || at == 7 ? c >= '0' && c <= '9'
                            : at == 6            ? c == '.'
                                                 : c == '\r';
            if (!ok) {
                ec = bh::error::bad_version;
                return;
            }
            if (c == '\r') header_ = header_part::line_lf;
            break;
        }
        case header_part::field_start:
            if (c == '\r') {
                header_ = header_part::end_lf;
                break;
            }
            if (c == ' ' || c == '\t') {
                ec = request_error::obs_fold; // or whitespace before the first field
                return;
            }
            if (c == ':') {
                ec = bh::error::bad_field; // an empty name
                return;
            }
            header_ = header_part::field_name;
            [[fallthrough]];
        case header_part::field_name:
            if (c == ':') {
                header_ = header_part::field_value;
            } else if (c == '\n') {
                ec = bh::error::bad_line_ending;
                return;
            } else if (!tchar(c)) {
                ec = bh::error::bad_field; // whitespace before the colon too (RFC 9112, 5.1)
                return;
            }
            break;
        case header_part::field_value:
            if (c == '\r') {
                header_ = header_part::field_lf;
            } else if (c == '\n') {
                ec = bh::error::bad_line_ending;
                return;
            } else if (control(c)) {
                ec = bh::error::bad_value;
                return;
            }
            break;
        case header_part::line_lf:
        case header_part::field_lf:
        case header_part::end_lf:
            if (c != '\n') {
                ec = bh::error::bad_line_ending;
                return;
            }
            header_ = header_ == header_part::end_lf ? header_part::done : header_part::field_start;
            break;
        case header_part::done:
            break;
        }
    }
}

void request_parser::check_chunk_bytes(const char* data, std::size_t size,
                                       boost::system::error_code& ec) {
    // chunk-size [ chunk-ext ] CRLF, and after the last chunk the trailer section and its empty
    // line (RFC 9112, 7.1). Beast needs each of these whole before it looks, so a bare LF would
    // otherwise wait for the body timeout (bare LF is refused everywhere else: here too).
    const auto size_digit = [this](unsigned char c) {
        if (c != '0' || size_digits_ != 0) ++size_digits_;
        return size_digits_ <= 16; // beyond 64 bits
    };
    for (; chunk_scanned_ < size && chunk_ != chunk_part::done; ++chunk_scanned_) {
        const auto c = static_cast<unsigned char>(data[chunk_scanned_]);
        switch (chunk_) {
        case chunk_part::start:
        case chunk_part::size_first:
            if (chunk_ == chunk_part::start && c == '\r') {
                chunk_ = chunk_part::data_lf;
                break;
            }
            size_digits_ = 0;
            quoted_ = false;
            escaped_ = false;
            if (!hexdig(c) || !size_digit(c)) {
                ec = c == '\n' ? bh::error::bad_line_ending : bh::error::bad_chunk;
                return;
            }
            chunk_ = chunk_part::size;
            break;
        case chunk_part::data_lf:
            if (c != '\n') {
                ec = bh::error::bad_chunk;
                return;
            }
            chunk_ = chunk_part::size_first;
            break;
        case chunk_part::size:
            if (hexdig(c)) {
                if (!size_digit(c)) {
                    ec = bh::error::bad_chunk;
                    return;
                }
                break;
            }
            chunk_ = chunk_part::extensions;
            [[fallthrough]];
        case chunk_part::extensions:
            // Beast reads a quoted string up to its closing DQUOTE, past the line's end and
            // into the data if need be: a line ending inside one would wait for the timeout.
            if (c == '\r' && !quoted_) {
                chunk_ = chunk_part::line_lf;
            } else if (c == '\n') {
                ec = bh::error::bad_line_ending;
                return;
            } else if (control(c) || c == '\r') {
                ec = bh::error::bad_chunk_extension;
                return;
            } else if (escaped_) {
                escaped_ = false;
            } else if (quoted_ && c == '\\') {
                escaped_ = true;
            } else if (c == '"') {
                quoted_ = !quoted_;
            }
            break;
        case chunk_part::line_lf:
            if (c != '\n') {
                ec = bh::error::bad_line_ending;
                return;
            }
            // After a chunk with data, Beast takes the line and what follows is data.
            chunk_ = size_digits_ == 0 ? chunk_part::trailer_start : chunk_part::done;
            break;
        case chunk_part::trailer_start:
            if (c == '\r') {
                chunk_ = chunk_part::end_lf;
                break;
            }
            if (c == ' ' || c == '\t') {
                ec = request_error::obs_fold;
                return;
            }
            chunk_ = chunk_part::trailer;
            [[fallthrough]];
        case chunk_part::trailer:
            if (c == '\r') {
                chunk_ = chunk_part::trailer_lf;
            } else if (c == '\n') {
                ec = bh::error::bad_line_ending;
                return;
            } else if (control(c)) {
                ec = bh::error::bad_value;
                return;
            }
            break;
        case chunk_part::trailer_lf:
        case chunk_part::end_lf:
            if (c != '\n') {
                ec = bh::error::bad_line_ending;
                return;
            }
            chunk_ = chunk_ == chunk_part::end_lf ? chunk_part::done : chunk_part::trailer_start;
            break;
        case chunk_part::done:
            break;
        }
    }
}

bool request_parser::header_present(const char* data, std::size_t size,
                                    boost::system::error_code& ec) {
    // Beast parses and consumes the request line and each whole field line as soon as they
    // arrive, and applies its header limit to one call's bytes. Give it the header only once it
    // is all here: then nothing of it is consumed before, the limit covers all of it, and it is
    // contiguous at `data` (for the obs-fold scan, and for the session to tell 414 from 431).
    // The empty line may follow a bare LF too, so that Beast sees, and refuses, such a header.
    const std::size_t window = std::min(size, max_header_bytes_);
    for (std::size_t at = scanned_; at < window; ++at) {
        const auto* lf = static_cast<const char*>(std::memchr(data + at, '\n', window - at));
        if (lf == nullptr) break;
        at = static_cast<std::size_t>(lf - data);
        if ((at + 1 < window && data[at + 1] == '\n') ||
            (at + 2 < window && data[at + 1] == '\r' && data[at + 2] == '\n'))
            return true;
    }
    scanned_ = window < 2 ? 0 : window - 2; // an empty line may yet start in the last two bytes
    ec = size >= max_header_bytes_ ? bh::error::header_limit : bh::error::need_more;
    return false;
}

std::size_t request_parser::put_raw(const char* data, std::size_t size,
                                    boost::system::error_code& ec) {
    raw_ = data;
    raw_size_ = size;
    const std::size_t n = put(boost::asio::const_buffer(data, size), ec);
    raw_ = nullptr;
    return n;
}

std::size_t request_parser::retry_version(const char* data, std::size_t size,
                                          boost::system::error_code& ec) {
    // Beast refuses every version but 1.0 and 1.1 as malformed (400), before on_request_impl.
    // A well-formed one is either a later HTTP/1 minor version, served as 1.1 (RFC 9110, 2.5),
    // or another major version (505). The method and target parsed, so the version follows
    // the second space.
    const std::string_view raw(data, std::min(size, max_header_bytes_));
    const auto eol = raw.find('\n');
    const auto sp = raw.find(' ', raw.find(' ') + 1);
    if (eol == std::string_view::npos || sp >= eol) return 0;
    const auto v = raw.substr(sp + 1, eol + 1 - (sp + 1));
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (v.size() != 10 || v.substr(0, 5) != "HTTP/" || !digit(v[5]) || v[6] != '.' ||
        !digit(v[7]) || v.substr(8) != "\r\n")
        return 0;
    if (v[5] != '1') {
        ec = request_error::version_not_supported;
        return 0;
    }
    // Beast's state is as before the call (it fails before taking anything in): parse a copy
    // of the header that says 1.1. Only strings copied out of it outlive the call.
    std::string copy(raw);
    copy[sp + 1 + 7] = '1';
    ec = {};
    return put_raw(copy.data(), copy.size(), ec);
}

void request_parser::on_request_impl(bh::verb method, boost::beast::string_view,
                                     boost::beast::string_view target_sv, int version,
                                     boost::system::error_code& ec) {
    const std::string_view target(target_sv.data(), target_sv.size());
    head_.method = method;
    // HTTP/1.x with a minor version above 1 is served as 1.1 (RFC 9110, 2.5); others are not.
    if (version / 10 != 1) {
        ec = request_error::version_not_supported;
        return;
    }
    head_.version = version == 10 ? 10 : 11;

    if (method == bh::verb::connect) {
        // CONNECT takes the authority-form, host ":" port, and only it does (RFC 9112, 3.2.3).
        // This server is no proxy: 501, a method it does not implement at all (RFC 9110,
        // 9.3.6 and 15.6.2), rather than 405, which says another resource might allow it.
        const auto colon = target.rfind(':');
        const auto bracket = target.rfind(']');
        const bool authority_form =
            colon != std::string_view::npos && colon + 1 < target.size() && target.front() != '/' &&
            (bracket == std::string_view::npos || colon > bracket) && valid_host(target);
        ec = authority_form ? request_error::method_not_implemented : request_error::bad_target;
        return;
    }

    if (target == "*") {
        if (method != bh::verb::options) ec = request_error::bad_target;
        head_.target = target;
        return;
    }
    if (!target.empty() && target.front() == '/') {
        head_.target = target;
        return;
    }
    // absolute-form: scheme "://" authority path-abempty [ "?" query ]
    const auto sep = target.find("://");
    if (sep == std::string_view::npos || (!boost::beast::iequals(target.substr(0, sep), "http") &&
                                          !boost::beast::iequals(target.substr(0, sep), "https"))) {
        ec = request_error::bad_target;
        return;
    }
    auto rest = target.substr(sep + 3);
    const auto path_at = rest.find_first_of("/?");
    const auto authority = rest.substr(0, path_at);
    if (authority.empty() || authority.find('@') != std::string_view::npos ||
        !valid_host(authority)) {
        ec = request_error::bad_target;
        return;
    }
    head_.host = authority;
    absolute_form_ = true;
    if (path_at == std::string_view::npos) {
        head_.target = "/";
    } else if (rest[path_at] == '?') {
        head_.target = "/";
        head_.target += rest.substr(path_at);
    } else {
        head_.target = rest.substr(path_at);
    }
}

void request_parser::on_field_impl(bh::field name, boost::beast::string_view,
                                   boost::beast::string_view value_sv,
                                   boost::system::error_code& ec) {
    // Beast hands trailer fields (after a chunked body) here too. They are not header fields:
    // discard them (RFC 9110, 6.5.1), so a trailing Host or Expect changes nothing.
    if (is_header_done()) return;
    const std::string_view value(value_sv.data(), value_sv.size());
    switch (name) {
    case bh::field::host:
        // An empty Host is accepted: RFC 9112 (3.3) lets a server either reject a request
        // whose target URI has an empty authority or apply a default one, and this server
        // serves the same resources whatever the Host (nginx rejects it).
        if (++host_count_ > 1) {
            ec = request_error::duplicate_host;
            return;
        }
        if (!valid_host(value)) {
            ec = request_error::bad_host;
            return;
        }
        if (!absolute_form_) head_.host = value; // the target's authority wins (RFC 9112, 3.2.2)
        return;
    case bh::field::transfer_encoding:
        on_transfer_encoding(value, ec);
        return;
    case bh::field::referer:
        head_.referer = value;
        return;
    case bh::field::user_agent:
        head_.user_agent = value;
        return;
    case bh::field::expect:
        if (boost::beast::iequals(trim_ows(value), "100-continue")) {
            // An HTTP/1.0 client never gets a 1xx: ignore its expectation (RFC 9110, 10.1.1).
            head_.expect_continue = head_.version == 11;
        } else {
            ec = request_error::expectation_failed;
        }
        return;
    default:
        return;
    }
}

void request_parser::on_transfer_encoding(std::string_view value, boost::system::error_code& ec) {
    if (head_.version == 10) {
        ec = request_error::transfer_encoding_in_http10;
        return;
    }
    // The list must end in chunked (else the body length is unknowable: 400); any other coding
    // is one this server does not decode (501).
    bool unsupported = false;
    std::string_view last;
    while (!value.empty()) {
        const auto comma = value.find(',');
        auto coding = trim_ows(value.substr(0, comma));
        coding = trim_ows(coding.substr(0, coding.find(';')));
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
        if (coding.empty()) continue;
        if (!last.empty() && boost::beast::iequals(last, "chunked")) {
            ec = request_error::final_coding_not_chunked; // chunked applied more than once
            return;
        }
        last = coding;
        unsupported |= !boost::beast::iequals(coding, "chunked");
    }
    if (!boost::beast::iequals(last, "chunked")) {
        ec = request_error::final_coding_not_chunked;
    } else if (unsupported) {
        ec = request_error::unsupported_transfer_coding;
    }
}

void request_parser::on_header_impl(boost::system::error_code& ec) {
    if (head_.version == 11 && host_count_ == 0) {
        ec = request_error::missing_host;
        return;
    }
    // Beast unfolds obs-fold silently; RFC 9112 (5.2) has a server reject it. The header is
    // complete and contiguous at raw_, so look for a line that starts with SP or HTAB.
    const std::string_view raw(raw_, raw_size_);
    const auto end = raw.find("\r\n\r\n");
    for (auto at = raw.find('\n'); at < end; at = raw.find('\n', at + 1)) {
        const char next = raw[at + 1];
        if (next == ' ' || next == '\t') {
            ec = request_error::obs_fold;
            return;
        }
    }
}

std::size_t request_parser::take_body(std::string_view bytes, boost::system::error_code& ec) {
    const std::size_t taken = body_.on_body(bytes);
    body_bytes_ += taken;
    // Taking fewer pauses the parse here. Beast would offer the rest again at once in its eager
    // loop (and spin), so stop it with need_more: the caller feeds the rest later.
    if (taken < bytes.size()) ec = bh::error::need_more;
    return taken;
}

std::size_t request_parser::on_body_impl(boost::beast::string_view body,
                                         boost::system::error_code& ec) {
    return take_body(std::string_view(body.data(), body.size()), ec);
}

void request_parser::on_chunk_header_impl(std::uint64_t size,
                                          boost::beast::string_view extensions_sv,
                                          boost::system::error_code& ec) {
    // Beast takes any byte but DQUOTE inside a quoted chunk-ext-val, a bare LF or NUL too,
    // where a proxy in front may end the line at the LF: the two would then disagree on where
    // the chunk data starts, and a request could hide in a body. qdtext and quoted-pair allow
    // HTAB and no other control byte (RFC 9110, 5.6.4).
    const std::string_view extensions(extensions_sv.data(), extensions_sv.size());
    if (std::any_of(extensions.begin(), extensions.end(),
                    [](char c) { return control(static_cast<unsigned char>(c)); })) {
        ec = bh::error::bad_chunk_extension;
        return;
    }
    // Extensions are neither header nor body to Beast: bound them by the header limit, for
    // the whole request.
    extension_bytes_ += extensions.size();
    if (extension_bytes_ > max_header_bytes_) {
        ec = request_error::chunk_extensions_too_large;
        return;
    }
    chunk_left_ = size;
    if (size != 0) return;
    // The last chunk: Beast parses the trailer section, which it has whole and right after
    // this line in the bytes being put, next, and unfolds obs-fold there as in the header.
    const char* const after = extensions.data() + extensions.size();
    const std::string_view rest(after, static_cast<std::size_t>(raw_ + raw_size_ - after));
    const auto end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos) return;
    for (auto at = rest.find('\n'); at < end; at = rest.find('\n', at + 1)) {
        if (rest[at + 1] == ' ' || rest[at + 1] == '\t') {
            ec = request_error::obs_fold;
            return;
        }
    }
}

std::size_t request_parser::on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                               boost::system::error_code& ec) {
    const std::size_t taken = take_body(std::string_view(body.data(), body.size()), ec);
    chunk_left_ = remain - taken;
    return taken;
}

} // namespace tarry::http

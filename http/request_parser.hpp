#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/verb.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace tarry::http {

/// What a handler needs of a request. The strings keep their capacity from one request to the
/// next, so a connection parses request after request without allocating.
struct request_head {
    boost::beast::http::verb method = boost::beast::http::verb::unknown;
    int version = 11;
    std::string target;     ///< origin-form path and query ("*" for OPTIONS *)
    std::string host;       ///< the Host field, or the authority of an absolute-form target
    std::string referer;    ///< the Referer field, for the access log ("" if none)
    std::string user_agent; ///< the User-Agent field, for the access log ("" if none)
    bool expect_continue = false;
    /// The whole header block (request line through the empty line), validated; only while
    /// the handler's on_request() runs. find_field() reads fields out of it.
    std::string_view header;

    void clear() noexcept {
        method = boost::beast::http::verb::unknown;
        version = 11;
        target.clear();
        host.clear();
        referer.clear();
        user_agent.clear();
        expect_continue = false;
        header = {};
    }
};

/// The value of the first field called `name` (case-insensitive) in a validated header block,
/// without surrounding whitespace; empty if there is none.
std::string_view find_field(std::string_view header, std::string_view name) noexcept;

/// Calls f(name, value) for every field line of a validated header block, in order.
template <class F> void for_each_field(std::string_view header, F&& f) {
    auto at = header.find('\n'); // past the request line
    while (at != std::string_view::npos && at + 1 < header.size()) {
        const auto start = at + 1;
        at = header.find('\n', start);
        if (at == std::string_view::npos) break;
        std::string_view line = header.substr(start, at - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break;
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        f(line.substr(0, colon), value);
    }
}

/// Where a request body goes as it is parsed.
class request_body_sink {
public:
    /// Returns how many of `bytes` were taken; fewer pauses the parser (need_more) there.
    virtual std::size_t on_body(std::string_view bytes) = 0;

protected:
    request_body_sink() = default;
    request_body_sink(const request_body_sink&) = default;
    request_body_sink& operator=(const request_body_sink&) = default;
    ~request_body_sink() = default;
};

/// Beast's request parser with the checks RFC 9112 asks of a server that Beast leaves to its
/// user (Host, obs-fold, transfer-codings, versions), recording only a request_head and
/// handing the body to a sink as it streams past. It stops after the header (not eager) so the
/// request can be routed before any body byte is taken; set eager(true) after that. No per-field
/// allocation: Beast's own request_parser would build a basic_fields node for every header.
///
/// Beast looks at a line only once it has all of it, and at the header only once the empty
/// line is here, so on its own a malformed request would hold a connection until the header
/// timeout. The header is therefore checked byte by byte as it arrives (the request line's
/// method token of at most 32 bytes (501 past it), a target in RFC 3986's character set plus
/// the few that browsers leave unencoded, "HTTP/" DIGIT "." DIGIT, CRLF; then
/// each field line's token, colon and value without control bytes, CRLF, no obs-fold), and so
/// are the bytes of a chunk-size line or trailer section Beast is waiting on: the first byte
/// that cannot begin a valid request is refused at once.
///
/// Where Beast accepts bytes RFC 9112 forbids, this class refuses them: control bytes (even
/// a bare LF) in a quoted chunk extension, obs-fold in trailers, an unbounded total of chunk
/// extensions. What Beast already refuses and this class relies on: control bytes and bare
/// CR or LF in field values and trailers, a chunk-size that is empty, signed, "0x"-prefixed,
/// padded with whitespace or beyond 64 bits, chunk data not followed by CRLF, and
/// Content-Length or Transfer-Encoding among the trailers. Accepted on purpose: obs-text
/// (bytes >= 0x80) in field values and quoted extensions (RFC 9110, 5.5 and 5.6.4), and a
/// Connection field among the trailers, which can only make Beast close after the response.
class request_parser final : public boost::beast::http::basic_parser<true> {
public:
    /// `head` is filled as the request line and fields arrive; body bytes go to `body`.
    request_parser(request_head& head, std::size_t max_header_bytes, std::uint64_t max_body_bytes,
                   request_body_sink& body);

    /// Feeds [data, data + size), which must begin with the first byte of the request: no
    /// header byte is consumed until the whole header is present. Returns bytes consumed.
    std::size_t feed(const char* data, std::size_t size, boost::system::error_code& ec);

    [[nodiscard]] std::uint64_t body_bytes() const noexcept { return body_bytes_; }

private:
    void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                         boost::beast::string_view target, int version,
                         boost::system::error_code& ec) override;
    void on_response_impl(int, boost::beast::string_view, int,
                          boost::system::error_code&) override {}
    void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                       boost::beast::string_view value, boost::system::error_code& ec) override;
    void on_header_impl(boost::system::error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>&,
                           boost::system::error_code&) override {}
    std::size_t on_body_impl(boost::beast::string_view body, boost::system::error_code&) override;
    void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                              boost::system::error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                   boost::system::error_code&) override;
    void on_finish_impl(boost::system::error_code&) override {}

    void on_transfer_encoding(std::string_view value, boost::system::error_code& ec);
    void check_header(const char* data, std::size_t size, boost::system::error_code& ec);
    void check_chunk_bytes(const char* data, std::size_t size, boost::system::error_code& ec);
    bool header_present(const char* data, std::size_t size, boost::system::error_code& ec);
    std::size_t put_raw(const char* data, std::size_t size, boost::system::error_code& ec);
    std::size_t retry_version(const char* data, std::size_t size, boost::system::error_code& ec);

    std::size_t take_body(std::string_view bytes, boost::system::error_code& ec);

    request_head& head_;
    request_body_sink& body_;
    std::size_t max_header_bytes_;
    std::size_t scanned_ = 0;   // header bytes searched for the empty line, less a lookahead
    const char* raw_ = nullptr; // start of the request while feed() runs
    std::size_t raw_size_ = 0;
    unsigned host_count_ = 0;
    bool absolute_form_ = false;
    std::uint64_t body_bytes_ = 0;

    // The header as checked so far: the part being read, and how many bytes of it.
    enum class header_part : std::uint8_t {
        method,
        target,
        version,     // and the CR after it
        line_lf,     // the LF ending the request line
        field_start, // a field line, or the empty line ending the header
        field_name,
        field_value, // up to the CR
        field_lf,
        end_lf, // the LF of the empty line
        done,
    };
    header_part header_ = header_part::method;
    std::size_t header_scanned_ = 0;
    std::size_t part_bytes_ = 0;

    // The bytes Beast left unconsumed at a chunk header, as checked so far. They start where
    // the previous chunk's data ended; any byte Beast consumes starts them again.
    enum class chunk_part : std::uint8_t {
        start,         // the CR of the previous chunk's data CRLF, or the first size digit
        data_lf,       // the LF of that CRLF
        size_first,    // the first size digit
        size,          // more size digits
        extensions,    // up to the CR
        line_lf,       // the LF ending the chunk-size line
        trailer_start, // a trailer field line, or the final empty line
        trailer,       // a trailer field line, up to its CR
        trailer_lf,    // the LF ending it
        end_lf,        // the LF of the final empty line
        done,
    };
    chunk_part chunk_ = chunk_part::start;
    std::size_t chunk_scanned_ = 0;
    unsigned size_digits_ = 0; // significant hex digits of the chunk size
    bool quoted_ = false;      // inside a quoted chunk-ext-val
    bool escaped_ = false;     // after its backslash
    std::uint64_t extension_bytes_ = 0;
    std::uint64_t chunk_left_ = 0; // data bytes of the current chunk not yet taken
};

/// Whether `host` is a valid Host field value: reg-name, IPv4 or [IP-literal], optional :port.
bool valid_host(std::string_view host) noexcept;

} // namespace tarry::http

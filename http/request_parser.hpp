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
    std::string target; ///< origin-form path and query ("*" for OPTIONS *)
    std::string host;   ///< the Host field, or the authority of an absolute-form target
    bool expect_continue = false;
    /// The whole header block (request line through the empty line), validated; only while
    /// the handler's on_request() runs. find_field() reads fields out of it.
    std::string_view header;

    void clear() noexcept {
        method = boost::beast::http::verb::unknown;
        version = 11;
        target.clear();
        host.clear();
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
    void on_chunk_header_impl(std::uint64_t, boost::beast::string_view,
                              boost::system::error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                   boost::system::error_code&) override;
    void on_finish_impl(boost::system::error_code&) override {}

    void on_transfer_encoding(std::string_view value, boost::system::error_code& ec);
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
};

/// Whether `host` is a valid Host field value: reg-name, IPv4 or [IP-literal], optional :port.
bool valid_host(std::string_view host) noexcept;

} // namespace tarry::http

#pragma once

#include <boost/beast/http/basic_parser.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace tarry::upstream {

/// Where the body of an upstream response goes as it is parsed.
class response_body_sink {
public:
    virtual void on_response_body(std::string_view bytes) = 0;

protected:
    response_body_sink() = default;
    response_body_sink(const response_body_sink&) = default;
    response_body_sink& operator=(const response_body_sink&) = default;
    ~response_body_sink() = default;
};

/// Beast's response parser recording only the status and, once, a copy of the header block
/// (status line through the empty line): no per-field allocation, as http::request_parser.
/// Body bytes stream to a sink, de-chunked.
class response_parser final : public boost::beast::http::basic_parser<false> {
public:
    static constexpr std::size_t max_header_bytes = 64 * std::size_t{1024};

    explicit response_parser(response_body_sink& body);

    /// Feeds bytes; a header is consumed only once it is whole (kept in header()).
    std::size_t feed(const char* data, std::size_t size, boost::system::error_code& ec);

    [[nodiscard]] unsigned status() const noexcept { return status_; }
    [[nodiscard]] int version() const noexcept { return version_; }
    /// The header block, with every obs-fold replaced by spaces (unfold()).
    [[nodiscard]] std::string_view header() const noexcept { return header_; }

    /// Replaces each obs-fold (CRLF or LF, then SP or HTAB) of a header block with spaces, in
    /// place: a continuation line becomes part of the field it continues.
    static void unfold(std::string& header) noexcept;

private:
    void on_request_impl(boost::beast::http::verb, boost::beast::string_view,
                         boost::beast::string_view, int, boost::system::error_code&) override {}
    void on_response_impl(int code, boost::beast::string_view reason, int version,
                          boost::system::error_code& ec) override;
    void on_field_impl(boost::beast::http::field, boost::beast::string_view,
                       boost::beast::string_view, boost::system::error_code&) override {}
    void on_header_impl(boost::system::error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>&,
                           boost::system::error_code&) override {}
    std::size_t on_body_impl(boost::beast::string_view body, boost::system::error_code&) override;
    void on_chunk_header_impl(std::uint64_t, boost::beast::string_view,
                              boost::system::error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                   boost::system::error_code&) override;
    void on_finish_impl(boost::system::error_code&) override {}

    response_body_sink& body_;
    std::string header_;
    unsigned status_ = 0;
    int version_ = 11;
};

} // namespace tarry::upstream

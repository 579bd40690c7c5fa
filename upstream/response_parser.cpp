#include "response_parser.hpp"

#include <boost/beast/http/error.hpp>

namespace tarry::upstream {

response_parser::response_parser(response_body_sink& body) : body_(body) {
    header_limit(static_cast<std::uint32_t>(max_header_bytes));
    body_limit(boost::none); // the client's side bounds nothing: the body streams through
}

std::size_t response_parser::feed(const char* data, std::size_t size,
                                  boost::system::error_code& ec) {
    const bool had_header = is_header_done();
    const std::size_t n = put(boost::asio::buffer(data, size), ec);
    if (!had_header && is_header_done()) {
        // Beast parses a header only when it is whole, so these n bytes are all of it (a
        // response without a body may also have its end here: the header is still its start).
        std::string_view block(data, n);
        const auto end = block.find("\r\n\r\n");
        header_.assign(end == std::string_view::npos ? block : block.substr(0, end + 4));
        unfold(header_);
    }
    return n;
}

void response_parser::unfold(std::string& header) noexcept {
    // RFC 9112, 5.2: a proxy replaces each obs-fold (a line break followed by SP or HTAB) with
    // SP before interpreting or forwarding. Forwarded as received, a continuation line reads
    // as a field of its own to a lenient client: "X-A: a\r\n Transfer-Encoding: chunked" next
    // to a Content-Length is a response-splitting vector. Beast already read it as one value.
    for (std::size_t at = header.find('\n'); at != std::string::npos && at + 1 < header.size();
         at = header.find('\n', at + 1)) {
        if (header[at + 1] != ' ' && header[at + 1] != '\t') continue;
        header[at] = ' ';
        if (at > 0 && header[at - 1] == '\r') header[at - 1] = ' ';
        for (std::size_t ws = at + 1; ws < header.size() && header[ws] == '\t'; ++ws)
            header[ws] = ' ';
    }
}

void response_parser::on_response_impl(int code, boost::beast::string_view, int version,
                                       boost::system::error_code&) {
    status_ = static_cast<unsigned>(code);
    version_ = version;
}

std::size_t response_parser::on_body_impl(boost::beast::string_view body,
                                          boost::system::error_code&) {
    body_.on_response_body(std::string_view(body.data(), body.size()));
    return body.size();
}

std::size_t response_parser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                                boost::system::error_code&) {
    body_.on_response_body(std::string_view(body.data(), body.size()));
    return body.size();
}

} // namespace tarry::upstream

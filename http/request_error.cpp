#include "request_error.hpp"

#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <boost/beast/http/error.hpp>

#include <string>

namespace tarry::http {
namespace {

class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "tarry.http.request"; }
    std::string message(int ev) const override {
        switch (static_cast<request_error>(ev)) {
        case request_error::missing_host:
            return "missing Host";
        case request_error::duplicate_host:
            return "duplicate Host";
        case request_error::bad_host:
            return "invalid Host";
        case request_error::bad_target:
            return "invalid request-target";
        case request_error::obs_fold:
            return "obsolete line folding";
        case request_error::transfer_encoding_in_http10:
            return "Transfer-Encoding in HTTP/1.0";
        case request_error::final_coding_not_chunked:
            return "final transfer-coding is not chunked";
        case request_error::unsupported_transfer_coding:
            return "unsupported transfer-coding";
        case request_error::version_not_supported:
            return "HTTP version not supported";
        case request_error::expectation_failed:
            return "unsupported expectation";
        case request_error::method_not_implemented:
            return "method not implemented";
        case request_error::chunk_extensions_too_large:
            return "chunk extensions too large";
        }
        return "unknown request error";
    }
};

} // namespace

const boost::system::error_category& request_error_category() noexcept {
    static const category instance;
    return instance;
}

unsigned status_for(const boost::system::error_code& ec, bool line_complete) noexcept {
    namespace bh = boost::beast::http;
    if (ec == bh::error::header_limit) return line_complete ? 431 : 414;
    // Extensions are body bytes the body limit does not count; Node.js answers 413 too.
    if (ec == bh::error::body_limit || ec == request_error::chunk_extensions_too_large) return 413;
    if (ec == request_error::unsupported_transfer_coding ||
        ec == request_error::method_not_implemented)
        return 501;
    if (ec == request_error::version_not_supported) return 505;
    if (ec == request_error::expectation_failed) return 417;
    return 400;
}

} // namespace tarry::http

#pragma once

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace tarry::http {

/// Request faults Beast's parser lets through and a strict server must still refuse.
enum class request_error {
    missing_host = 1,
    duplicate_host,
    bad_host,
    bad_target,
    obs_fold,
    transfer_encoding_in_http10,
    final_coding_not_chunked,
    unsupported_transfer_coding,
    version_not_supported,
    expectation_failed,
    method_not_implemented,
    chunk_extensions_too_large,
};

const boost::system::error_category& request_error_category() noexcept;

inline boost::system::error_code make_error_code(request_error e) noexcept {
    return {static_cast<int>(e), request_error_category()};
}

/// The status a server answers a request that failed to parse with `ec`: 400, 413, 414, 431,
/// 417, 501 or 505. `line_complete` tells 414 (request line too long) from 431.
unsigned status_for(const boost::system::error_code& ec, bool line_complete) noexcept;

} // namespace tarry::http

template <>
struct boost::system::is_error_code_enum<tarry::http::request_error> : std::true_type {};

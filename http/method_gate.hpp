#pragma once

#include <string_view>

namespace tarry::http {

class exchange;

/// The methods tarry's own handlers allow, as the Allow field of a 405 or an OPTIONS answer.
inline constexpr std::string_view allow_field = "Allow: GET, HEAD, OPTIONS\r\n";

/// For handlers that serve GET and HEAD only: answers OPTIONS (200 with Allow), a method this
/// server does not know (501) and any other method (405 with Allow). Returns whether it
/// answered; if not, the request is a GET or a HEAD.
bool answer_unless_get(exchange& ex);

} // namespace tarry::http

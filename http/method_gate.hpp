#pragma once

namespace tarry::http {

class exchange;

/// For handlers that serve GET and HEAD only: answers OPTIONS (200 with Allow), a method this
/// server does not know (501) and any other method (405 with Allow). Returns whether it
/// answered; if not, the request is a GET or a HEAD.
bool answer_unless_get(exchange& ex);

} // namespace tarry::http

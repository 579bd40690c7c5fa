#include "method_gate.hpp"

#include "session.hpp"

namespace tarry::http {
namespace bh = boost::beast::http;

bool answer_unless_get(exchange& ex) {
    switch (ex.request().method) {
    case bh::verb::get:
    case bh::verb::head:
        return false;
    case bh::verb::options: {
        response_head head;
        head.extra_fields = allow_field;
        ex.respond(head);
        ex.finish();
        return true;
    }
    case bh::verb::unknown:
        // A method this server does not recognise (RFC 9110, 9.1 and 15.6.2); 405 is for one
        // it knows but the resource does not allow.
        ex.respond_text(501, "Not Implemented\n");
        return true;
    default:
        ex.respond_text(405, "Method Not Allowed\n", allow_field);
        return true;
    }
}

} // namespace tarry::http

#include "hello_handler.hpp"

#include "method_gate.hpp"
#include "session.hpp"

namespace tarry::http {

void hello_handler::on_request(exchange& ex) {
    if (answer_unless_get(ex)) return;
    ex.respond_text(200, "Hello, World!");
}

} // namespace tarry::http

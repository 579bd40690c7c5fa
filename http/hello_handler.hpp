#pragma once

#include "handler.hpp"

namespace tarry::http {

/// The built-in answer: "Hello, World!" to GET and HEAD, for any path.
class hello_handler final : public handler {
public:
    void on_request(exchange& ex) override;
};

} // namespace tarry::http

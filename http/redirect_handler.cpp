#include "redirect_handler.hpp"

#include "exchange.hpp"
#include "field_writer.hpp"
#include "host_names.hpp"

#include <utility>

namespace tarry::http {

redirect_handler::redirect_handler(std::string location, unsigned status, std::string default_host)
    : location_(std::move(location)), default_host_(std::move(default_host)), status_(status) {}

std::string redirect_handler::expand(std::string_view location, bool secure, std::string_view host,
                                     std::string_view uri) {
    std::string out;
    out.reserve(location.size() + host.size() + uri.size());
    while (!location.empty()) {
        const std::size_t open = location.find('{');
        out.append(location.substr(0, open));
        if (open == std::string_view::npos) break;
        location.remove_prefix(open);
        if (location.starts_with("{scheme}")) {
            out.append(secure ? "https" : "http");
            location.remove_prefix(8);
        } else if (location.starts_with("{host}")) {
            out.append(host);
            location.remove_prefix(6);
        } else if (location.starts_with("{uri}")) {
            out.append(uri);
            location.remove_prefix(5);
        } else {
            out.push_back('{'); // not a placeholder (the configuration refuses those)
            location.remove_prefix(1);
        }
    }
    return out;
}

void redirect_handler::on_request(exchange& ex) {
    const request_head& req = ex.request();
    const std::string_view host = req.host.empty() ? default_host_ : host_name(req.host);
    thread_local std::string fields;
    fields.clear();
    append_field(fields, "Location", expand(location_, ex.secure(), host, req.target));
    std::string body(reason(status_));
    body.push_back('\n');
    ex.respond_text(status_, body, fields);
}

void status_handler::on_request(exchange& ex) {
    std::string body(reason(status_));
    body.push_back('\n');
    ex.respond_text(status_, body);
}

} // namespace tarry::http

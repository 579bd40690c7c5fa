#pragma once

#include "handler.hpp"

#include <string>
#include <string_view>

namespace tarry::http {

/// Answers every request with a redirect (nginx's `return 301 URL`): the Location built from a
/// template whose {scheme} ("http" or "https"), {host} (the request's Host without its port)
/// and {uri} (the path and query as the client sent them) are filled in per request.
class redirect_handler final : public handler {
public:
    /// `status`: 301, 302, 303, 307 or 308 (the configuration checks it). `default_host`: {host}
    /// for a request without a Host (HTTP/1.0).
    redirect_handler(std::string location, unsigned status, std::string default_host = "localhost");

    void on_request(exchange& ex) override;

    /// The Location for a request: `location` with its placeholders filled in.
    [[nodiscard]] static std::string expand(std::string_view location, bool secure,
                                            std::string_view host, std::string_view uri);

private:
    std::string location_;
    std::string default_host_;
    unsigned status_;
};

/// Answers every request with a fixed status and its reason as a text body: the answer to a
/// Host no site names (421 Misdirected Request, or 404), and a site's requests no route takes.
class status_handler final : public handler {
public:
    explicit status_handler(unsigned status) noexcept : status_(status) {}
    void on_request(exchange& ex) override;

private:
    unsigned status_;
};

} // namespace tarry::http

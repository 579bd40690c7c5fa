#pragma once

#include "handler.hpp"
#include "host_names.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::http {

/// A page that replaces the server's own answer of one status (nginx's `error_page`).
struct error_page {
    unsigned status = 0;
    std::string content_type;
    std::string body; ///< read when the router is built: no file is opened per request
};

/// What a route changes around its handler's answers, whatever the handler (files, a proxy, a
/// redirect) and whatever the protocol: none of it needs the handler's help.
struct route_options {
    /// "Name: value\r\n" lines added to every answer, errors included (nginx's `add_header ...
    /// always`): HSTS, security headers, Cache-Control.
    std::string add_fields;
    /// Field names taken out of every answer before add_fields go in: those the route hides
    /// (`hide_headers`, nginx's `proxy_hide_header`) and those add_fields replace.
    std::vector<std::string> remove_fields;
    /// Taken off the front of the target before the handler sees it (nginx's `proxy_pass
    /// http://app/;` in `location /api/`): "/api/x?q" goes on as "/x?q".
    std::string strip_prefix;
    /// A GET or HEAD the handler answers 404 is answered for this target instead (a single-page
    /// application's "/index.html": nginx's `try_files $uri /index.html`).
    std::string fallback;
    /// The server's own answers of these statuses replaced (and a proxied response's too with
    /// intercept_upstream: its body is then read and dropped).
    std::vector<error_page> error_pages;
    bool intercept_upstream = false; ///< nginx's proxy_intercept_errors
    /// Every request that did not come over TLS is redirected to this https:// Location
    /// template (see redirect_handler) with 301; empty: none.
    std::string plain_redirect;
    /// The certificate each server name gets by SNI (absent: the default, 0): a request over
    /// TLS whose Host gets another certificate than its connection was given is answered 421
    /// Misdirected Request (RFC 9110 15.5.20), so that a client reusing a connection for
    /// another name (HTTP/2) asks again on one of its own. Null: one certificate, no check.
    std::shared_ptr<const name_table> certificates;

    [[nodiscard]] bool empty() const noexcept {
        return add_fields.empty() && remove_fields.empty() && strip_prefix.empty() &&
               fallback.empty() && error_pages.empty() && plain_redirect.empty() && !certificates;
    }
};

/// A route's handler with its route_options applied around it. Each request is given to the
/// inner handler through a route_exchange (route_handler.cpp) that edits the answer on its way
/// out, so the handlers know nothing of the options; a route without options is not wrapped
/// and costs nothing.
///
/// The route_exchange is allocated per request and lives as long as the answer: freed when
/// on_request() returns if the answer was given, else when the deferred answer finishes,
/// aborts or is aborted by the client.
class redirect_handler;
class status_handler;

class route_handler final : public handler {
public:
    route_handler(std::shared_ptr<handler> inner, route_options options);
    ~route_handler() override;

    void on_request(exchange& ex) override;
    void stop() noexcept override { inner_->stop(); }

    [[nodiscard]] const route_options& options() const noexcept { return options_; }
    [[nodiscard]] handler& inner() const noexcept { return *inner_; }

private:
    std::shared_ptr<handler> inner_;
    route_options options_;
    std::unique_ptr<redirect_handler> to_https_;  ///< plain requests' answer, if they get one
    std::unique_ptr<status_handler> misdirected_; ///< 421, with options_.certificates
    bool edits_ = false; ///< options other than the redirect and the certificate check
};

} // namespace tarry::http

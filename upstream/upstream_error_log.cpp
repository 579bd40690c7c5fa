#include "upstream_error_log.hpp"

#include <boost/beast/http/verb.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iterator>
#include <utility>

namespace tarry::upstream {

std::optional<std::uint64_t> error_rate_limit::admit(std::string_view server, failure_kind kind,
                                                     std::int64_t second) {
    const std::lock_guard lock(mu_);
    auto at = by_server_.find(server);
    if (at == by_server_.end()) at = by_server_.emplace(std::string(server), slots{}).first;
    slot& s = at->second[static_cast<std::size_t>(kind)];
    if (s.second == second) {
        ++s.refused;
        return std::nullopt;
    }
    s.second = second;
    return std::exchange(s.refused, 0);
}

namespace {

/// A client's bytes in a log line: printable ASCII as is, the rest as \xHH, at most `limit`
/// bytes shown (a request target may be kilobytes of anything the parser accepts).
void append_escaped(std::string& out, std::string_view text, std::size_t limit = 512) {
    for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
            fmt::format_to(std::back_inserter(out), "\\x{:02X}", c);
        else
            out += static_cast<char>(c);
    }
    if (text.size() > limit) out += "...";
}

error_rate_limit& shared_limit() {
    static error_rate_limit limit;
    return limit;
}

} // namespace

std::string describe(const upstream_failure& f) {
    std::string out = "upstream ";
    out += f.reason;
    if (!f.during.empty()) {
        out += ' ';
        out += f.during;
    }
    out += ", client: ";
    out += f.client.empty() ? std::string_view("-") : f.client;
    if (f.request != nullptr) {
        out += ", request: \"";
        out += boost::beast::http::to_string(f.request->method);
        out += ' ';
        append_escaped(out, f.request->target);
        fmt::format_to(std::back_inserter(out), " HTTP/{}.{}\"", f.request->version / 10,
                       f.request->version % 10);
    }
    if (!f.server.empty()) {
        out += f.tls ? ", upstream: \"https://" : ", upstream: \"http://";
        out += f.server;
        if (f.request != nullptr) {
            if (f.server.starts_with("unix:")) out += ':'; // nginx's "http://unix:/a.sock:/x"
            append_escaped(out, f.request->target);
        } else {
            out += '/';
        }
        out += '"';
    }
    return out;
}

void log_failure(const upstream_failure& f) {
    const bool debug = spdlog::should_log(spdlog::level::debug);
    const auto second = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    const auto admitted = shared_limit().admit(f.server, f.kind, second);
    if (!admitted && !debug) return;
    const std::string line = describe(f);
    if (debug) spdlog::debug("{}", line);
    if (!admitted) return;
    if (*admitted == 0)
        spdlog::error("{}", line);
    else
        spdlog::error("{} ({} more like it since the last such line, not logged)", line, *admitted);
}

} // namespace tarry::upstream

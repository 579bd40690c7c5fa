#include "hop_by_hop.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <array>
#include <charconv>

namespace tarry::http {

bool hop_by_hop(std::string_view name) noexcept {
    static constexpr std::array<std::string_view, 9> names{
        "connection",        "keep-alive",     "te",    "trailer", "upgrade", "proxy-connection",
        "transfer-encoding", "content-length", "expect"};
    return std::any_of(names.begin(), names.end(),
                       [&](std::string_view n) { return boost::beast::iequals(n, name); });
}

bool listed_in(std::string_view connection, std::string_view name) noexcept {
    while (!connection.empty()) {
        const auto comma = connection.find(',');
        std::string_view token = connection.substr(0, comma);
        while (!token.empty() && (token.front() == ' ' || token.front() == '\t'))
            token.remove_prefix(1);
        while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
            token.remove_suffix(1);
        if (boost::beast::iequals(token, name)) return true;
        if (comma == std::string_view::npos) break;
        connection.remove_prefix(comma + 1);
    }
    return false;
}

long keep_alive_timeout(std::string_view value) noexcept {
    const auto at = value.find("timeout=");
    if (at == std::string_view::npos) return -1;
    long n = -1;
    const char* p = value.data() + at + 8;
    const auto r = std::from_chars(p, value.data() + value.size(), n);
    return r.ec == std::errc{} ? n : -1;
}

} // namespace tarry::http

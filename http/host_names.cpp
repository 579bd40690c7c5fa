#include "host_names.hpp"

#include <algorithm>
#include <array>

namespace tarry::http {
namespace {

constexpr std::size_t max_name = 255; // RFC 1035: a longer name names no site

char lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

} // namespace

std::string_view host_name(std::string_view host) noexcept {
    if (!host.empty() && host.front() == '[') {
        const std::size_t close = host.find(']');
        return close == std::string_view::npos ? host : host.substr(0, close + 1);
    }
    if (const std::size_t colon = host.rfind(':'); colon != std::string_view::npos)
        host = host.substr(0, colon);
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    return host;
}

bool name_table::valid(std::string_view name) noexcept {
    if (name.starts_with("*.")) name.remove_prefix(2);
    if (name.empty() || name.size() >= max_name || name.front() == '.' || name.back() == '.')
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '-' || c == '.';
    });
}

void name_table::add(std::string_view name, std::size_t value) {
    std::string key(name);
    std::transform(key.begin(), key.end(), key.begin(), lower);
    if (key.size() > 1 && key.back() == '.') key.pop_back();
    if (key.starts_with("*.")) wildcards_ = true;
    names_.emplace(std::move(key), value);
}

std::optional<std::size_t> name_table::find(std::string_view host) const noexcept {
    const std::string_view name = host_name(host);
    if (name.empty() || name.size() > max_name) return {};
    std::array<char, max_name> buffer;
    std::transform(name.begin(), name.end(), buffer.begin(), lower);
    const std::string_view exact(buffer.data(), name.size());
    if (const auto it = names_.find(exact); it != names_.end()) return it->second;
    if (!wildcards_) return {};
    const std::size_t dot = exact.find('.');
    if (dot == std::string_view::npos || dot == 0) return {};
    // The first label becomes "*": "*." written over its last byte and the dot.
    char* at = buffer.data() + dot - 1;
    at[0] = '*';
    const std::string_view wildcard(at, exact.size() - dot + 1);
    if (const auto it = names_.find(wildcard); it != names_.end()) return it->second;
    return {};
}

} // namespace tarry::http

#pragma once

#include <string_view>

namespace tarry::http {

/// `v` without the optional whitespace (spaces and tabs, RFC 9110 5.6.3) around it.
constexpr std::string_view trim_ows(std::string_view v) noexcept {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
        v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
        v.remove_suffix(1);
    return v;
}

} // namespace tarry::http

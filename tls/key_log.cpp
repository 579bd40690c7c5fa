#include "key_log.hpp"

namespace tarry::tls {
namespace {

int hex(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace

std::uint8_t key_log_secret(std::string_view line, std::uint8_t* out) noexcept {
    const auto sp = line.rfind(' ');
    if (sp == std::string_view::npos) return 0;
    const std::string_view h = line.substr(sp + 1);
    if (h.size() % 2 != 0 || h.size() > 96) return 0;
    for (std::size_t i = 0; i < h.size(); i += 2) {
        const int hi = hex(h[i]);
        const int lo = hex(h[i + 1]);
        if (hi < 0 || lo < 0) return 0;
        out[i / 2] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return static_cast<std::uint8_t>(h.size() / 2);
}

} // namespace tarry::tls

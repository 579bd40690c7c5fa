#include "access_log.hpp"

#include <boost/beast/http/verb.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <ctime>
#include <string>
#include <string_view>

namespace tarry::server {
namespace {

std::string peer_of(int fd) {
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "-";
    char buf[INET6_ADDRSTRLEN] = "-";
    if (sa.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&sa)->sin_addr, buf, sizeof buf);
    else if (sa.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&sa)->sin6_addr, buf, sizeof buf);
    return buf;
}

/// Whether nginx's access log escapes `c`: DQUOTE and backslash, which would end or confuse
/// the quoted request field, control bytes (a newline would start a forged line, ESC drives
/// terminals), DEL and everything >= 0x80.
bool needs_escape(unsigned char c) noexcept {
    return c == '"' || c == '\\' || c < 0x20 || c >= 0x7f;
}

/// `s` with every byte needs_escape() picks written as \xHH, as nginx writes it; the parser
/// already refuses most of these in a target, but the log does not rely on it.
std::string escaped(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (needs_escape(c)) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else {
            out += ch;
        }
    }
    return out;
}

} // namespace

access_log::access_log(const std::filesystem::path& path) {
    if (path == "-") {
        logger_ = std::make_shared<spdlog::logger>(
            "access", std::make_shared<spdlog::sinks::stdout_sink_mt>());
    } else {
        logger_ = std::make_shared<spdlog::logger>(
            "access", std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string()));
    }
    logger_->set_pattern("%v");
    logger_->set_level(spdlog::level::info);
    logger_->flush_on(spdlog::level::warn); // flushed by the writes' buffer, and at stop
}

void access_log::write(int fd, const http::request_head* request, unsigned status,
                       std::uint64_t body_bytes) noexcept {
    try {
        const std::time_t now = std::time(nullptr);
        std::tm tm{};
        gmtime_r(&now, &tm);
        if (request != nullptr) {
            logger_->info("{} - - [{:%d/%b/%Y:%H:%M:%S} +0000] \"{} {} HTTP/{}.{}\" {} {}",
                          peer_of(fd), tm,
                          std::string_view(boost::beast::http::to_string(request->method)),
                          escaped(request->target), request->version / 10, request->version % 10,
                          status, body_bytes);
        } else {
            logger_->info("{} - - [{:%d/%b/%Y:%H:%M:%S} +0000] \"-\" {} {}", peer_of(fd), tm,
                          status, body_bytes);
        }
    } catch (...) {
        // a log line is never worth a connection
    }
}

void access_log::flush() noexcept {
    try {
        logger_->flush();
    } catch (...) {
    }
}

} // namespace tarry::server

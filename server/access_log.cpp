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
            logger_->info(
                "{} - - [{:%d/%b/%Y:%H:%M:%S} +0000] \"{} {} HTTP/{}.{}\" {} {}", peer_of(fd), tm,
                std::string_view(boost::beast::http::to_string(request->method)), request->target,
                request->version / 10, request->version % 10, status, body_bytes);
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

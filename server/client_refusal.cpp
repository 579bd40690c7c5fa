#include "client_refusal.hpp"

#include <fmt/format.h>

#include <sys/socket.h>

#include <array>
#include <iterator>

namespace tarry::server {

void answer_over_client_limit(int fd, std::string_view date) noexcept {
    std::array<char, 4096> sink{};
    // One read: a request that fits a segment or a few; a longer one gets the reset.
    (void)::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT);
    constexpr std::string_view body = "Too many connections from this client.\n";
    std::array<char, 256> head{};
    const auto end = fmt::format_to_n(head.data(), head.size(),
                                      "HTTP/1.1 503 Service Unavailable\r\n"
                                      "Date: {}\r\n"
                                      "Content-Type: text/plain\r\n"
                                      "Content-Length: {}\r\n"
                                      "Connection: close\r\n"
                                      "\r\n{}",
                                      date, body.size(), body);
    const std::size_t size = std::min(end.size, head.size());
    (void)::send(fd, head.data(), size, MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
}

} // namespace tarry::server

#include "upstream_settings.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <charconv>
#include <stdexcept>

namespace tarry::upstream {

server_address server_address::tcp(const boost::asio::ip::address& address, std::uint16_t port) {
    const std::string host =
        address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
    return {host + ":" + std::to_string(port),
            boost::asio::ip::tcp::endpoint(address, port),
            {},
            0,
            address.to_string()};
}

server_address server_address::unix_socket(const std::filesystem::path& path) {
    return {"unix:" + path.string(),
            boost::asio::local::stream_protocol::endpoint(path.string()),
            {},
            0,
            {}};
}

server_address server_address::dns_name(const std::string& host, std::uint16_t port) {
    server_address s;
    s.name = host + ":" + std::to_string(port);
    s.host = host;
    s.port = port;
    s.tls_name = host;
    return s;
}

std::vector<server_address> server_address::of_host(const std::string& host, std::uint16_t port) {
    if (host == "localhost") {
        // Both verified as "localhost", the name the configuration gave.
        std::vector<server_address> both{tcp(boost::asio::ip::address_v4::loopback(), port),
                                         tcp(boost::asio::ip::address_v6::loopback(), port)};
        for (server_address& s : both)
            s.tls_name = host;
        return both;
    }
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    if (!ec) return {tcp(address, port)};
    return {dns_name(host, port)};
}

server_address server_address::parse(const std::string& text) {
    if (text.starts_with("unix:")) return unix_socket(text.substr(5));
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
        throw std::invalid_argument("upstream server needs host:port: " + text);
    std::string host = text.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    unsigned port = 0;
    const char* p = text.data() + colon + 1;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(p, end, port);
    if (r.ec != std::errc{} || r.ptr != end || port == 0 || port > 65535)
        throw std::invalid_argument("upstream server has a bad port: " + text);
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    if (ec) throw std::invalid_argument("upstream server needs a numeric address: " + text);
    return tcp(address, static_cast<std::uint16_t>(port));
}

} // namespace tarry::upstream

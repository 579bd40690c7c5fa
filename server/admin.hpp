#pragma once

#include "config.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <string>

namespace tarry::server {

/// The admin endpoint: GET /metrics (Prometheus text) and GET /healthz, on its own address and
/// its own thread's io_context, never on the main listeners. One request per connection.
class admin {
public:
    /// `metrics` renders the exposition and `healthy` answers /healthz (503 when false, as
    /// from the moment a graceful stop begins); both are called on this io_context's thread.
    admin(boost::asio::io_context& io, const listen_address& addr,
          std::function<std::string()> metrics, std::function<bool()> healthy);

    void start();
    void close() noexcept;
    [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const;

private:
    void do_accept();

    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_; ///< out of descriptors: the next accept waits
    std::function<std::string()> metrics_;
    std::function<bool()> healthy_;
};

} // namespace tarry::server

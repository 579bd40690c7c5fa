#pragma once

// Names to addresses without blocking a loop: c-ares's channel driven on an Asio io_context.
//
// HOW: c-ares keeps its own sockets (one UDP socket per DNS server, TCP for truncated answers)
// and tells us through its socket-state callback which it wants watched for reading or
// writing; each becomes a non-owning Asio descriptor whose readiness calls ares_process_fd. One
// steady_timer follows ares_timeout, so a server that answers nothing is retried and then given
// up on c-ares's schedule. Nothing blocks: the io_context's thread only ever waits in Asio.
//
// WHY c-ares rather than getaddrinfo on a thread: getaddrinfo gives no TTL, cannot be pointed
// at other servers than the system's, and cannot be cancelled; c-ares does all three, is what
// curl and Node.js resolve with, and reads /etc/resolv.conf and /etc/hosts as the C library
// does when no server is given.
//
// One thread: the io_context's. Nothing here knows of upstreams or servers.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct ares_channeldata;
struct ares_addrinfo;

namespace tarry::resolve {

/// What a name resolved to: every IPv4 and IPv6 address (sorted, each once) and the shortest
/// TTL of the records (CNAMEs included); or, with no address, why (`error`).
struct answer {
    std::vector<boost::asio::ip::address> addresses;
    std::chrono::seconds ttl{0};
    std::string error; ///< empty when `addresses` holds the answer

    [[nodiscard]] bool ok() const noexcept { return error.empty() && !addresses.empty(); }
};

/// "10.0.0.1, 10.0.0.2, ::1", for log lines.
std::string to_string(const std::vector<boost::asio::ip::address>& addresses);

/// Checks a DNS server address ("IP", "IP:PORT" or "[IPV6]:PORT"); throws
/// std::invalid_argument saying what is wrong.
void check_server(const std::string& text);

class dns_resolver {
public:
    struct options {
        /// DNS servers ("127.0.0.1", "127.0.0.1:5353", "[::1]:53"); empty: /etc/resolv.conf's.
        std::vector<std::string> servers;
        std::chrono::milliseconds timeout{1000}; ///< the first try's; c-ares doubles it per try
        int tries = 2;                           ///< per server
    };

    /// Throws std::runtime_error (c-ares cannot start) or std::invalid_argument (a server).
    dns_resolver(boost::asio::io_context& io, const options& opts);
    dns_resolver(const dns_resolver&) = delete;
    dns_resolver& operator=(const dns_resolver&) = delete;
    /// Pending lookups end without their callbacks.
    ~dns_resolver();

    /// Looks `host` up (A and AAAA, /etc/hosts first); `done` runs on the io_context's thread,
    /// never from inside this call.
    void resolve(const std::string& host, std::function<void(answer)> done);
    /// Ends every pending lookup without its callback, and releases the loop (no timer, no
    /// socket watched): what a stopping server does so that its io_context can return.
    void cancel() noexcept;
    [[nodiscard]] std::size_t pending() const noexcept { return pending_; }

private:
    struct watch;
    struct lookup;
    static void on_socket_state(void* self, int fd, int readable, int writable) noexcept;
    static void on_answer(void* arg, int status, int timeouts, ::ares_addrinfo* res) noexcept;
    void arm(const std::shared_ptr<watch>& w, bool write);
    void process(int read_fd, int write_fd) noexcept;
    void schedule_timeout() noexcept;

    boost::asio::io_context& io_;
    ares_channeldata* channel_ = nullptr;
    boost::asio::steady_timer timer_;
    std::map<int, std::shared_ptr<watch>> watches_;
    std::size_t pending_ = 0;
    bool cancelling_ = false;
};

} // namespace tarry::resolve

#pragma once

#include "close_reason.hpp"
#include "worker_metrics.hpp"

#include <idle_entry.hpp>
#include <session.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace tarry::server {

class worker;
class connection;
using connection_ptr = boost::intrusive_ptr<connection>;

/// A connection's read buffer (a named type so it has its own free list).
struct in_buffer {
    std::string bytes;
};

using socket_type =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

/// One client connection: socket I/O and timeouts around an http::session.
///
/// I/O is readiness-based, as nginx does it: the connection waits for readability with no
/// buffer, then reads and writes with non-blocking system calls directly. An idle keep-alive
/// connection therefore holds no read buffer, no parser and no output buffer: they come from
/// per-thread free lists when bytes arrive and go back when the response is written.
///
/// The connection is always enrolled in exactly one timeout list, the one for its phase:
///   header     - from accept (first request) or first byte, until the header is complete; total
///   body       - between two reads of a request body; touched on every read
///   send       - between two writes of a response the client is not draining; touched on progress
///   keep_alive - idle between requests; touched when a response is fully written
///   linger     - after an error response, reading and discarding until the client closes
/// It lives as long as a pending wait holds a reference, as in Beast's examples; the count is
/// intrusive and single-threaded (a connection never leaves its worker's thread), which saves
/// a control block per connection and a word per pending wait.
class connection : public boost::intrusive_ref_counter<connection, boost::thread_unsafe_counter> {
public:
    connection(worker& owner, socket_type socket);
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection();

    void start();

    /// Graceful stop: idle connections close now; the others finish their request with
    /// Connection: close.
    void drain() noexcept;
    /// Closes now, whatever the phase.
    void close(close_reason why) noexcept;

    [[nodiscard]] conn_phase phase() const noexcept { return phase_; }
    /// Whether closing it now loses nothing: waiting for a request with no byte of it received.
    [[nodiscard]] bool idle() const noexcept;

    /// The connection whose idle_entry this is (for walking a timeout list).
    static connection& from(void* context) noexcept { return *static_cast<connection*>(context); }

private:
    void drive();
    bool read_some(bool& drained);
    bool write_pending();
    bool send_file();
    void wait(bool writable);
    void on_ready(const boost::system::error_code& ec);
    void enter(conn_phase p, bool touch_if_same);
    void finish();
    void on_timeout() noexcept;
    void release_buffers() noexcept;

    worker& owner_;
    socket_type socket_;
    timeouts::idle_entry idle_;
    http::session session_;
    std::unique_ptr<in_buffer> in_;    ///< request bytes; only while a request is in progress
    std::unique_ptr<std::string> out_; ///< queued responses; only while some are
    std::uint32_t in_len_ = 0;         ///< bytes in in_ (bounded by the buffer size)
    std::uint32_t out_off_ = 0;        ///< bytes of out_ already written
    conn_phase phase_ = conn_phase::header;
    bool closed_ = false;
    bool peer_eof_ = false;
};

} // namespace tarry::server

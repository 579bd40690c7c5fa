#include "upstream_connection.hpp"

#include "upstream_pool.hpp"

#include <tarry/http/recycler.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>

namespace tarry::upstream {
namespace {

// A few kept for the next requests (64 KiB each): more would pin megabytes after a burst, and a
// buffer not kept is one malloc per request.
using read_buffers = http::recycler<read_buffer, 4>;

} // namespace

upstream_connection::upstream_connection(boost::asio::io_context& io,
                                         timeouts::timeout_registry& registry,
                                         std::weak_ptr<upstream_pool> pool)
    : sock_(io), registry_(registry), pool_(std::move(pool)),
      entry_(timeouts::member_callback<&upstream_connection::on_expire>, this) {}

void upstream_connection::connect(const endpoint_type& to) {
    sock_.async_connect(to, [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) {
            // A request's head and its body are two writes: Nagle would hold the second for
            // the upstream's delayed ACK (40 ms). Not a TCP socket (unix:): nothing to set.
            boost::system::error_code ignored;
            self->sock_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
        }
        if (self->user_ != nullptr) self->user_->on_connected(ec);
    });
}

void upstream_connection::write(std::string_view bytes) {
    boost::asio::async_write(
        sock_, boost::asio::buffer(bytes.data(), bytes.size()),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
            if (self->user_ != nullptr) self->user_->on_written(ec);
        });
}

void upstream_connection::read(std::size_t most, bool small) {
    // Just taken from the pool, its idle read is still pending: it is this read.
    if (reading_ || !sock_.is_open()) return;
    if (small) {
        release_buffer();
        start_read(idle_buf_.data(), std::min(most, idle_buf_.size()));
        return;
    }
    if (!buf_) buf_ = read_buffers::take();
    start_read(buf_->bytes.data(), std::min(most, read_size));
}

void upstream_connection::release_buffer() noexcept {
    if (!buf_ || reading_) return;
    try {
        read_buffers::give(std::move(buf_));
    } catch (...) {
        buf_.reset();
    }
}

void upstream_connection::shutdown_send() noexcept {
    boost::system::error_code ignored;
    sock_.shutdown(socket_type::shutdown_send, ignored);
}

void upstream_connection::start_read(char* into, std::size_t size) {
    last_ = into;
    reading_ = true;
    sock_.async_read_some(
        boost::asio::buffer(into, size),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
            self->reading_ = false;
            self->last_n_ = n;
            if (self->user_ != nullptr) {
                self->user_->on_read(ec, n);
            } else if (ec != boost::asio::error::operation_aborted) {
                // Idle in the pool: any byte, EOF or error means it can no longer be used.
                if (auto pool = self->pool_.lock()) pool->on_idle_event(*self);
            }
        });
}

void upstream_connection::watch_idle() {
    if (reading_) return; // the pending read tells the pool
    release_buffer();
    // A read stays pending while idle, into the small buffer the object carries: an upstream
    // close is seen at once, and when the connection is taken the same read receives the
    // start of the response (no cancel, no new operation, no speculative recv).
    start_read(idle_buf_.data(), idle_buf_.size());
}

void upstream_connection::release_kept() noexcept {
    read_buffers::release();
}

void upstream_connection::arm(const timeouts::timeout_kind& kind, timeouts::clock::duration d) {
    if (entry_.kind() == &kind && entry_.idle_timeout() == d) {
        touch();
        return;
    }
    registry_.enroll(entry_, kind, d);
}

bool upstream_connection::shed() noexcept {
    if (user_ != nullptr || entry_.kind() != &upstream_kinds::pooled) return false;
    auto pool = pool_.lock();
    return pool && pool->shed(*this);
}

void upstream_connection::close() noexcept {
    disarm();
    boost::system::error_code ignored;
    sock_.close(ignored);
}

void upstream_connection::on_expire() noexcept {
    if (user_ != nullptr) {
        user_->on_timeout();
        return;
    }
    if (auto pool = pool_.lock()) pool->on_idle_expired(*this);
}

} // namespace tarry::upstream

#include "proxy_tunnel.hpp"

#include "keep_alive.hpp"

#include <tarry/http/field_writer.hpp>
#include <tarry/http/hop_by_hop.hpp>
#include <tarry/http/session.hpp>

#include <boost/asio/error.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>

namespace tarry::upstream {

// What an idle tunnel costs beside its two connections (with libstdc++ on 64-bit: 152 bytes,
// where the exchange it replaces is 392): a guard against it growing unnoticed.
static_assert(sizeof(proxy_tunnel) <= 152 || sizeof(void*) != 8);

void append_upgrade_fields(std::string& out, std::string_view header) {
    const std::string_view connection = http::find_field(header, "Connection");
    http::for_each_field(header, [&](std::string_view name, std::string_view value) {
        if (boost::beast::iequals(name, "Upgrade")) {
            http::append_field(out, name, value); // the protocol it switched to
            return;
        }
        if (http::hop_by_hop(name) || http::listed_in(connection, name)) return;
        http::append_field(out, name, value);
    });
}

proxy_tunnel::proxy_tunnel(http::exchange* ex, std::shared_ptr<upstream_pool> pool,
                           std::shared_ptr<upstream_connection> conn,
                           timeouts::clock::duration idle_timeout, std::string& pending,
                           std::string& writing, bool write_pending) noexcept
    : ex_(ex), pool_(std::move(pool)), conn_(std::move(conn)), pending_(std::move(pending)),
      idle_timeout_(idle_timeout), write_pending_(write_pending) {
    // A short string moves by copying its bytes: the write in flight follows them.
    const char* from = writing.data();
    writing_ = std::move(writing);
    if (write_pending_) conn_->output_moved(from, writing_.data());
    conn_->set_user(this);
    conn_->to_tunnel();
}

proxy_tunnel::~proxy_tunnel() {
    if (conn_) pool_->end_tunnel(*conn_, tunnel_close::client_close);
}

void proxy_tunnel::start(std::shared_ptr<proxy_tunnel> self, std::string_view header,
                         std::string_view first) noexcept {
    self_ = std::move(self);
    if (ex_ == nullptr) {
        end(tunnel_close::client_close);
        return;
    }
    const keep_alive<proxy_tunnel> hold(self_);
    try {
        std::string fields;
        append_upgrade_fields(fields, header);
        http::response_head head;
        head.server_date = false;
        head.extra_fields = fields;
        ex_->defer(*this); // the client's bytes and its end come here from now on
        ex_->upgrade(head);
        if (!first.empty()) {
            pool_->metrics().tunnel_bytes_down.add(static_cast<std::int64_t>(first.size()));
            ex_->write(first); // the new protocol's first bytes
        }
        read_on();
    } catch (...) {
        // Out of memory: counted as the exchange counted a response it could not pass on.
        pool_->metrics().error(upstream_error::malformed);
        end(tunnel_close::client_close);
    }
}

void proxy_tunnel::pump() {
    if (!conn_) return;
    while (!write_pending_ && !pending_.empty()) {
        writing_.swap(pending_);
        pending_.clear();
        // Most writes go at once; the others end in on_written.
        write_pending_ = !conn_->write(writing_);
        if (!write_pending_) {
            writing_.clear();
            if (writing_.capacity() > max_pending) std::string().swap(writing_);
        }
        if (body_paused_ && ex_ != nullptr) {
            body_paused_ = false;
            ex_->resume_body();
        }
    }
    if (!write_pending_ && body_end_ && !up_shut_) {
        up_shut_ = true; // every byte the client sent is upstream: pass its half-close on
        conn_->shutdown_send();
        if (up_eof_) {
            end(tunnel_close::done);
            return;
        }
    }
    conn_->arm(upstream_kinds::tunnel, idle_timeout_);
}

std::size_t proxy_tunnel::on_body(std::string_view bytes) {
    if (!conn_) return bytes.size(); // ended
    const std::size_t queued = pending_.size();
    const std::size_t take =
        queued >= max_pending ? 0 : std::min(bytes.size(), max_pending - queued);
    if (take != 0) {
        pending_.append(bytes.substr(0, take));
        pool_->metrics().tunnel_bytes_up.add(static_cast<std::int64_t>(take));
    }
    if (take < bytes.size()) body_paused_ = true;
    pump();
    return take;
}

void proxy_tunnel::on_body_end() {
    body_end_ = true;
    pump();
}

void proxy_tunnel::on_written(const boost::system::error_code& ec) noexcept {
    const keep_alive<proxy_tunnel> hold(self_);
    write_pending_ = false;
    if (ec) {
        end(tunnel_close::upstream_close);
        return;
    }
    writing_.clear();
    if (writing_.capacity() > max_pending) std::string().swap(writing_);
    try {
        pump();
    } catch (...) {
        // Out of memory: counted as the exchange counted a failed write.
        pool_->metrics().error(upstream_error::reset);
        end(tunnel_close::client_close);
    }
}

void proxy_tunnel::on_read(const boost::system::error_code& ec, std::size_t n) noexcept {
    const keep_alive<proxy_tunnel> hold(self_);
    if (ec == boost::asio::error::eof) {
        // The upstream half-closed: so does the client's side, once it has every byte.
        up_eof_ = true;
        if (ex_ != nullptr) {
            try {
                ex_->shutdown_output();
            } catch (...) {
            }
        }
        if (up_shut_) end(tunnel_close::done);
        return;
    }
    if (ec) {
        end(tunnel_close::upstream_close);
        return;
    }
    pool_->metrics().tunnel_bytes_down.add(static_cast<std::int64_t>(n));
    try {
        if (ex_ != nullptr) ex_->write(std::string_view(conn_->buffer(), n));
    } catch (...) {
        end(tunnel_close::client_close);
        return;
    }
    keep_reading();
}

/// Reads the upstream on, as much as the client's output has room for, or pauses until the
/// client drains it (on_writable).
void proxy_tunnel::read_on() {
    if (!conn_) return;  // the client went away while we wrote to it
    if (up_eof_) return; // the upstream said all it will
    const std::size_t room = ex_ != nullptr ? ex_->room() : upstream_connection::read_size;
    if (room < upstream_connection::read_size / 4)
        room_paused_ = true;
    else
        conn_->read(room);
    conn_->arm(upstream_kinds::tunnel, idle_timeout_);
}

void proxy_tunnel::keep_reading() noexcept {
    try {
        read_on();
    } catch (...) {
        end(tunnel_close::upstream_close);
    }
}

void proxy_tunnel::on_timeout() noexcept {
    end(tunnel_close::idle_timeout);
}

void proxy_tunnel::on_writable() noexcept {
    if (!room_paused_ || !conn_) return;
    room_paused_ = false;
    keep_reading();
}

void proxy_tunnel::on_abort() noexcept {
    ex_ = nullptr;
    // Both sides said all they had, and the client's last bytes are still on their way up (an
    // HTTP/2 client may close its connection right after its END_STREAM): on_written ends it.
    if (body_end_ && up_eof_ && write_pending_ && conn_ && !pool_->stopped()) return;
    end(pool_->stopped() ? tunnel_close::shutdown : tunnel_close::client_close);
}

void proxy_tunnel::end(tunnel_close why) noexcept {
    // Freed when this returns (or when the callback that holds it does): the call on the
    // client's exchange may end it again from within (on_abort).
    const auto last = std::move(self_);
    if (conn_) {
        pool_->end_tunnel(*conn_, why);
        conn_.reset();
    }
    if (ex_ != nullptr) {
        http::exchange* e = ex_;
        ex_ = nullptr;
        try {
            if (why == tunnel_close::done)
                e->finish(); // both sides closed cleanly: so does the connection
            else
                e->abort();
        } catch (...) {
        }
    }
}

} // namespace tarry::upstream

#include "proxy_exchange.hpp"

#include "proxy_handler.hpp"

#include <tarry/http/field_writer.hpp>
#include <tarry/http/hop_by_hop.hpp>
#include <tarry/http/session.hpp>

#include <boost/asio/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <charconv>

namespace tarry::upstream {

namespace bh = boost::beast::http;
using http::append_field;

namespace {

bool is_idempotent(bh::verb m) noexcept {
    switch (m) {
    case bh::verb::get:
    case bh::verb::head:
    case bh::verb::options:
    case bh::verb::trace:
    case bh::verb::put:
    case bh::verb::delete_:
        return true;
    default:
        return false;
    }
}

} // namespace

proxy_exchange::proxy_exchange(std::shared_ptr<proxy_handler> handler, http::exchange& ex)
    : handler_(std::move(handler)), ex_(&ex) {}

proxy_exchange::~proxy_exchange() {
    if (conn_) drop_connection(upstream_close::error);
}

void proxy_exchange::start(std::shared_ptr<proxy_exchange> self) {
    self_ = std::move(self);
    const http::request_head& req = ex_->request();
    idempotent_ = is_idempotent(req.method);
    head_request_ = req.method == bh::verb::head;
    const std::string_view upgrade =
        handler_->upgrades() ? ex_->upgrade_asked() : std::string_view{};
    upgrade_ = !upgrade.empty();
    auto pool = handler_->group().pick();
    build_request_head(pool ? pool->name() : std::string_view{}, upgrade);
    ex_->defer(*this);
    ex_->read_body(); // sends 100 Continue if the client asked: Expect is not forwarded
    if (!pool) {
        answer_error(503);
        return;
    }
    pool->metrics().requests.add();
    started_ = std::chrono::steady_clock::now();
    use(std::move(pool));
}

void proxy_exchange::build_request_head(std::string_view server, std::string_view upgrade) {
    const http::request_head& req = ex_->request();
    const std::string_view header = req.header;
    const bool trust = handler_->settings().trust_forwarded;
    std::string head;
    head.reserve(header.size() + 128);
    head.append(header.substr(0, header.find(' '))); // the method as the client spelled it
    head.push_back(' ');
    head.append(req.target);
    head.append(" HTTP/1.1\r\n");
    if (!req.host.empty())
        append_field(head, "Host", req.host);
    else
        append_field(head, "Host", server.starts_with("unix:") ? "localhost" : server);
    const std::string_view connection = http::find_field(header, "Connection");
    std::string forwarded_for;
    bool has_proto = false;
    bool has_host = false;
    std::string_view content_length;
    bool chunked = false;
    http::for_each_field(header, [&](std::string_view name, std::string_view value) {
        if (boost::beast::iequals(name, "Content-Length")) content_length = value;
        if (boost::beast::iequals(name, "Transfer-Encoding")) chunked = true;
        if (http::hop_by_hop(name) || boost::beast::iequals(name, "Host") ||
            http::listed_in(connection, name))
            return;
        if (boost::beast::iequals(name, "X-Forwarded-For")) {
            if (trust) {
                if (!forwarded_for.empty()) forwarded_for.append(", ");
                forwarded_for.append(value);
            }
            return;
        }
        if (boost::beast::iequals(name, "X-Forwarded-Proto")) {
            if (!trust) return;
            has_proto = true;
        }
        if (boost::beast::iequals(name, "X-Forwarded-Host")) {
            if (!trust) return;
            has_host = true;
        }
        append_field(head, name, value);
    });
    if (const std::string_view peer = ex_->peer(); !peer.empty()) {
        if (!forwarded_for.empty()) forwarded_for.append(", ");
        forwarded_for.append(peer);
    }
    if (!forwarded_for.empty()) append_field(head, "X-Forwarded-For", forwarded_for);
    if (!has_proto) append_field(head, "X-Forwarded-Proto", ex_->secure() ? "https" : "http");
    if (!has_host && !req.host.empty()) append_field(head, "X-Forwarded-Host", req.host);
    if (!upgrade.empty()) {
        // The one hop-by-hop field passed on, with its Connection token: the upstream decides
        // whether to switch (RFC 9110 7.8).
        append_field(head, "Upgrade", upgrade);
        head.append("Connection: upgrade\r\n");
    }
    if (chunked) {
        chunked_up_ = true;
        head.append("Transfer-Encoding: chunked\r\n");
    } else if (!content_length.empty()) {
        append_field(head, "Content-Length", content_length);
    }
    head.append("\r\n");
    append_request(head);
}

void proxy_exchange::append_request(std::string_view bytes) {
    pending_.append(bytes);
    if (!replayable_) return;
    if (replay_.size() + bytes.size() > max_replay) {
        replayable_ = false;
        std::string().swap(replay_);
        return;
    }
    replay_.append(bytes);
}

void proxy_exchange::use(std::shared_ptr<upstream_pool> pool, bool fresh) {
    pool_ = std::move(pool);
    if (auto c = fresh ? nullptr : pool_->take()) {
        conn_ = std::move(c);
        reused_ = true;
        conn_->set_user(this);
        connected();
        return;
    }
    reused_ = false;
    conn_ = pool_->open();
    conn_->set_user(this);
    phase_ = phase::connecting;
    conn_->arm(upstream_kinds::connect, handler_->settings().connect_timeout);
    conn_->connect(pool_->endpoint());
}

void proxy_exchange::on_connected(const boost::system::error_code& ec) noexcept {
    const auto hold = self_; // the exchange may call on_abort() from within
    if (ec) {
        pool_->metrics().error(upstream_error::connect);
        handler_->group().failed(*pool_);
        drop_connection(upstream_close::error);
        // Nothing was sent: another server may take it, whatever the method.
        if (auto next = handler_->group().pick(pool_.get()); next && ++tries_ < 4) {
            use(std::move(next));
            return;
        }
        answer_error(502);
        return;
    }
    try {
        connected();
    } catch (...) {
        fail(502, upstream_error::reset); // out of memory
    }
}

void proxy_exchange::connected() {
    phase_ = phase::sending;
    ++conn_->uses;
    parser_.emplace(*this);
    if (head_request_) parser_->skip(true);
    // The upstream may answer before the request is whole.
    conn_->read();
    pump();
}

void proxy_exchange::pump() {
    if (!conn_ || phase_ == phase::connecting) return;
    while (!write_pending_ && !pending_.empty()) {
        writing_.swap(pending_);
        pending_.clear();
        // Most writes go at once; the others end in on_written.
        write_pending_ = !conn_->write(writing_);
        if (!write_pending_) wrote();
        if (body_paused_ && ex_ != nullptr && phase_ != phase::answered) {
            body_paused_ = false;
            ex_->resume_body();
        }
    }
    if (!write_pending_ && phase_ == phase::tunnel && body_end_ && !up_shut_) {
        up_shut_ = true; // every byte the client sent is upstream: pass its half-close on
        conn_->shutdown_send();
        if (up_eof_) {
            end_tunnel(tunnel_close::done);
            return;
        }
    }
    rearm();
}

void proxy_exchange::wrote() noexcept {
    writing_.clear();
    if (phase_ == phase::tunnel && writing_.capacity() > max_pending) std::string().swap(writing_);
}

void proxy_exchange::rearm() {
    if (!conn_) return;
    const upstream_settings& s = handler_->settings();
    switch (phase_) {
    case phase::tunnel:
        conn_->arm(upstream_kinds::tunnel, s.tunnel_idle_timeout);
        return;
    case phase::receiving:
    case phase::streaming:
        if (room_paused_)
            conn_->disarm(); // the client's send_timeout watches the client
        else
            conn_->arm(upstream_kinds::read, s.read_timeout);
        return;
    case phase::sending:
        if (write_pending_)
            conn_->arm(upstream_kinds::send, s.send_timeout);
        else if (body_end_)
            conn_->arm(upstream_kinds::response, s.response_timeout);
        else
            conn_->disarm(); // waiting for the client's body: its body_timeout watches it
        return;
    case phase::connecting:
    case phase::answered:
        return;
    }
}

std::size_t proxy_exchange::on_body(std::string_view bytes) {
    if (phase_ == phase::answered) return bytes.size(); // the rest is read and dropped
    const std::size_t queued = pending_.size();
    const std::size_t take =
        queued >= max_pending ? 0 : std::min(bytes.size(), max_pending - queued);
    if (take != 0) {
        if (phase_ == phase::tunnel) {
            pending_.append(bytes.substr(0, take));
            pool_->metrics().tunnel_bytes_up.add(static_cast<std::int64_t>(take));
        } else if (chunked_up_) {
            std::string frame;
            http::append_chunk_size(frame, take);
            append_request(frame);
            append_request(bytes.substr(0, take));
            append_request("\r\n");
        } else {
            append_request(bytes.substr(0, take));
        }
    }
    if (take < bytes.size()) body_paused_ = true;
    pump();
    return take;
}

void proxy_exchange::on_body_end() {
    if (phase_ == phase::answered) {
        release();
        return;
    }
    body_end_ = true;
    if (phase_ != phase::tunnel && chunked_up_) append_request("0\r\n\r\n");
    pump();
}

void proxy_exchange::on_written(const boost::system::error_code& ec) noexcept {
    const auto hold = self_; // the exchange may call on_abort() from within
    write_pending_ = false;
    if (ec) {
        if (phase_ == phase::tunnel) {
            end_tunnel(tunnel_close::upstream_close);
            return;
        }
        connection_failed(ec);
        return;
    }
    wrote();
    try {
        pump();
    } catch (...) {
        fail(502, upstream_error::reset);
    }
}

void proxy_exchange::on_read(const boost::system::error_code& ec, std::size_t n) noexcept {
    const auto hold = self_; // the exchange may call on_abort() from within
    if (phase_ == phase::tunnel) {
        tunnel_read(ec, n);
        return;
    }
    if (ec) {
        if (ec == boost::asio::error::eof && parser_ && parser_->is_header_done() &&
            !parser_->is_done()) {
            // A body delimited by the close.
            boost::system::error_code pec;
            parser_->put_eof(pec);
            if (!pec && parser_->is_done()) {
                complete(true);
                return;
            }
        }
        connection_failed(ec);
        return;
    }
    if (phase_ == phase::sending) phase_ = phase::receiving;
    try {
        std::size_t used = 0;
        if (rbuf_.empty()) {
            // Parsed where it was read: no copy unless a head is cut short.
            if (!parse(conn_->buffer(), n, used)) return;
            rbuf_.append(conn_->buffer() + used, n - used);
        } else {
            rbuf_.append(conn_->buffer(), n);
            if (!parse(rbuf_.data(), rbuf_.size(), used)) return;
            rbuf_.erase(0, used);
        }
        if (!parser_->is_header_done() && rbuf_.size() > response_parser::max_header_bytes) {
            fail(502, upstream_error::malformed);
            return;
        }
    } catch (...) {
        fail(502, upstream_error::malformed);
        return;
    }
    keep_reading();
}

/// Reads the upstream on, as much as the client's output has room for, or pauses until the
/// client drains it (on_writable).
void proxy_exchange::read_on() {
    if (!conn_) return;  // the client went away while we wrote to it
    if (up_eof_) return; // a tunnel's upstream said all it will
    const std::size_t room =
        ex_ != nullptr && responded() ? ex_->room() : upstream_connection::read_size;
    if (room < upstream_connection::read_size / 4)
        room_paused_ = true;
    else
        conn_->read(room);
    rearm();
}

void proxy_exchange::keep_reading() noexcept {
    try {
        read_on();
    } catch (...) {
        if (phase_ == phase::tunnel)
            end_tunnel(tunnel_close::upstream_close);
        else
            fail(502, upstream_error::reset);
    }
}

/// Parses [data, data + size), setting `used` to what it took. False when the exchange ended
/// (completed, failed, or became a tunnel).
bool proxy_exchange::parse(const char* data, std::size_t size, std::size_t& used) {
    while (used < size) {
        boost::system::error_code ec;
        const bool had_header = parser_->is_header_done();
        const std::size_t n = parser_->feed(data + used, size - used, ec);
        used += n;
        if (!conn_) return false; // the client went away while the body was written to it
        if (ec == bh::error::need_more) break;
        if (ec) {
            fail(502, upstream_error::malformed);
            return false;
        }
        if (!had_header && parser_->is_header_done()) {
            const unsigned status = parser_->status();
            if (status == 101) {
                if (!upgrade_) { // none was asked (or the route refuses): never switch
                    fail(502, upstream_error::malformed);
                    return false;
                }
                start_tunnel(data + used, size - used);
                return false;
            }
            if (status / 100 == 1) {
                parser_.emplace(*this); // 100 Continue and friends: the client gets its own
                if (head_request_) parser_->skip(true);
                continue;
            }
            on_response_head();
            if (!conn_) return false;
            parser_->eager(true);
        }
        if (parser_->is_done()) {
            complete(used == size);
            return false;
        }
        if (n == 0) break;
    }
    return true;
}

void proxy_exchange::on_response_head() {
    const std::string_view header = parser_->header();
    const std::string_view connection = http::find_field(header, "Connection");
    fields_.clear();
    http::for_each_field(header, [&](std::string_view name, std::string_view value) {
        if (http::hop_by_hop(name) || http::listed_in(connection, name)) return;
        append_field(fields_, name, value);
    });
    http::response_head head;
    head.status = parser_->status();
    head.extra_fields = fields_;
    head.server_date = false;
    const auto length = parser_->content_length();
    if (length) {
        head.content_length = *length;
    } else if (head_request_ || head.status == 204 || head.status == 304) {
        head.content_length = 0;
    } else {
        head.length_unknown = true;
    }
    phase_ = phase::streaming;
    pool_->metrics().responded(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - started_)
                                   .count());
    if (ex_ != nullptr) ex_->respond(head);
}

void proxy_exchange::on_response_body(std::string_view bytes) {
    if (ex_ != nullptr) ex_->write(bytes);
}

void proxy_exchange::start_tunnel(const char* rest, std::size_t size) {
    const std::string_view header = parser_->header();
    const std::string_view connection = http::find_field(header, "Connection");
    fields_.clear();
    http::for_each_field(header, [&](std::string_view name, std::string_view value) {
        if (boost::beast::iequals(name, "Upgrade")) {
            append_field(fields_, name, value); // the protocol it switched to
            return;
        }
        if (http::hop_by_hop(name) || http::listed_in(connection, name)) return;
        append_field(fields_, name, value);
    });
    http::response_head head;
    head.server_date = false;
    head.extra_fields = fields_;
    phase_ = phase::tunnel;
    pool_->to_tunnel();
    pool_->metrics().responded(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - started_)
                                   .count());
    // What belonged to the request is done with: the GET had no body, so no replay either.
    parser_.reset();
    std::string().swap(replay_);
    body_end_ = false; // from now on: the client's stream
    if (ex_ == nullptr) {
        end_tunnel(tunnel_close::client_close);
        return;
    }
    ex_->upgrade(head);
    std::string().swap(fields_); // upgrade() copied them into the client's output
    if (size != 0) {
        pool_->metrics().tunnel_bytes_down.add(static_cast<std::int64_t>(size));
        ex_->write(std::string_view(rest, size)); // the new protocol's first bytes
    }
    std::string().swap(rbuf_);
    read_on();
}

void proxy_exchange::tunnel_read(const boost::system::error_code& ec, std::size_t n) noexcept {
    if (ec == boost::asio::error::eof) {
        // The upstream half-closed: so does the client's side, once it has every byte.
        up_eof_ = true;
        if (ex_ != nullptr) {
            try {
                ex_->shutdown_output();
            } catch (...) {
            }
        }
        if (up_shut_) end_tunnel(tunnel_close::done);
        return;
    }
    if (ec) {
        end_tunnel(tunnel_close::upstream_close);
        return;
    }
    pool_->metrics().tunnel_bytes_down.add(static_cast<std::int64_t>(n));
    try {
        if (ex_ != nullptr) ex_->write(std::string_view(conn_->buffer(), n));
    } catch (...) {
        end_tunnel(tunnel_close::client_close);
        return;
    }
    keep_reading();
}

void proxy_exchange::end_tunnel(tunnel_close why) noexcept {
    if (conn_) {
        pool_->end_tunnel(*conn_, why);
        conn_.reset();
    }
    phase_ = phase::answered;
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
    release();
}

void proxy_exchange::complete(bool clean) noexcept {
    const upstream_settings& s = handler_->settings();
    // Reusable only when both directions ended cleanly: the whole request went out and the
    // whole response came back, with nothing after it, on a connection the upstream keeps open.
    const bool reusable = conn_ && clean && parser_->keep_alive() && body_end_ && !write_pending_ &&
                          pending_.empty() && conn_->is_open();
    if (reusable) {
        auto keep = s.idle_timeout;
        bool hinted = false;
        const auto hint =
            http::keep_alive_timeout(http::find_field(parser_->header(), "Keep-Alive"));
        if (hint >= 0) {
            // Retire it before the upstream would: N seconds less 1 s or 10 %.
            const auto n = std::chrono::seconds(hint);
            const auto margin =
                std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), n / 10);
            if (n - margin < keep) {
                keep = n - margin;
                hinted = true;
            }
        }
        conn_->set_user(nullptr);
        try {
            pool_->give_back(std::move(conn_), keep, hinted);
        } catch (...) {
            if (conn_) drop_connection(upstream_close::error);
        }
        conn_.reset();
    } else if (conn_) {
        drop_connection(upstream_close::upstream_close);
    }
    phase_ = phase::answered;
    if (ex_ != nullptr) {
        http::exchange* e = ex_;
        if (body_end_) ex_ = nullptr;
        try {
            e->finish();
        } catch (...) {
        }
    }
    if (body_end_) release();
}

void proxy_exchange::connection_failed(const boost::system::error_code& ec) noexcept {
    // A reused connection that died before any byte of the response came back: the upstream
    // closed it as we sent (the keep-alive race). Replay once, if that is safe.
    if (reused_ && phase_ == phase::sending && !retried_ && idempotent_ && replayable_ &&
        ec != boost::asio::error::operation_aborted) {
        retried_ = true;
        pool_->metrics().retries.add();
        drop_connection(upstream_close::upstream_close);
        pending_ = replay_;
        writing_.clear();
        write_pending_ = false;
        rbuf_.clear();
        try {
            use(pool_, true); // its idle neighbours may be as stale
        } catch (...) {
            fail(502, upstream_error::reset);
        }
        return;
    }
    fail(502, upstream_error::reset);
}

void proxy_exchange::on_timeout() noexcept {
    const auto hold = self_; // the exchange may call on_abort() from within
    if (phase_ == phase::tunnel) {
        end_tunnel(tunnel_close::idle_timeout);
        return;
    }
    if (phase_ == phase::connecting) handler_->group().failed(*pool_);
    fail(504, upstream_error::timeout);
}

void proxy_exchange::fail(unsigned status, upstream_error kind) noexcept {
    if (pool_) pool_->metrics().error(kind);
    drop_connection(upstream_close::error);
    if (ex_ == nullptr) {
        release();
        return;
    }
    if (!responded()) {
        answer_error(status);
        return;
    }
    // The client has part of the response: only closing its connection tells it.
    http::exchange* e = ex_;
    ex_ = nullptr;
    phase_ = phase::answered;
    e->abort();
    release();
}

void proxy_exchange::answer_error(unsigned status) noexcept {
    phase_ = phase::answered;
    if (ex_ != nullptr) {
        http::exchange* e = ex_;
        if (body_end_) ex_ = nullptr;
        try {
            e->respond_text(status, http::reason(status));
        } catch (...) {
        }
    }
    if (body_end_) release();
}

void proxy_exchange::drop_connection(upstream_close why) noexcept {
    if (!conn_) return;
    if (phase_ == phase::tunnel) {
        pool_->end_tunnel(*conn_, tunnel_close::client_close);
    } else {
        pool_->discard(*conn_, why);
    }
    conn_.reset();
}

void proxy_exchange::on_writable() noexcept {
    const auto hold = self_; // the exchange may call on_abort() from within
    if (!room_paused_ || !conn_) return;
    room_paused_ = false;
    keep_reading();
}

void proxy_exchange::on_abort() noexcept {
    ex_ = nullptr;
    if (phase_ == phase::tunnel) {
        end_tunnel(pool_->stopped() ? tunnel_close::shutdown : tunnel_close::client_close);
        return;
    }
    drop_connection(upstream_close::error); // never pool a half-used connection
    release();
}

void proxy_exchange::release() noexcept {
    auto keep = std::move(self_); // destroyed when this returns
}

} // namespace tarry::upstream

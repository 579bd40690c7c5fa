#include "proxy_exchange.hpp"

#include "keep_alive.hpp"
#include "proxy_handler.hpp"
#include "proxy_tunnel.hpp"
#include "upstream_error_log.hpp"

#include <tarry/http/field_writer.hpp>
#include <tarry/http/hop_by_hop.hpp>
#include <tarry/http/session.hpp>

#include <boost/asio/error.hpp>
#include <boost/beast/http/error.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace tarry::upstream {

namespace bh = boost::beast::http;

// The state of every proxied request (with libstdc++ on 64-bit: 392 bytes): a guard against it
// growing unnoticed.
static_assert(sizeof(proxy_exchange) <= 392 || sizeof(void*) != 8);

namespace {

/// The status a client gets for an exchange that failed before its response began.
constexpr unsigned status_of(proxy_exchange::outcome how) noexcept {
    switch (how) {
    case proxy_exchange::outcome::no_server:
        return 503;
    case proxy_exchange::outcome::timeout:
        return 504;
    default:
        return 502;
    }
}

/// The error counted for a failed exchange (a refused connect is counted as it comes).
constexpr upstream_error error_of(proxy_exchange::outcome how) noexcept {
    switch (how) {
    case proxy_exchange::outcome::malformed:
        return upstream_error::malformed;
    case proxy_exchange::outcome::timeout:
        return upstream_error::timeout;
    default:
        return upstream_error::reset;
    }
}

/// Microseconds from `from` to `to`.
std::int64_t micros(std::chrono::steady_clock::time_point from,
                    std::chrono::steady_clock::time_point to) noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(to - from).count();
}

} // namespace

http::upstream_timing* proxy_exchange::record() noexcept {
    return ex_ != nullptr ? ex_->upstream_record() : nullptr;
}

proxy_exchange::proxy_exchange(std::shared_ptr<proxy_handler> handler, http::exchange& ex)
    : handler_(std::move(handler)), ex_(&ex) {}

proxy_exchange::~proxy_exchange() {
    if (conn_) drop_connection(upstream_close::error);
}

void proxy_exchange::start(std::shared_ptr<proxy_exchange> self) {
    const http::request_head& req = ex_->request();
    if (!handler_->upgrades() && req.method == bh::verb::connect && !ex_->upgrade_asked().empty()) {
        // An HTTP/2 extended CONNECT (RFC 8441) on a route that passes no upgrade: forwarded as
        // a plain GET, its 200 would tell the client its tunnel is open.
        ex_->respond_text(501, "Not Implemented\n");
        return;
    }
    self_ = std::move(self);
    idempotent_ = is_idempotent(req.method);
    head_request_ = req.method == bh::verb::head;
    const std::string_view upgrade =
        handler_->upgrades() ? ex_->upgrade_asked() : std::string_view{};
    upgrade_ = !upgrade.empty();
    auto pool = handler_->group().pick();
    forward_context ctx;
    ctx.server = pool ? std::string_view(pool->name()) : std::string_view{};
    ctx.upgrade = upgrade;
    ctx.secure = ex_->secure();
    ctx.peer = ex_->peer(); // valid until the next call on the exchange
    ctx.trust_forwarded = handler_->settings().trust_forwarded;
    const forwarded_head head = forward_head(req, ctx);
    request_.set_chunked(head.chunked);
    request_.append(head.bytes);
    ex_->defer(*this);
    ex_->read_body(); // sends 100 Continue if the client asked: Expect is not forwarded
    if (!pool) {
        finish(outcome::no_server);
        return;
    }
    pool->metrics().requests.add();
    started_ = std::chrono::steady_clock::now();
    use(std::move(pool));
}

void proxy_exchange::use(std::shared_ptr<upstream_pool> pool, bool fresh) {
    pool_ = std::move(pool);
    if (auto c = fresh ? nullptr : pool_->take()) {
        conn_ = std::move(c);
        reused_ = true;
        if (http::upstream_timing* u = record()) u->connect_us = 0; // as nginx's, on a kept one
        conn_->set_user(this);
        connected();
        return;
    }
    reused_ = false;
    conn_ = pool_->open();
    conn_->set_user(this);
    phase_ = phase::connecting;
    conn_->arm(upstream_kinds::connect, handler_->settings().connect_timeout);
    conn_->connect(pool_->endpoint(), pool_->tls());
}

void proxy_exchange::on_connected(const boost::system::error_code& ec) noexcept {
    const keep_alive<proxy_exchange> hold(self_);
    if (ec) {
        const bool tls = upstream_connection::tls_failed(ec);
        pool_->metrics().error(tls ? upstream_error::tls : upstream_error::connect);
        log_failure(outcome::unreachable, ec);
        handler_->group().failed(*pool_);
        drop_connection(upstream_close::error);
        // Nothing was sent: another server may take it, whatever the method.
        if (auto next = handler_->group().pick(pool_.get()); next && ++tries_ < 4) {
            use(std::move(next));
            return;
        }
        finish(outcome::unreachable);
        return;
    }
    if (http::upstream_timing* u = record()) // a clock read only for the log
        u->connect_us = micros(started_, std::chrono::steady_clock::now());
    try {
        connected();
    } catch (...) {
        finish(outcome::reset); // out of memory
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
    while (!write_pending_ && request_.has_pending()) {
        // Most writes go at once; the others end in on_written.
        write_pending_ = !conn_->write(request_.next());
        if (!write_pending_) request_.wrote();
        if (body_paused_ && ex_ != nullptr && phase_ != phase::answered) {
            body_paused_ = false;
            ex_->resume_body();
        }
    }
    rearm();
}

void proxy_exchange::rearm() {
    if (!conn_) return;
    const upstream_settings& s = handler_->settings();
    switch (phase_) {
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
    const std::size_t take = std::min(bytes.size(), request_.room());
    if (take != 0) request_.append_body(bytes.substr(0, take));
    if (take < bytes.size()) body_paused_ = true;
    pump();
    return take;
}

void proxy_exchange::on_body_end() {
    if (phase_ == phase::answered) {
        release(); // the answer went first: the exchange ends with the body it overtook
        return;
    }
    body_end_ = true;
    request_.end_body();
    pump();
}

void proxy_exchange::on_written(const boost::system::error_code& ec) noexcept {
    const keep_alive<proxy_exchange> hold(self_);
    write_pending_ = false;
    if (ec) {
        connection_failed(ec);
        return;
    }
    request_.wrote();
    try {
        pump();
    } catch (...) {
        finish(outcome::reset);
    }
}

void proxy_exchange::on_read(const boost::system::error_code& ec, std::size_t n) noexcept {
    const keep_alive<proxy_exchange> hold(self_);
    if (ec) {
        if (ec == boost::asio::error::eof && parser_ && parser_->is_header_done() &&
            !parser_->is_done()) {
            // A body delimited by the close.
            boost::system::error_code pec;
            parser_->put_eof(pec);
            if (!pec && parser_->is_done()) {
                finish(outcome::answered);
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
            finish(outcome::malformed);
            return;
        }
    } catch (...) {
        finish(outcome::malformed);
        return;
    }
    keep_reading();
}

/// Reads the upstream on, as much as the client's output has room for, or pauses until the
/// client drains it (on_writable).
void proxy_exchange::read_on() {
    if (!conn_) return; // the client went away while we wrote to it
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
        finish(outcome::reset);
    }
}

/// Parses [data, data + size), setting `used` to what it took. False when the exchange ended
/// (answered, failed, or handed to a tunnel).
bool proxy_exchange::parse(const char* data, std::size_t size, std::size_t& used) {
    while (used < size) {
        boost::system::error_code ec;
        const bool had_header = parser_->is_header_done();
        const std::size_t n = parser_->feed(data + used, size - used, ec);
        used += n;
        if (!conn_) return false; // the client went away while the body was written to it
        if (ec == bh::error::need_more) break;
        if (ec) {
            finish(outcome::malformed, ec);
            return false;
        }
        if (!had_header && parser_->is_header_done()) {
            const unsigned status = parser_->status();
            if (status == 101) {
                if (!upgrade_) { // none was asked (or the route refuses): never switch
                    finish(outcome::malformed);
                    return false;
                }
                switch_protocols(std::string_view(data + used, size - used));
                return false;
            }
            if (upgrade_ && status / 100 == 2 && ex_ != nullptr &&
                ex_->request().method == bh::verb::connect) {
                // An HTTP/2 extended CONNECT (RFC 8441 5): its 2xx would tell the client the
                // tunnel is open, and this upstream answered the GET the Upgrade was ignored on.
                finish(outcome::malformed);
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
            finish(used == size ? outcome::answered : outcome::overrun);
            return false;
        }
        if (n == 0) break;
    }
    return true;
}

void proxy_exchange::on_response_head() {
    const std::string_view header = parser_->header();
    const std::string_view connection = http::find_field(header, "Connection");
    std::string fields; // respond() copies them into the client's output
    http::for_each_field(header, [&](std::string_view name, std::string_view value) {
        if (http::hop_by_hop(name) || http::listed_in(connection, name)) return;
        http::append_field(fields, name, value);
    });
    http::response_head head;
    head.status = parser_->status();
    head.extra_fields = fields;
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
    const std::int64_t took = micros(started_, std::chrono::steady_clock::now());
    pool_->metrics().responded(took);
    if (http::upstream_timing* u = record()) {
        u->header_us = took;
        u->status = head.status;
    }
    if (ex_ != nullptr) ex_->respond(head);
}

void proxy_exchange::on_response_body(std::string_view bytes) {
    if (ex_ != nullptr) ex_->write(bytes);
}

/// The upstream answered the upgrade with 101: the connection, the client, and the request bytes
/// still on their way up go to a tunnel (`first`: the new protocol's bytes that came with the
/// head), and the exchange ends.
void proxy_exchange::switch_protocols(std::string_view first) {
    auto tunnel = std::make_shared<proxy_tunnel>(
        ex_, pool_, std::move(conn_), handler_->settings().tunnel_idle_timeout, request_.pending(),
        request_.writing(), write_pending_);
    write_pending_ = false;
    pool_->to_tunnel();
    const std::int64_t took = micros(started_, std::chrono::steady_clock::now());
    pool_->metrics().responded(took);
    if (http::upstream_timing* u = record()) {
        // The upstream's part ends with its 101; the tunnel's own life is the request time.
        u->header_us = u->response_us = took;
        u->status = 101;
    }
    proxy_tunnel& t = *tunnel;
    t.start(std::move(tunnel), parser_->header(), first);
    finish(outcome::upgraded);
}

void proxy_exchange::connection_failed(const boost::system::error_code& ec) noexcept {
    // A reused connection that died before any byte of the response came back: the upstream
    // closed it as we sent (the keep-alive race). Replay once, if that is safe.
    if (reused_ && phase_ == phase::sending && !retried_ && idempotent_ && request_.replayable() &&
        ec != boost::asio::error::operation_aborted) {
        retried_ = true;
        pool_->metrics().retries.add();
        drop_connection(upstream_close::upstream_close);
        write_pending_ = false;
        rbuf_.clear();
        try {
            request_.replay();
            use(pool_, true); // its idle neighbours may be as stale
        } catch (...) {
            finish(outcome::reset);
        }
        return;
    }
    finish(outcome::reset, ec);
}

void proxy_exchange::on_timeout() noexcept {
    if (phase_ == phase::connecting) handler_->group().failed(*pool_);
    finish(outcome::timeout);
}

void proxy_exchange::on_writable() noexcept {
    if (!room_paused_ || !conn_) return;
    room_paused_ = false;
    keep_reading();
}

void proxy_exchange::on_abort() noexcept {
    ex_ = nullptr;
    finish(outcome::client_gone);
}

void proxy_exchange::finish(outcome how, const boost::system::error_code& ec) noexcept {
    if (how == outcome::reset || how == outcome::malformed || how == outcome::timeout ||
        how == outcome::no_server)
        log_failure(how, ec);
    // The upstream connection first: pooled only after a clean answer, else closed, and never
    // half-used. None is left after an upgrade (the tunnel has it), without a server, or after
    // the last refusal.
    switch (how) {
    case outcome::answered:
        if (reusable())
            give_back();
        else
            drop_connection(upstream_close::upstream_close);
        break;
    case outcome::overrun:
        drop_connection(upstream_close::upstream_close);
        break;
    case outcome::reset:
    case outcome::malformed:
    case outcome::timeout:
        if (pool_) pool_->metrics().error(error_of(how));
        drop_connection(upstream_close::error);
        break;
    case outcome::client_gone:
        drop_connection(upstream_close::error);
        break;
    case outcome::upgraded:
    case outcome::no_server:
    case outcome::unreachable:
        break;
    }
    // Then the client (and its log: the upstream's time, and the status a failure stands for,
    // as nginx's $upstream_status says 502 or 504 for a server that gave no answer).
    if (http::upstream_timing* u = record();
        u != nullptr && pool_ && how != outcome::upgraded && how != outcome::client_gone) {
        u->response_us = micros(started_, std::chrono::steady_clock::now());
        if (u->status == 0 && how != outcome::answered && how != outcome::overrun)
            u->status = status_of(how);
    }
    const bool began = responded();
    phase_ = phase::answered;
    http::exchange* const e = ex_;
    if (e == nullptr || how == outcome::upgraded) {
        ex_ = nullptr; // gone, or the tunnel's now
        release();
        return;
    }
    const bool answered = how == outcome::answered || how == outcome::overrun;
    // After part of the response went out, only closing its connection tells the client.
    const bool cut = !answered && began;
    // The exchange is over once the client has nothing more to send for it; until then the
    // rest of the request body is read and dropped (on_body_end lets go). Over, it lets go of
    // itself before the call, which may end it again from within (on_abort): it is freed when
    // this returns, or when the callback that holds it does.
    std::shared_ptr<proxy_exchange> last;
    if (cut || body_end_) {
        ex_ = nullptr;
        last = std::move(self_);
    }
    try {
        if (answered)
            e->finish();
        else if (cut)
            e->abort();
        else
            e->respond_text(status_of(how), http::reason(status_of(how)));
    } catch (...) {
    }
}

bool proxy_exchange::reusable() const noexcept {
    return conn_ && parser_->keep_alive() && body_end_ && !write_pending_ &&
           !request_.has_pending() && conn_->is_open();
}

void proxy_exchange::give_back() noexcept {
    auto keep = handler_->settings().idle_timeout;
    bool hinted = false;
    const auto hint = http::keep_alive_timeout(http::find_field(parser_->header(), "Keep-Alive"));
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
}

void proxy_exchange::drop_connection(upstream_close why) noexcept {
    if (!conn_) return;
    pool_->discard(*conn_, why);
    conn_.reset();
}

void proxy_exchange::release() noexcept {
    auto keep = std::move(self_); // freed when this returns, unless a callback holds it
}

void proxy_exchange::log_failure(outcome how, const boost::system::error_code& ec) const noexcept {
    // Cancelled here (a stop closing what is in flight): not something the upstream did.
    if (ec == boost::asio::error::operation_aborted) return;
    try {
        upstream_failure f;
        f.server = pool_ ? std::string_view(pool_->name()) : std::string_view{};
        f.tls = handler_->settings().tls != nullptr;
        if (ex_ != nullptr) {
            f.client = ex_->peer();
            f.request = &ex_->request();
        }
        switch (phase_) {
        case phase::connecting:
            f.during = "while connecting to upstream";
            break;
        case phase::sending:
            f.during = "while sending request to upstream";
            break;
        case phase::receiving:
            f.during = "while reading response header from upstream";
            break;
        case phase::streaming:
        case phase::answered:
            f.during = "while reading upstream";
            break;
        }
        // nginx's words, errno first where there is one: "connect() failed (111: Connection
        // refused)", "upstream timed out (110: Connection timed out)".
        const auto with_errno = [&](std::string_view what) {
            return fmt::format("{} ({}: {})", what, ec.value(), ec.message());
        };
        std::string reason;
        switch (how) {
        case outcome::unreachable:
            if (upstream_connection::tls_failed(ec)) {
                // nginx's "SSL_do_handshake() failed", with the reason a person can act on.
                f.kind = failure_kind::tls;
                f.during = "while TLS handshaking with upstream";
                reason = "TLS handshake failed (" + upstream_connection::tls_failure() + ")";
                break;
            }
            f.kind = failure_kind::connect;
            reason = with_errno("connect() failed");
            break;
        case outcome::timeout:
            f.kind = failure_kind::timeout;
            reason = "timed out (110: Connection timed out)";
            break;
        case outcome::malformed:
            f.kind = failure_kind::malformed;
            reason = ec ? "sent an invalid response (" + ec.message() + ")"
                        : std::string("sent an invalid response");
            break;
        case outcome::no_server:
            f.kind = failure_kind::no_server;
            reason = "has no server to take the request";
            f.during = {};
            break;
        default:
            f.kind = failure_kind::reset;
            if (ec == boost::asio::error::eof)
                reason = "prematurely closed connection";
            else if (ec)
                reason = with_errno("connection failed");
            else
                reason = "connection failed";
            break;
        }
        f.reason = reason;
        upstream::log_failure(f);
    } catch (...) {
        // Out of memory formatting a log line: the request is answered all the same.
    }
}

} // namespace tarry::upstream

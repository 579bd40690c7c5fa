#include "stream.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

namespace tarry::tls {

/// Records in and out, while bytes move. Ciphertext read from the socket sits in `in` from
/// rec_off to in_len; a record is opened in place, and its plaintext handed out from plain_off.
/// Sealed records wait in `out` (record_output).
struct stream::buffers {
    static constexpr std::size_t in_cap = record_header_bytes + max_ciphertext + 4096;
    std::size_t in_len = 0;
    std::size_t rec_off = 0;
    std::size_t plain_off = 0;
    std::size_t plain_len = 0;
    record_output out;
    std::uint8_t in[in_cap];

    [[nodiscard]] bool idle() const noexcept {
        return rec_off == in_len && plain_len == 0 && out.empty() && out.sent == 0;
    }
};

// What a connection keeps of TLS while idle: the mode (the two record keys, or the handshake's
// pointers) and a few bytes; the buffers are given back. It must not grow past this.
static_assert(sizeof(stream) <= 256);

namespace {

thread_local std::vector<std::unique_ptr<stream::buffers>>* kept = nullptr;
/// Record buffers kept for reuse. A connection holds its buffers only while bytes move or wait
/// in them (a partial record, records the socket did not take), not while it waits for the
/// client, whatever its phase: a few serve a busy thread; more would pin the pages a burst
/// touched.
constexpr std::size_t kept_max = 16;

std::vector<std::unique_ptr<stream::buffers>>& kept_list() {
    thread_local std::vector<std::unique_ptr<stream::buffers>> list;
    kept = &list;
    return list;
}

/// OpenSSL's reads and writes during the handshake (and a TLS 1.2 connection's records).
const transport openssl_io{[](void* owner, char* out, int len) noexcept {
                               return static_cast<stream*>(owner)->read_for_openssl(out, len);
                           },
                           [](void* owner, const char* data, int len) noexcept {
                               return static_cast<stream*>(owner)->write_for_openssl(data, len);
                           }};

} // namespace

int stream::write_for_openssl(const char* data, int len) noexcept {
    if (len <= 0) return 0;
    const auto n = static_cast<std::size_t>(len);
    if (const auto* h = std::get_if<tls::handshake>(&mode_); h != nullptr && h->writing_tickets()) {
        // The session tickets OpenSSL writes once a TLS 1.3 client's Finished is in: they wait
        // in the record buffer, ahead of our first record, and go out with the first response
        // (or when recv finds nothing to read): one send where OpenSSL makes one per ticket.
        buffers* bp = buffers_for(false, 0);
        if (bp == nullptr) return -1;
        if (bp->out.append(reinterpret_cast<const std::uint8_t*>(data), n)) return len;
        if (!flush(fd_)) return -1; // no room (never for tickets): what waits goes first
    }
    ssize_t r;
    do {
        r = ::send(fd_, data, n, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    return static_cast<int>(r);
}

int stream::read_for_openssl(char* out, int len) noexcept {
    if (len <= 0) return 0;
    buffers* bp = buffers_for(false, 0);
    if (bp == nullptr) return -1;
    buffers& b = *bp;
    if (b.rec_off == b.in_len) {
        // Without read-ahead OpenSSL never asks past the record it is reading, so what this
        // recv brings beyond it stays here: after a TLS 1.3 handshake, the client's first
        // application records, which recv() then opens from this very buffer.
        b.rec_off = b.in_len = 0;
        ssize_t r;
        do {
            r = ::recv(fd_, b.in, buffers::in_cap, 0);
        } while (r < 0 && errno == EINTR);
        if (r <= 0) return static_cast<int>(r); // 0: the TCP end; -1: errno says (EAGAIN)
        b.in_len = static_cast<std::size_t>(r);
        fill_short_ = b.in_len < buffers::in_cap;
    }
    const std::size_t k = std::min(static_cast<std::size_t>(len), b.in_len - b.rec_off);
    std::memcpy(out, b.in + b.rec_off, k);
    b.rec_off += k;
    return static_cast<int>(k);
}

stream::stream() noexcept = default;

bool stream::start(std::shared_ptr<const context> ctx, int fd) noexcept {
    try {
        mode_.emplace<tls::handshake>(std::move(ctx), openssl_io, this);
    } catch (...) {
        mode_.emplace<std::monostate>();
        return false;
    }
    fd_ = fd;
    return true;
}

bool stream::burst_over() noexcept {
    return tls::handshake::burst_over();
}

stream::~stream() {
    if (buf_) release();
    if (buf_) buf_.reset();
}

std::uint64_t stream::key_updates() noexcept {
    return record_reader::key_updates() + record_writer::key_updates();
}

void stream::release_kept() noexcept {
    kept_list().clear();
    kept_list().shrink_to_fit();
}

stream::buffers& stream::buf() {
    if (!buf_) {
        auto& list = kept_list();
        if (!list.empty()) {
            buf_ = std::move(list.back());
            list.pop_back();
            buffers& b = *buf_;
            b.in_len = b.rec_off = b.plain_off = b.plain_len = 0;
            b.out.clear();
        } else {
            buf_.reset(new buffers); // the arrays uninitialized: only the counters are
        }
    }
    return *buf_;
}

void stream::release() noexcept {
    if (!buf_ || !buf_->idle()) return;
    try {
        auto& list = kept_list();
        if (list.size() < kept_max) {
            list.push_back(std::move(buf_));
            return;
        }
    } catch (...) {
    }
    buf_.reset();
}

bool stream::end_waiting() const noexcept {
    if (const auto* h = std::get_if<tls::handshake>(&mode_)) return h->ended();
    return peer_closed_ || broken_;
}

bool stream::plaintext_waiting() const noexcept {
    // (With OpenSSL's object, records read from the socket but not yet opened count too.)
    if (const auto* h = std::get_if<tls::handshake>(&mode_))
        return h->plaintext_waiting() || (buf_ && buf_->rec_off != buf_->in_len);
    return buf_ && buf_->plain_len != 0;
}

bool stream::input_waiting() const noexcept {
    return plaintext_waiting() || (buf_ && buf_->rec_off != buf_->in_len);
}

noop_limit stream::limit_reached() const noexcept {
    const auto* r = std::get_if<records>(&mode_);
    return r != nullptr ? r->reader.limit_reached() : noop_limit::none;
}

// --- The handshake ---------------------------------------------------------------------------

step stream::handshake(int fd) noexcept {
    auto* h = std::get_if<tls::handshake>(&mode_);
    if (h == nullptr) return step::failed;
    if (!h->begun()) {
        // A TLS client's first byte is a handshake record's type (22). Anything else is not
        // TLS: as nginx does, bytes are handed to HTTP (answered 400), but an SSLv2 hello's
        // (the high bit); letters are someone's HTTP request, told of its mistake.
        unsigned char first = 0;
        const ssize_t n = ::recv(fd, &first, 1, MSG_PEEK);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return step::want_read;
        if (n <= 0) {
            outcome_.failure = handshake_failure::client_closed;
            return step::failed;
        }
        if (first != handshake_record) {
            outcome_.failure = first >= 'A' && first <= 'Z' ? handshake_failure::plain_http
                                                            : handshake_failure::not_tls;
            return first < 0x80 ? step::plain_http : step::failed;
        }
        // OpenSSL's object (kilobytes) only now that a ClientHello is coming, as nginx does:
        // a connection that sends nothing costs the connection alone.
        if (!h->begin()) {
            outcome_.failure = handshake_failure::other;
            return step::failed;
        }
    }
    const step s = h->advance(outcome_);
    if (s == step::want_read)
        release(); // what was read is OpenSSL's now: a silent client holds no buffer of ours
    if (s != step::done) return s;
    traffic_secrets t;
    if (!h->take_secrets(t)) return step::done; // TLS 1.2: OpenSSL's object goes on
    // OpenSSL reads record by record (no read-ahead): it has taken nothing past the client's
    // Finished, so the client's first application record is number 0, and any of it already
    // read waits in our record buffer (read_for_openssl), where recv() opens it.
    records& r = mode_.emplace<records>();
    if (!r.reader.init(t.algorithm, {t.client, t.client_len}, 0) ||
        !r.writer.init(t.algorithm, {t.server, t.server_len}, t.server_sealed)) {
        outcome_.failure = handshake_failure::other;
        return step::failed;
    }
    return step::done;
}

bool stream::start_records(aead a, std::span<const std::uint8_t> in, std::uint64_t in_seq,
                           std::span<const std::uint8_t> out, std::uint64_t out_seq,
                           bool from_server) noexcept {
    if (!std::holds_alternative<std::monostate>(mode_)) return false;
    records& r = mode_.emplace<records>();
    return r.reader.init(a, in, in_seq, from_server) && r.writer.init(a, out, out_seq);
}

stream::buffers* stream::buffers_for(bool closed, int closed_errno) noexcept {
    if (closed) {
        errno = closed_errno;
        return nullptr;
    }
    if (buf_) [[likely]]
        return buf_.get();
    try {
        return &buf();
    } catch (...) {
        errno = ENOMEM;
        return nullptr;
    }
}

// --- Records in --------------------------------------------------------------------------------

ssize_t stream::recv(int fd, char* out, std::size_t n) noexcept {
    auto* rp = std::get_if<records>(&mode_);
    if (rp == nullptr) [[unlikely]]
        return openssl_recv(out, n);
    records& r = *rp;
    buffers* bp = buffers_for(broken_, peer_broke_ ? ECONNRESET : EPROTO);
    if (bp == nullptr) return -1;
    buffers& b = *bp;
    std::size_t got = 0;
    // The socket said it is empty (a short read, or EAGAIN); the handshake's last read may
    // have said so already, with the first records behind the Finished.
    bool drained = std::exchange(fill_short_, false);
    for (;;) {
        if (b.plain_len != 0) {
            const std::size_t k = std::min(n - got, b.plain_len);
            std::memcpy(out + got, b.in + b.plain_off, k);
            b.plain_off += k;
            b.plain_len -= k;
            got += k;
            if (got == n) return static_cast<ssize_t>(got);
        }
        if (!peer_closed_ && b.in_len - b.rec_off >= record_header_bytes) {
            const record_event e = r.reader.read(b.in + b.rec_off, b.in_len - b.rec_off);
            if (e.what == record_event::data) [[likely]] {
                b.plain_off = b.rec_off + e.offset;
                b.plain_len = e.length;
                b.rec_off += e.used;
                continue;
            }
            b.rec_off += e.used;
            switch (e.what) {
            case record_event::need_more:
                break;
            case record_event::error:
                fail_with(r, e.alert, fd);
                return fail_recv(false, got);
            case record_event::peer_alert:
                return fail_recv(true, got); // the client's fatal alert
            case record_event::close_notify:
                peer_closed_ = true;
                continue;
            case record_event::key_update:
                if (e.requested && !r.writer.answer_key_update(b.out)) {
                    fail_with(r, internal_error, fd);
                    return fail_recv(false, got);
                }
                if (!b.out.empty()) flush(fd); // our KeyUpdate, if the socket takes it now
                continue;
            case record_event::data:
            case record_event::nothing:
                continue;
            }
        }
        if (peer_closed_) return static_cast<ssize_t>(got);
        if (drained) {
            if (got != 0) return static_cast<ssize_t>(got);
            // Nothing to answer now: what waits to go out (the session tickets, before any
            // response) goes while the client waits.
            if (!b.out.empty()) flush(fd);
            errno = EAGAIN;
            return -1;
        }
        // More ciphertext is needed: make room behind the partial record (no plaintext waits
        // here: it was all handed out above).
        if (b.rec_off != 0) {
            std::memmove(b.in, b.in + b.rec_off, b.in_len - b.rec_off);
            b.in_len -= b.rec_off;
            b.rec_off = 0;
        }
        const std::size_t space = buffers::in_cap - b.in_len;
        const ssize_t got_now = ::recv(fd, b.in + b.in_len, space, 0);
        if (got_now > 0) {
            b.in_len += static_cast<std::size_t>(got_now);
            drained = static_cast<std::size_t>(got_now) < space;
            continue;
        }
        if (got_now == 0) {
            peer_closed_ = true; // the TCP end without close_notify: an end all the same
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            drained = true;
            continue;
        }
        return got != 0 ? static_cast<ssize_t>(got) : -1;
    }
}

ssize_t stream::fail_recv(bool by_peer, std::size_t got) noexcept {
    // What came before the error is delivered first, as recv(2) does; the error comes next.
    broken_ = true;
    peer_broke_ = by_peer;
    if (got != 0) return static_cast<ssize_t>(got);
    errno = by_peer ? ECONNRESET : EPROTO;
    return -1;
}

void stream::fail_with(records& r, std::uint8_t description, int fd) noexcept {
    if (r.writer.alert(buf_->out, 2, description)) flush(fd); // fatal
}

// --- Records out -------------------------------------------------------------------------------

bool stream::flush(int fd, int flags) noexcept {
    record_output& out = buf_->out;
    while (!out.empty()) {
        const auto pending = out.pending();
        const ssize_t r = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL | flags);
        if (r < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        out.consumed(static_cast<std::size_t>(r));
        if (static_cast<std::size_t>(r) != pending.size()) {
            errno = EAGAIN; // a short write: the socket is full
            return false;
        }
    }
    return true;
}

ssize_t stream::send(int fd, const char* data, std::size_t n) noexcept {
    auto* rp = std::get_if<records>(&mode_);
    if (rp == nullptr) [[unlikely]]
        return openssl_send(data, n);
    buffers* bp = buffers_for(broken_ || sent_close_, EPIPE);
    if (bp == nullptr) return -1;
    record_output& out = bp->out;
    const auto* p = reinterpret_cast<const std::uint8_t*>(data);
    for (;;) {
        switch (rp->writer.seal(out, p, n)) {
        case record_writer::sealed::ok:
            break;
        case record_writer::sealed::shrunk:
            errno = EINVAL;
            return -1;
        case record_writer::sealed::exhausted:
            errno = EPROTO;
            return -1;
        }
        if (!flush(fd)) {
            if (out.sent != 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return static_cast<ssize_t>(out.take_sent());
            return -1;
        }
        if (out.sent == n) return static_cast<ssize_t>(out.take_sent());
    }
}

void stream::close_notify(int fd) noexcept {
    if (broken_ || sent_close_) return;
    if (auto* h = std::get_if<tls::handshake>(&mode_)) {
        h->close_notify();
        return;
    }
    auto* r = std::get_if<records>(&mode_);
    buffers* bp = r != nullptr ? buffers_for(false, 0) : nullptr;
    if (bp == nullptr || !r->writer.alert(bp->out, 1, close_notify_alert)) return;
    // The caller's FIN (a close or a half-close) follows at once: held back for it (MSG_MORE),
    // the alert leaves in the FIN's segment, one packet and one wakeup of the peer, not two.
    flush(fd, MSG_MORE);
    sent_close_ = true; // nothing is sent after it; the peer may still send (a half-close)
}

// --- TLS 1.2: OpenSSL's records ----------------------------------------------------------------

ssize_t stream::openssl_recv(char* buf, std::size_t n) noexcept {
    if (auto* h = std::get_if<tls::handshake>(&mode_)) return h->read(buf, n);
    errno = ENOTCONN; // not started
    return -1;
}

ssize_t stream::openssl_send(const char* buf, std::size_t n) noexcept {
    if (auto* h = std::get_if<tls::handshake>(&mode_)) return h->write(buf, n);
    errno = ENOTCONN;
    return -1;
}

} // namespace tarry::tls

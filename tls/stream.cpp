#include "stream.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace tarry::tls {

/// Records in and out, while bytes move. Ciphertext read from the socket sits in `in` from
/// rec_off to in_len; a record is opened in place, and its plaintext handed out from plain_off.
/// Sealed records wait in `out` from out_off to out_len, each remembered with the plaintext it
/// carries, so that send() reports bytes only once their record is on the wire.
struct stream::buffers {
    static constexpr std::size_t in_cap = record_header_bytes + max_ciphertext + 4096;
    static constexpr std::size_t out_records = 2;
    static constexpr std::size_t out_cap = out_records * (max_plaintext + record_overhead) + 256;
    struct bound {
        std::size_t end;   ///< the record's last byte + 1, in out
        std::size_t plain; ///< the caller's bytes it carries (0: an alert, a KeyUpdate)
        bool key_update;   ///< our KeyUpdate
    };
    std::size_t in_len = 0;
    std::size_t rec_off = 0;
    std::size_t plain_off = 0;
    std::size_t plain_len = 0;
    std::size_t out_off = 0;
    std::size_t out_len = 0;
    std::size_t ahead = 0; ///< the caller's bytes sealed, not yet on the wire
    std::size_t sent = 0;  ///< the caller's bytes on the wire, not yet reported (a flush by recv)
    std::size_t bounds_n = 0;
    bool key_update_waiting = false; ///< a KeyUpdate of ours is sealed, not yet on the wire
    bound bounds[out_records + 14];
    std::uint8_t in[in_cap];
    std::uint8_t out[out_cap];

    [[nodiscard]] bool idle() const noexcept {
        return rec_off == in_len && plain_len == 0 && out_off == out_len && sent == 0;
    }
};

namespace {

thread_local std::vector<std::unique_ptr<stream::buffers>>* kept = nullptr;
thread_local std::uint64_t key_updates_seen = 0;
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

constexpr std::uint8_t key_update_type = 24;

/// OpenSSL's reads and writes during the handshake (and a TLS 1.2 connection's records).
const transport openssl_io{
    [](void* owner, char* out, int len) noexcept {
        return static_cast<stream*>(owner)->read_for_openssl(out, len);
    },
    [](void* owner, const char* data, int len) noexcept {
        return static_cast<stream*>(owner)->write_for_openssl(data, len);
    }};

} // namespace

int stream::write_for_openssl(const char* data, int len) noexcept {
    if (len <= 0) return 0;
    const auto n = static_cast<std::size_t>(len);
    if (hs_ && hs_->writing_tickets()) {
        // The session tickets OpenSSL writes once a TLS 1.3 client's Finished is in: they wait
        // in the record buffer, ahead of our first record, and go out with the first response
        // (or when recv finds nothing to read): one send where OpenSSL makes one per ticket.
        buffers* bp = buffers_for(false, 0);
        if (bp == nullptr) return -1;
        buffers& b = *bp;
        if (buffers::out_cap - b.out_len >= n && b.bounds_n + 4 < std::size(b.bounds)) {
            std::memcpy(b.out + b.out_len, data, n);
            b.out_len += n;
            b.bounds[b.bounds_n++] = {b.out_len, 0, false};
            return len;
        }
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
        hs_ = std::make_unique<tls::handshake>(std::move(ctx), openssl_io, this);
    } catch (...) {
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
    return key_updates_seen + record_reader::key_updates();
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
            b.out_off = b.out_len = b.ahead = b.sent = b.bounds_n = 0;
            b.key_update_waiting = false;
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
    if (hs_) return hs_->ended();
    return peer_closed_ || broken_;
}

bool stream::plaintext_waiting() const noexcept {
    // (With OpenSSL's object, records read from the socket but not yet opened count too.)
    if (hs_) return hs_->plaintext_waiting() || (buf_ && buf_->rec_off != buf_->in_len);
    return buf_ && buf_->plain_len != 0;
}

// --- The handshake ---------------------------------------------------------------------------

step stream::handshake(int fd) noexcept {
    if (!hs_) return step::failed;
    if (!hs_->begun()) {
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
        if (!hs_->begin()) {
            outcome_.failure = handshake_failure::other;
            return step::failed;
        }
    }
    const step s = hs_->advance(outcome_);
    if (s == step::want_read)
        release(); // what was read is OpenSSL's now: a silent client holds no buffer of ours
    if (s != step::done) return s;
    traffic_secrets t;
    if (!hs_->take_secrets(t)) return step::done; // TLS 1.2: OpenSSL's object goes on
    // OpenSSL reads record by record (no read-ahead): it has taken nothing past the client's
    // Finished, so the client's first application record is number 0, and any of it already
    // read waits in our record buffer (read_for_openssl), where recv() opens it.
    hs_.reset();
    if (!reader_.init(t.algorithm, {t.client, t.client_len}, 0) ||
        !write_.init(t.algorithm, {t.server, t.server_len}, t.server_sealed)) {
        outcome_.failure = handshake_failure::other;
        return step::failed;
    }
    return step::done;
}

bool stream::start_with_secrets(aead a, std::span<const std::uint8_t> client,
                                std::span<const std::uint8_t> server) noexcept {
    return !hs_ && reader_.init(a, client) && write_.init(a, server);
}

stream::buffers* stream::buffers_for(bool closed, int closed_errno) noexcept {
    if (closed) {
        errno = closed_errno;
        return nullptr;
    }
    try {
        return &buf();
    } catch (...) {
        errno = ENOMEM;
        return nullptr;
    }
}

// --- Records in --------------------------------------------------------------------------------

ssize_t stream::recv(int fd, char* out, std::size_t n) noexcept {
    if (hs_) return hs_->read(out, n);
    buffers* bp = buffers_for(broken_, fail_errno_ != 0 ? fail_errno_ : EPROTO);
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
        if (!peer_closed_) {
            const record_event e = reader_.read(b.in + b.rec_off, b.in_len - b.rec_off);
            if (e.what == record_event::data) {
                b.plain_off = b.rec_off + e.offset;
                b.plain_len = e.length;
            }
            b.rec_off += e.used;
            if (e.what == record_event::error) {
                fail_with(e.alert);
                break;
            }
            if (e.what == record_event::peer_alert) return fail_recv(ECONNRESET, got);
            if (e.what == record_event::close_notify) peer_closed_ = true;
            if (e.what == record_event::key_update) {
                if (e.requested && !answer_key_update()) {
                    fail_with(internal_error);
                    break;
                }
                if (b.out_off != b.out_len) flush(fd); // our KeyUpdate, if the socket takes it
            }
            if (e.what != record_event::need_more) continue;
        }
        if (peer_closed_) return static_cast<ssize_t>(got);
        if (drained) {
            if (got != 0) return static_cast<ssize_t>(got);
            // Nothing to answer now: what waits to go out (the session tickets, before any
            // response) goes while the client waits.
            if (b.out_off != b.out_len) flush(fd);
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
        const ssize_t r = ::recv(fd, b.in + b.in_len, space, 0);
        if (r > 0) {
            b.in_len += static_cast<std::size_t>(r);
            drained = static_cast<std::size_t>(r) < space;
            continue;
        }
        if (r == 0) {
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
    // A protocol error: the alert is queued; send it if the socket takes it.
    flush(fd);
    return fail_recv(EPROTO, got);
}

ssize_t stream::fail_recv(int err, std::size_t got) noexcept {
    // What came before the error is delivered first, as recv(2) does; the error comes next.
    broken_ = true;
    fail_errno_ = err;
    if (got != 0) return static_cast<ssize_t>(got);
    errno = err;
    return -1;
}

noop_limit stream::limit_reached() const noexcept {
    return reader_.limit_reached();
}

bool stream::answer_key_update() noexcept {
    // Ours goes out before any more application data, sealed under the old key; several
    // requests while one of ours still waits are answered by that one (RFC 8446, 4.6.3).
    return (buf_ && buf_->key_update_waiting) || queue_key_update();
}

// --- Records out -------------------------------------------------------------------------------

bool stream::queue_key_update() noexcept {
    const std::uint8_t ku[] = {key_update_type, 0, 0, 1, 0}; // update_not_requested
    if (!queue(handshake_record, ku, sizeof ku, true) || !write_.update()) return false;
    ++key_updates_seen;
    return true;
}

bool stream::queue(std::uint8_t type, const std::uint8_t* body, std::size_t len,
                   bool key_update) noexcept {
    buffers* bp = nullptr;
    try {
        bp = &buf();
    } catch (...) {
        return false;
    }
    buffers& b = *bp;
    if (b.bounds_n == std::size(b.bounds) || buffers::out_cap - b.out_len < len + record_overhead)
        return false;
    const std::size_t sealed = write_.seal(type, body, len, b.out + b.out_len);
    if (sealed == 0) return false;
    b.out_len += sealed;
    b.bounds[b.bounds_n++] = {b.out_len, 0, key_update};
    if (key_update) b.key_update_waiting = true;
    return true;
}

void stream::fail_with(std::uint8_t description) noexcept {
    const std::uint8_t a[] = {2, description}; // fatal
    queue(alert, a, sizeof a);
}

bool stream::flush(int fd, int flags) noexcept {
    buffers& b = *buf_;
    while (b.out_off != b.out_len) {
        const ssize_t r =
            ::send(fd, b.out + b.out_off, b.out_len - b.out_off, MSG_NOSIGNAL | flags);
        if (r < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        b.out_off += static_cast<std::size_t>(r);
        std::size_t done = 0;
        while (done != b.bounds_n && b.bounds[done].end <= b.out_off) {
            b.sent += b.bounds[done].plain;
            b.ahead -= b.bounds[done].plain;
            if (b.bounds[done].key_update) b.key_update_waiting = false;
            ++done;
        }
        if (done != 0) {
            std::memmove(b.bounds, b.bounds + done, (b.bounds_n - done) * sizeof b.bounds[0]);
            b.bounds_n -= done;
        }
        if (b.out_off != b.out_len) {
            errno = EAGAIN; // a short write: the socket is full
            return false;
        }
    }
    b.out_off = b.out_len = 0;
    return true;
}

ssize_t stream::send(int fd, const char* data, std::size_t n) noexcept {
    if (hs_) return hs_->write(data, n);
    buffers* bp = buffers_for(broken_ || sent_close_, EPIPE);
    if (bp == nullptr) return -1;
    buffers& b = *bp;
    const auto* p = reinterpret_cast<const std::uint8_t*>(data);
    // The caller's first b.sent bytes are on the wire already (a flush by recv), the next
    // b.ahead sealed and waiting: a retry starts with the same bytes, never fewer.
    if (b.sent + b.ahead > n) {
        errno = EINVAL;
        return -1;
    }
    const auto take_sent = [&b] {
        const std::size_t r = std::exchange(b.sent, 0);
        return static_cast<ssize_t>(r);
    };
    for (;;) {
        // Seal what fits behind what waits, leaving room for control records.
        while (b.sent + b.ahead < n && b.bounds_n + 4 < std::size(b.bounds)) {
            if (write_.worn() && !queue_key_update()) {
                errno = EPROTO;
                return -1;
            }
            const std::size_t chunk = std::min(n - b.sent - b.ahead, max_plaintext);
            if (buffers::out_cap - b.out_len < chunk + record_overhead) break;
            const std::size_t sealed =
                write_.seal(application_data, p + b.sent + b.ahead, chunk, b.out + b.out_len);
            if (sealed == 0) {
                errno = EPROTO;
                return -1;
            }
            b.out_len += sealed;
            b.bounds[b.bounds_n++] = {b.out_len, chunk, false};
            b.ahead += chunk;
        }
        if (!flush(fd)) {
            if (b.sent != 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return take_sent();
            return -1;
        }
        if (b.sent == n) return take_sent();
    }
}

void stream::close_notify(int fd) noexcept {
    if (broken_ || sent_close_) return;
    if (hs_) {
        hs_->close_notify();
        return;
    }
    const std::uint8_t a[] = {1, close_notify_alert};
    if (!queue(alert, a, sizeof a)) return;
    // The caller's FIN (a close or a half-close) follows at once: held back for it (MSG_MORE),
    // the alert leaves in the FIN's segment, one packet and one wakeup of the peer, not two.
    flush(fd, MSG_MORE);
    sent_close_ = true; // nothing is sent after it; the peer may still send (a half-close)
}

} // namespace tarry::tls

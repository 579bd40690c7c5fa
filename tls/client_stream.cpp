#include "client_stream.hpp"

#include "client_context.hpp"
#include "key_log.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <string_view>

namespace tarry::tls {

/// What the callbacks learn while OpenSSL's object carries the records: the traffic secrets
/// (`client` is ours, `server` the peer's), and the records each way since the handshake, which
/// are where the sequence numbers stand when tarry's records take over.
struct client_stream::capture {
    traffic_secrets secrets;
    std::uint64_t opened = 0;     ///< records read under the server's application secret
    std::uint64_t sealed = 0;     ///< records written under ours
    std::uint64_t headers_in = 0; ///< record headers read (one not yet opened: a partial record)
    bool counting = false;        ///< the handshake is done: the records are application records
    /// The last record opened carried handshake bytes (tickets): one split over records (RFC
    /// 8446, 5.1) may be half read in OpenSSL's object, which no call tells while the split is
    /// in its 4-byte header; once a record of data has come after it, none is.
    bool handshake_last = false;
    bool rekeyed = false; ///< a KeyUpdate went by: the secrets are not the ones captured
};

namespace {

/// This thread's connections between their start and their first idle moment (OpenSSL's object
/// at its largest), and the most at once since the last burst_over().
struct client_burst {
    std::uint32_t open = 0;
    std::uint32_t peak = 0;
};
thread_local client_burst burst;
/// As the server side's handshakes (tls/handshake.cpp): 64 leave megabytes of freed heap.
constexpr std::uint32_t burst_min_peak = 64;

/// SSL_read and SSL_write take an int.
int clamp_int(std::size_t n) noexcept {
    return static_cast<int>(std::min<std::size_t>(n, INT_MAX));
}

} // namespace

client_stream::client_stream() noexcept = default;

client_stream::~client_stream() {
    settled();
    if (ssl_ != nullptr) SSL_free(ssl_);
}

void client_stream::settled() noexcept {
    if (!counted_) return;
    counted_ = false;
    --burst.open;
}

bool client_stream::burst_over() noexcept {
    if (burst.open != 0 || burst.peak < burst_min_peak) return false;
    burst.peak = 0;
    return true;
}

bool client_stream::start(const client_context& ctx, const int& fd, const std::string& name,
                          session_slot* slot) noexcept {
    fd_ = &fd;
    try {
        capture_ = std::make_unique<capture>();
    } catch (...) {
        return false;
    }
    ssl_ = ctx.new_ssl(fd, name, slot);
    if (ssl_ == nullptr) return false;
    counted_ = true;
    burst.peak = std::max(burst.peak, ++burst.open);
    SSL_set_app_data(ssl_, capture_.get());
    SSL_set_msg_callback(ssl_, on_record);
    SSL_set_msg_callback_arg(ssl_, capture_.get());
    return true;
}

void client_stream::on_secret(const SSL* ssl, const char* line) noexcept {
    auto* c = static_cast<capture*>(SSL_get_app_data(ssl));
    if (c == nullptr) return;
    const std::string_view l(line);
    if (l.starts_with("CLIENT_TRAFFIC_SECRET_0 "))
        c->secrets.client_len = key_log_secret(l, c->secrets.client);
    else if (l.starts_with("SERVER_TRAFFIC_SECRET_0 "))
        c->secrets.server_len = key_log_secret(l, c->secrets.server);
}

void client_stream::on_record(int write_p, int, int content_type, const void* buf, std::size_t len,
                              SSL*, void* arg) noexcept {
    auto* c = static_cast<capture*>(arg);
    if (c == nullptr || !c->counting || len == 0) return;
    const auto first = *static_cast<const std::uint8_t*>(buf);
    if (content_type == SSL3_RT_HEADER) {
        // Every protected record is application_data outside (RFC 8446, 5.2); each advances
        // its direction's sequence number. A record read is counted by its header, and again
        // once opened (its inner content type): the two differ while a record is half read.
        if (first != SSL3_RT_APPLICATION_DATA) return;
        if (write_p != 0)
            ++c->sealed;
        else
            ++c->headers_in;
    } else if (content_type == SSL3_RT_INNER_CONTENT_TYPE && write_p == 0) {
        ++c->opened;
        c->handshake_last = first == SSL3_RT_HANDSHAKE;
    } else if (content_type == SSL3_RT_HANDSHAKE && first == SSL3_MT_KEY_UPDATE) {
        c->rekeyed = true;
    }
}

step client_stream::handshake(std::string& why) noexcept {
    if (ssl_ == nullptr) return step::failed;
    ERR_clear_error();
    errno = 0;
    const int r = SSL_do_handshake(ssl_);
    if (r == 1) {
        finished_ = true;
        resumed_ = SSL_session_reused(ssl_) == 1;
        // OpenSSL reads record by record (no read-ahead), and a client's handshake ends with
        // its Finished: no application record has gone either way yet.
        if (capture_) capture_->counting = true;
        return step::done;
    }
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ) return step::want_read;
    if (e == SSL_ERROR_WANT_WRITE) return step::want_write;
    try {
        why = client_context::failure(ssl_, e);
    } catch (...) {
        why.clear();
    }
    ERR_clear_error();
    return step::failed;
}

ssize_t client_stream::recv(char* out, std::size_t n) noexcept {
    if (ssl_ == nullptr) return records_.recv(*fd_, out, n);
    ERR_clear_error();
    errno = 0;
    const int r = SSL_read(ssl_, out, clamp_int(n));
    if (r > 0) return r;
    const int e = SSL_get_error(ssl_, r);
    const int sys = errno;
    ERR_clear_error();
    switch (e) {
    case SSL_ERROR_ZERO_RETURN: // close_notify, or (SSL_OP_IGNORE_UNEXPECTED_EOF) a bare close
        return 0;
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_SYSCALL:
        errno = sys != 0 ? sys : ECONNRESET;
        return -1;
    default: // a bad record, or a write it would need (renegotiation is refused)
        errno = EPROTO;
        return -1;
    }
}

bool client_stream::short_read_drains() const noexcept {
    return ssl_ == nullptr && !records_.end_waiting();
}

ssize_t client_stream::send(const char* data, std::size_t n) noexcept {
    if (ssl_ == nullptr) return records_.send(*fd_, data, n);
    ERR_clear_error();
    errno = 0;
    const int r = SSL_write(ssl_, data, clamp_int(n));
    if (r > 0) return r;
    const int e = SSL_get_error(ssl_, r);
    const int sys = errno;
    ERR_clear_error();
    switch (e) {
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_SYSCALL:
        errno = sys != 0 ? sys : ECONNRESET;
        return -1;
    default: // (a read it would need: renegotiation is refused, TLS 1.3 has none)
        errno = EPROTO;
        return -1;
    }
}

bool client_stream::input_waiting() const noexcept {
    if (ssl_ != nullptr) return SSL_has_pending(ssl_) == 1;
    return records_.input_waiting();
}

bool client_stream::plaintext_waiting() const noexcept {
    if (ssl_ != nullptr) return SSL_pending(ssl_) > 0;
    return records_.plaintext_waiting();
}

void client_stream::idle() noexcept {
    settled();
    if (ssl_ != nullptr) take_over();
    if (ssl_ == nullptr) records_.release();
}

void client_stream::take_over() noexcept {
    if (!finished_ || !capture_ || SSL_version(ssl_) != TLS1_3_VERSION) return;
    const capture& c = *capture_;
    if (c.rekeyed || c.secrets.client_len == 0 || c.secrets.server_len == 0 ||
        c.headers_in != c.opened || c.handshake_last || SSL_has_pending(ssl_) == 1)
        return;
    const std::optional<aead> a = aead_of_suite(
        static_cast<std::uint16_t>(SSL_CIPHER_get_protocol_id(SSL_get_current_cipher(ssl_))));
    if (!a || !records_.start_records(*a, {c.secrets.server, c.secrets.server_len}, c.opened,
                                      {c.secrets.client, c.secrets.client_len}, c.sealed, true))
        return;
    // Nothing is sent: SSL_free would otherwise take the session for one not shut down cleanly.
    SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(ssl_);
    ssl_ = nullptr;
    capture_.reset(); // (its secrets cleansed)
    ERR_clear_error();
}

void client_stream::close_notify() noexcept {
    if (!finished_) return;
    if (ssl_ == nullptr) {
        records_.close_notify(*fd_);
        return;
    }
    ERR_clear_error();
    SSL_shutdown(ssl_); // one try: nothing waits for the answer
    ERR_clear_error();
}

} // namespace tarry::tls

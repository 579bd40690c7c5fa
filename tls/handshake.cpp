#include "handshake.hpp"

#include "key_log.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

namespace tarry::tls {

/// The traffic secrets of a handshake in progress, as the key log callback hands them over,
/// and the records OpenSSL seals under the server's (its session tickets).
struct handshake::capture {
    std::shared_ptr<const context> ctx;
    traffic_secrets secrets;
    bool server_app = false;      ///< the server's application secret is in use for writing
    bool client_finished = false; ///< a TLS 1.3 client's Finished came: what OpenSSL writes
                                  ///< now is session tickets
};

namespace {

/// This thread's handshakes with OpenSSL's object alive (kilobytes each, freed at their end),
/// and the most at once since the last burst_over().
struct handshake_burst {
    std::uint32_t open = 0;
    std::uint32_t peak = 0;
};
thread_local handshake_burst burst;
/// Concurrent handshakes worth giving memory back after: 64 leave about 2 MB of freed heap.
constexpr std::uint32_t burst_min_peak = 64;

std::uint8_t suite_index(const SSL* ssl) noexcept {
    const char* name = SSL_CIPHER_get_name(SSL_get_current_cipher(ssl));
    if (name == nullptr) return suite_names.size() - 1;
    for (std::size_t i = 0; i + 1 < suite_names.size(); ++i)
        if (suite_names[i] == name) return static_cast<std::uint8_t>(i);
    return suite_names.size() - 1;
}

/// The BIO OpenSSL reads and writes through: the owner's transport, which serves reads from its
/// record buffer, filled by one recv of what the socket has (the socket's own BIO makes a
/// read(2) for each record's 5-byte header and another for its body), and holds a TLS 1.3
/// handshake's session tickets back for the first response.
BIO_METHOD* transport_method() noexcept {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tarry socket");
        if (m == nullptr) return m;
        BIO_meth_set_read(m, [](BIO* b, char* out, int len) {
            BIO_clear_retry_flags(b);
            const int n = static_cast<handshake*>(BIO_get_data(b))->bio_read(out, len);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
            return n;
        });
        BIO_meth_set_write(m, [](BIO* b, const char* data, int len) {
            BIO_clear_retry_flags(b);
            const int n = static_cast<handshake*>(BIO_get_data(b))->bio_write(data, len);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(b);
            return n;
        });
        BIO_meth_set_ctrl(m, [](BIO*, int cmd, long, void*) -> long {
            return cmd == BIO_CTRL_FLUSH || cmd == BIO_CTRL_DUP ? 1 : 0;
        });
        BIO_meth_set_create(m, [](BIO* b) {
            BIO_set_init(b, 1);
            return 1;
        });
        return m;
    }();
    return method;
}

} // namespace

traffic_secrets::~traffic_secrets() {
    OPENSSL_cleanse(client, sizeof client);
    OPENSSL_cleanse(server, sizeof server);
}

handshake::handshake(std::shared_ptr<const context> ctx, const transport& io, void* owner)
    : io_(&io), owner_(owner), hs_(std::make_unique<capture>()) {
    hs_->ctx = std::move(ctx);
}

handshake::~handshake() {
    ended_handshake(); // (a handshake that failed, or was cut short)
    if (ssl_ != nullptr) SSL_free(ssl_);
}

void handshake::on_secret(const SSL* ssl, const char* line) noexcept {
    auto* self = static_cast<handshake*>(SSL_get_app_data(ssl));
    if (self == nullptr || !self->hs_) return;
    capture& c = *self->hs_;
    const std::string_view l(line);
    if (l.starts_with("CLIENT_TRAFFIC_SECRET_0 ")) {
        c.secrets.client_len = key_log_secret(l, c.secrets.client);
    } else if (l.starts_with("SERVER_TRAFFIC_SECRET_0 ")) {
        c.secrets.server_len = key_log_secret(l, c.secrets.server);
        c.server_app = true; // from here OpenSSL seals under it: count its records
    }
}

void handshake::on_record(int write_p, int version, int content_type, const void* buf,
                          std::size_t len, SSL*, void* arg) noexcept {
    // Every record OpenSSL writes is reported by its header; those after the switch to the
    // application secret (the session tickets) advance the sequence number we take over. The
    // switch is checked here, record by record: the client's Finished may already be in the
    // socket when the server's flight goes out, and then the tickets follow in the same call.
    auto* c = static_cast<capture*>(arg);
    if (write_p == 0 && content_type == SSL3_RT_HANDSHAKE && version == TLS1_3_VERSION &&
        len != 0 && static_cast<const std::uint8_t*>(buf)[0] == SSL3_MT_FINISHED && c != nullptr &&
        c->server_app)
        c->client_finished = true; // the server's own Finished went out before the switch
    if (write_p == 0 || content_type != SSL3_RT_HEADER) return;
    if (c != nullptr && c->server_app) ++c->secrets.server_sealed;
}

bool handshake::writing_tickets() const noexcept {
    return hs_ && hs_->client_finished;
}

bool handshake::begin() noexcept {
    if (ssl_ != nullptr) return true;
    if (!hs_) return false;
    ssl_ = hs_->ctx->new_ssl();
    if (ssl_ == nullptr) return false;
    BIO* bio = BIO_new(transport_method());
    if (bio == nullptr) {
        SSL_free(ssl_);
        ssl_ = nullptr;
        return false;
    }
    BIO_set_data(bio, this);
    SSL_set_bio(ssl_, bio, bio); // one reference for both directions
    SSL_set_app_data(ssl_, this);
    SSL_set_msg_callback(ssl_, on_record);
    SSL_set_msg_callback_arg(ssl_, hs_.get());
    counted_ = true;
    burst.peak = std::max(burst.peak, ++burst.open);
    return true;
}

void handshake::ended_handshake() noexcept {
    if (!counted_) return;
    counted_ = false;
    --burst.open;
}

bool handshake::burst_over() noexcept {
    // Once a burst of handshakes is over, the heap it used is free but resident (glibc keeps
    // it), under connections that may stay idle for minutes: worth one trim. The next needs
    // another burst of as many at once.
    if (burst.open != 0 || burst.peak < burst_min_peak) return false;
    burst.peak = 0;
    return true;
}

step handshake::advance(handshake_outcome& out) noexcept {
    if (ssl_ == nullptr || !hs_) return step::failed;
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl_);
    if (r == 1) {
        ended_handshake();
        out.resumed = SSL_session_reused(ssl_) == 1;
        out.suite = suite_index(ssl_);
        out.certificate = hs_->ctx->index_of(SSL_get_SSL_CTX(ssl_));
        const unsigned char* alpn = nullptr;
        unsigned alpn_len = 0;
        SSL_get0_alpn_selected(ssl_, &alpn, &alpn_len);
        out.h2 = alpn_len == 2 && std::memcmp(alpn, "h2", 2) == 0;
        SSL_set_msg_callback(ssl_, nullptr);
        return step::done;
    }
    switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
        return step::want_read;
    case SSL_ERROR_WANT_WRITE:
        return step::want_write;
    case SSL_ERROR_SSL:
        out.failure = classify_failure();
        break;
    default: // SSL_ERROR_SYSCALL, SSL_ERROR_ZERO_RETURN: the client went away
        out.failure = handshake_failure::client_closed;
        break;
    }
    ERR_clear_error();
    return step::failed;
}

bool handshake::take_secrets(traffic_secrets& out) noexcept {
    if (ssl_ == nullptr || !hs_) return false;
    const traffic_secrets& c = hs_->secrets;
    std::optional<aead> a;
    if (SSL_version(ssl_) == TLS1_3_VERSION)
        a = aead_of_suite(
            static_cast<std::uint16_t>(SSL_CIPHER_get_protocol_id(SSL_get_current_cipher(ssl_))));
    if (!a || c.client_len == 0 || c.server_len == 0) {
        // TLS 1.2: OpenSSL's object goes on alone; the context's callbacks are done.
        SSL_set_msg_callback_arg(ssl_, nullptr);
        hs_.reset();
        return false;
    }
    out.algorithm = *a;
    std::memcpy(out.client, c.client, c.client_len);
    std::memcpy(out.server, c.server, c.server_len);
    out.client_len = c.client_len;
    out.server_len = c.server_len;
    out.server_sealed = c.server_sealed;
    // Nothing is sent: SSL_free would otherwise take the session for one not shut down cleanly.
    SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(ssl_);
    ssl_ = nullptr;
    hs_.reset(); // (its secrets cleansed)
    return true;
}

// --- TLS 1.2: OpenSSL's records ----------------------------------------------------------------

bool handshake::plaintext_waiting() const noexcept {
    return ssl_ != nullptr && SSL_pending(ssl_) > 0;
}

void handshake::close_notify() noexcept {
    if (ssl_ == nullptr || SSL_is_init_finished(ssl_) != 1) return;
    ERR_clear_error();
    SSL_shutdown(ssl_);
    ERR_clear_error();
}

ssize_t handshake::read(char* out, std::size_t n) noexcept {
    std::size_t got = 0;
    ERR_clear_error();
    while (got < n) {
        const int r =
            SSL_read(ssl_, out + got, static_cast<int>(std::min<std::size_t>(n - got, 1U << 30)));
        if (r > 0) {
            got += static_cast<std::size_t>(r);
            continue;
        }
        const int e = SSL_get_error(ssl_, r);
        ERR_clear_error();
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            if (got != 0) break;
            errno = EAGAIN;
            return -1;
        }
        // An end or an error: after the bytes before it, if any (the next call reports it,
        // OpenSSL saying so again; ended() tells the caller to make that call).
        ended_ = got != 0;
        if (e == SSL_ERROR_ZERO_RETURN) break; // close_notify
        if (e == SSL_ERROR_SYSCALL) {
            if (got != 0) break;
            if (errno == 0) return 0; // the TCP end
            return -1;
        }
        if (got != 0) break;
        errno = EPROTO;
        return -1;
    }
    return static_cast<ssize_t>(got);
}

ssize_t handshake::write(const char* data, std::size_t n) noexcept {
    std::size_t sent = 0;
    ERR_clear_error();
    while (sent < n) {
        const int r = SSL_write(ssl_, data + sent,
                                static_cast<int>(std::min<std::size_t>(n - sent, 1U << 30)));
        if (r > 0) {
            sent += static_cast<std::size_t>(r);
            continue;
        }
        const int e = SSL_get_error(ssl_, r);
        ERR_clear_error();
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            if (sent != 0) break;
            errno = EAGAIN;
            return -1;
        }
        if (sent != 0) break;
        if (e != SSL_ERROR_SYSCALL || errno == 0) errno = EPIPE;
        return -1;
    }
    return static_cast<ssize_t>(sent);
}

} // namespace tarry::tls

#include "client_context.hpp"

#include "client_stream.hpp"
#include "file_errors.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tarry::tls {
namespace {

/// The connection's socket as OpenSSL's BIO: recv and send(MSG_NOSIGNAL), so that a write to an
/// upstream that reset the connection is an error, never a SIGPIPE (OpenSSL's own socket BIO
/// calls write()), whatever the embedding program does with the signal.
int fd_of(BIO* b) noexcept {
    return *static_cast<const int*>(BIO_get_data(b));
}

bool try_again() noexcept {
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

BIO_METHOD* socket_method() noexcept {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m =
            BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tarry upstream socket");
        if (m == nullptr) return m;
        BIO_meth_set_read(m, [](BIO* b, char* out, int len) {
            BIO_clear_retry_flags(b);
            const ssize_t n = ::recv(fd_of(b), out, static_cast<std::size_t>(len), 0);
            if (n < 0 && try_again()) BIO_set_retry_read(b);
            return static_cast<int>(n);
        });
        BIO_meth_set_write(m, [](BIO* b, const char* data, int len) {
            BIO_clear_retry_flags(b);
            const ssize_t n = ::send(fd_of(b), data, static_cast<std::size_t>(len), MSG_NOSIGNAL);
            if (n < 0 && try_again()) BIO_set_retry_write(b);
            return static_cast<int>(n);
        });
        BIO_meth_set_ctrl(m, [](BIO*, int cmd, long, void*) -> long {
            return cmd == BIO_CTRL_FLUSH ? 1 : 0; // nothing is held back
        });
        BIO_meth_set_create(m, [](BIO* b) {
            BIO_set_init(b, 1);
            return 1;
        });
        return m;
    }();
    return method;
}

/// Where an SSL finds the slot its new sessions go to.
int slot_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

/// A server gave a session (TLS 1.2: at the handshake's end; TLS 1.3: in a NewSessionTicket
/// after it, read with the first response): the newest is the one offered next.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
    auto* slot = static_cast<session_slot*>(SSL_get_ex_data(ssl, slot_index()));
    if (slot == nullptr) return 0; // not kept: OpenSSL lets go of it
    slot->keep(session);
    return 1; // the reference is the slot's now
}

} // namespace

session_slot::~session_slot() {
    if (session_ != nullptr) SSL_SESSION_free(session_);
}

void session_slot::keep(SSL_SESSION* s) noexcept {
    if (session_ != nullptr) SSL_SESSION_free(session_);
    session_ = s;
}

client_context::client_context(const client_settings& settings) : verify_(settings.verify) {
    const std::string ca = settings.ca_file.string();
    const std::string cert = settings.certificate.string();
    const std::string key = settings.certificate_key.string();
    // Files that cannot be read are told apart before OpenSSL's "system lib".
    if (!ca.empty())
        if (const std::string why = unreadable(ca); !why.empty())
            throw error(settings.ca_file_setting + ": " + ca + ": " + why);
    if (cert.empty() != key.empty())
        throw error(cert.empty()
                        ? settings.key_setting + ": needs " + settings.certificate_setting
                        : settings.certificate_setting + ": needs " + settings.key_setting);
    if (!cert.empty()) {
        if (const std::string why = unreadable(cert); !why.empty())
            throw error(settings.certificate_setting + ": " + cert + ": " + why);
        if (const std::string why = unreadable(key); !why.empty())
            throw error(settings.key_setting + ": " + key + ": " + why);
    }
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) throw error(settings.ca_file_setting + ": " + last_error());
    const auto fail = [&](const std::string& what) {
        SSL_CTX_free(ctx_);
        ctx_ = nullptr;
        throw error(what);
    };
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    // Buffers only while records are in them; a partial SSL_write returns what went, and its
    // retry may come from a moved buffer (a tunnel takes over an exchange's bytes).
    SSL_CTX_set_mode(ctx_, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                               SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // An application that closes without close_notify ends its response as a plain close
    // would; a response cut short is still told by its framing.
    SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    // HTTP/1.1 only: an upstream that would pick h2 must not.
    static constexpr unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    if (SSL_CTX_set_alpn_protos(ctx_, alpn, sizeof alpn) != 0) fail("ALPN: " + last_error());
    // Sessions go to the connection's slot, not to OpenSSL's cache (which a client does not
    // look up by itself anyway).
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx_, on_new_session);
    // The traffic secrets, for tarry's own records to take over once the connection is idle.
    SSL_CTX_set_keylog_callback(ctx_, client_stream::on_secret);
    if (verify_) {
        SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
        if (!ca.empty()) {
            if (SSL_CTX_load_verify_locations(ctx_, ca.c_str(), nullptr) != 1)
                fail(settings.ca_file_setting + ": " + ca +
                     ": no usable certificate (OpenSSL: " + last_error() + ")");
        } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
            fail(settings.ca_file_setting + ": the system's certificate store: " + last_error());
        }
    }
    if (!cert.empty()) {
        // An encrypted key is refused, never asked for a passphrase on a terminal.
        SSL_CTX_set_default_passwd_cb(ctx_, [](char*, int, int, void*) { return 0; });
        if (SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1)
            fail(settings.certificate_setting + ": " + cert + ": not a usable certificate (" +
                 last_error() + ")");
        if (SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1)
            fail(settings.key_setting + ": " + key + ": not a usable private key (" + last_error() +
                 ")");
        if (SSL_CTX_check_private_key(ctx_) != 1) {
            ERR_clear_error();
            fail(settings.key_setting + ": " + key + ": the key does not match the certificate " +
                 cert);
        }
    }
}

client_context::~client_context() {
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

SSL* client_context::new_ssl(const int& fd, const std::string& name,
                             session_slot* slot) const noexcept {
    SSL* ssl = SSL_new(ctx_);
    if (ssl == nullptr) return nullptr;
    in6_addr any{};
    const bool numeric = ::inet_pton(AF_INET, name.c_str(), &any) == 1 ||
                         ::inet_pton(AF_INET6, name.c_str(), &any) == 1;
    BIO* bio = socket_method() != nullptr ? BIO_new(socket_method()) : nullptr;
    if (bio == nullptr) {
        SSL_free(ssl);
        ERR_clear_error();
        return nullptr;
    }
    BIO_set_data(bio, const_cast<int*>(&fd)); // only read
    SSL_set_bio(ssl, bio, bio);               // the SSL owns it now
    bool ok = true;
    if (ok && !name.empty()) {
        if (numeric) { // RFC 6066: no address in SNI; the certificate must name the address
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
        } else {
            ok = SSL_set_tlsext_host_name(ssl, name.c_str()) == 1 &&
                 SSL_set1_host(ssl, name.c_str()) == 1;
            // A wildcard covers one label, as browsers have it.
            SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        }
    }
    if (ok && slot != nullptr) {
        ok = SSL_set_ex_data(ssl, slot_index(), slot) == 1;
        if (ok && slot->get() != nullptr) SSL_set_session(ssl, slot->get());
    }
    if (!ok) {
        SSL_free(ssl);
        ERR_clear_error();
        return nullptr;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

std::string client_context::failure(SSL* ssl, int ssl_error) {
    const long verified = SSL_get_verify_result(ssl);
    if (verified != X509_V_OK) {
        ERR_clear_error();
        return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verified);
    }
    if (ERR_peek_last_error() != 0) return last_error();
    if (ssl_error == SSL_ERROR_SYSCALL)
        return errno != 0 ? std::string(std::strerror(errno)) : "the server closed the connection";
    return "handshake failed";
}

} // namespace tarry::tls

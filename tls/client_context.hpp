#pragma once

// TLS as a client, for the proxy's connections to its upstream servers. OpenSSL drives one SSL
// object per connection on the connection's own non-blocking socket (its owner retries at the
// socket's readiness edges); the SSL_CTX here holds what every connection to one upstream
// shares: verification (on by default, against the system's store or a CA file), an optional
// client certificate, ALPN http/1.1 and the session callback that feeds a session_slot.

#include "context.hpp" // tls::error

#include <filesystem>
#include <string>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_session_st SSL_SESSION;

namespace tarry::tls {

/// What an upstream's TLS is configured with. The settings' names prefix every message
/// ("upstream.app.tls_ca_file: /etc/ca.pem: missing (no such file)").
struct client_settings {
    std::filesystem::path ca_file;     ///< PEM; empty: the system's store (OpenSSL's default paths)
    bool verify = true;                ///< false: any certificate is taken (never by default)
    std::filesystem::path certificate; ///< a client certificate (mTLS); empty: none
    std::filesystem::path certificate_key; ///< its key
    std::string ca_file_setting = "tls_ca_file";
    std::string certificate_setting = "tls_client_certificate";
    std::string key_setting = "tls_client_certificate_key";
};

/// The last session a server gave on any connection to it, offered on the next connect
/// (resumption: an abbreviated handshake, no certificate sent or verified again). One per server
/// per worker; not shared across threads.
class session_slot {
public:
    session_slot() = default;
    session_slot(const session_slot&) = delete;
    session_slot& operator=(const session_slot&) = delete;
    ~session_slot();

    /// Takes the reference `s` holds; the one kept before is let go.
    void keep(SSL_SESSION* s) noexcept;
    [[nodiscard]] SSL_SESSION* get() const noexcept { return session_; }

private:
    SSL_SESSION* session_ = nullptr;
};

/// One upstream's client SSL_CTX. TLS 1.2 and 1.3, peer verification unless turned off, the
/// record buffers released whenever a connection has nothing in them (an idle pooled connection
/// keeps none), unexpected EOF read as a close (the response parser tells a cut response).
class client_context {
public:
    /// Throws tls::error naming the setting, the file and the reason.
    explicit client_context(const client_settings& settings);
    client_context(const client_context&) = delete;
    client_context& operator=(const client_context&) = delete;
    ~client_context();

    /// A client SSL on the socket `fd` (its owner's descriptor, read at each socket call: it
    /// must outlive the SSL), for a server verified as `name` (a DNS name: sent as SNI too; a
    /// numeric address: matched against the certificate's IP addresses, no SNI), offering the
    /// session in `slot` and giving it the server's new ones. Null when OpenSSL is out of memory.
    /// `slot` must outlive the SSL.
    [[nodiscard]] SSL* new_ssl(const int& fd, const std::string& name,
                               session_slot* slot) const noexcept;

    /// Why a handshake failed, in words, for the error log: the verification's reason
    /// ("certificate has expired", "self-signed certificate", "hostname mismatch"), else
    /// OpenSSL's ("tlsv13 alert certificate required"). Clears the thread's error queue.
    [[nodiscard]] static std::string failure(SSL* ssl, int ssl_error);

    [[nodiscard]] bool verifies() const noexcept { return verify_; }

private:
    SSL_CTX* ctx_ = nullptr;
    bool verify_ = true;
};

} // namespace tarry::tls

#pragma once

#include "ticket_keys.hpp"

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace tarry::tls {

/// A certificate (PEM, with its chain) and its key, for the server names it answers.
struct certificate_files {
    std::vector<std::string> names; ///< "example.com", "*.example.com"; empty: the default only
    std::filesystem::path certificate;
    std::filesystem::path key;
    /// The settings that name them, for messages: "tls_certificate" and "tls_certificate_key",
    /// or "tls[2].certificate" and "tls[2].certificate_key".
    std::string certificate_setting;
    std::string key_setting;
};

/// The Mozilla "intermediate" profile's TLS 1.2 suites (those with forward secrecy and an
/// AEAD; the DHE ones are left out, as the profile allows, so no DH parameters are needed).
inline constexpr const char* intermediate_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

struct context_settings {
    /// The first is the default, for a client that sends no name or one no entry has.
    std::vector<certificate_files> certificates;
    std::string ciphers = intermediate_ciphers; ///< TLS 1.2
    /// ALPN: h2 first when the client offers it, then http/1.1.
    bool http2 = false;
};

/// Whether the kernel can do TLS records itself (kTLS: the "tls" upper-layer protocol is
/// available), which sendfile through TLS needs. Read once.
bool kernel_tls_available() noexcept;

/// A certificate or key that cannot be used: one line naming the setting, the file and the reason
/// in words ("tls_certificate_key: /etc/k.pem: permission denied for user tarry").
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The server's TLS configuration as OpenSSL holds it: one SSL_CTX per certificate, chosen by
/// SNI. TLS 1.2 and 1.3 only, ALPN http/1.1 (h2 first with http2), stateless session tickets sealed
/// with the shared ticket_keys. Built whole or not at all (a reload with a bad key keeps the
/// running one).
class context {
public:
    /// Throws tls::error.
    context(const context_settings& settings, std::shared_ptr<ticket_keys> keys);
    context(const context&) = delete;
    context& operator=(const context&) = delete;
    ~context();

    /// A server-side SSL in accept state, without a BIO (the handshake gives it one); null when
    /// OpenSSL is out of memory.
    [[nodiscard]] SSL* new_ssl() const noexcept;
    /// Warnings found while loading (a certificate past its expiry), one line each.
    [[nodiscard]] const std::vector<std::string>& warnings() const noexcept { return warnings_; }
    [[nodiscard]] ticket_keys& keys() const noexcept { return *keys_; }

    /// The SSL_CTX for a server name (SNI): an exact name, then a wildcard, then the default. A
    /// trailing dot (a fully qualified "example.com.") is ignored, as nginx does.
    [[nodiscard]] SSL_CTX* for_name(const char* name) const noexcept;
    /// Which certificate `ctx` is, in the order of the settings (0: the default), for a request
    /// to check that its Host belongs to the certificate its connection was given.
    [[nodiscard]] std::uint8_t index_of(const SSL_CTX* ctx) const noexcept;

private:
    struct named {
        std::string name; ///< lower case; "*.example.com" matches one label
        SSL_CTX* ctx;
    };
    SSL_CTX* load(const certificate_files& files);

    std::shared_ptr<ticket_keys> keys_;
    bool http2_ = false;
    std::vector<SSL_CTX*> ctxs_; ///< the first is the default
    std::vector<named> names_;
    std::vector<std::string> warnings_;
};

} // namespace tarry::tls

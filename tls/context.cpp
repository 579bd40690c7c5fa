#include "context.hpp"

#include "file_errors.hpp"
#include "handshake.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>

namespace tarry::tls {
namespace {

/// The start of a readable file (PEM headers are all the messages look for).
std::string head_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text(std::size_t{64} << 10, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

/// Why OpenSSL did not take `path` as a certificate chain, in words.
std::string not_a_certificate(const std::string& path) {
    const std::string openssl = last_error();
    const std::string text = head_of(path);
    if (text.empty()) return "not a certificate (the file is empty)";
    const bool cert = text.find("-----BEGIN CERTIFICATE-----") != std::string::npos;
    if (!cert && text.find("PRIVATE KEY-----") != std::string::npos)
        return "not a certificate (it holds a private key)";
    if (!cert) return "not a certificate (no PEM CERTIFICATE block; OpenSSL: " + openssl + ")";
    return "not a usable certificate (OpenSSL: " + openssl + ")";
}

/// Why OpenSSL did not take `path` as a private key, in words.
std::string not_a_key(const std::string& path) {
    const std::string openssl = last_error();
    const std::string text = head_of(path);
    if (text.empty()) return "not a private key (the file is empty)";
    const bool key = text.find("PRIVATE KEY-----") != std::string::npos;
    if (text.find("ENCRYPTED PRIVATE KEY-----") != std::string::npos ||
        text.find("Proc-Type: 4,ENCRYPTED") != std::string::npos)
        return "an encrypted private key (tarry reads keys without a passphrase)";
    if (!key && text.find("-----BEGIN CERTIFICATE-----") != std::string::npos)
        return "not a private key (it holds a certificate)";
    if (!key) return "not a private key (no PEM PRIVATE KEY block; OpenSSL: " + openssl + ")";
    return "not a usable private key (OpenSSL: " + openssl + ")";
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned inlen, void*) {
    // HTTP/1.1, or HTTP/1.0 from a client that offers only it (served as HTTP/1.1's older
    // sibling, as nginx does); a client that offers ALPN without either is refused
    // (no_application_protocol), as nginx does; a client that offers none gets HTTP/1.1.
    const unsigned char* older = nullptr;
    for (unsigned i = 0; i < inlen;) {
        const unsigned len = in[i];
        if (i + 1 + len > inlen) break;
        if (len == 8 && std::memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        if (len == 8 && std::memcmp(in + i + 1, "http/1.0", 8) == 0) older = in + i + 1;
        i += 1 + len;
    }
    if (older == nullptr) return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = older;
    *outlen = 8;
    return SSL_TLSEXT_ERR_OK;
}

/// With HTTP/2 on: h2 if the client offers it (anywhere in its list: the server's preference
/// decides, RFC 7301 3.2), else http/1.1 as above.
int select_alpn_h2(SSL* ssl, const unsigned char** out, unsigned char* outlen,
                   const unsigned char* in, unsigned inlen, void* arg) {
    for (unsigned i = 0; i < inlen;) {
        const unsigned len = in[i];
        if (i + 1 + len > inlen) break;
        if (len == 2 && std::memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return select_alpn(ssl, out, outlen, in, inlen, arg);
}

int select_certificate(SSL* ssl, int*, void* arg) {
    const auto* self = static_cast<const context*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (name == nullptr) return SSL_TLSEXT_ERR_OK; // the default
    SSL_CTX* ctx = self->for_name(name);
    if (ctx != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, ctx);
    return SSL_TLSEXT_ERR_OK;
}

int ticket_key(SSL* ssl, unsigned char name[16], unsigned char iv[16], EVP_CIPHER_CTX* cipher,
               EVP_MAC_CTX* mac, int enc) {
    const auto* self = static_cast<const context*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
    try {
        const int r = self->keys().crypt(name, iv, cipher, mac, enc, ticket_keys::clock::now());
        // A TLS 1.3 client uses a ticket once (RFC 8446, C.4): a resumption asks for new ones,
        // as nginx's callback does ("renew if TLSv1.3").
        if (enc == 0 && r == 1 && SSL_version(ssl) == TLS1_3_VERSION) return 2;
        return r;
    } catch (...) {
        return -1;
    }
}

} // namespace

bool kernel_tls_available() noexcept {
    static const bool available = [] {
        std::FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_available_ulp", "r");
        if (f == nullptr) return false;
        char line[256] = {};
        const bool has = std::fgets(line, sizeof line, f) != nullptr &&
                         std::string_view(line).find("tls") != std::string_view::npos;
        std::fclose(f);
        return has;
    }();
    return available;
}

context::context(const context_settings& settings, std::shared_ptr<ticket_keys> keys)
    : keys_(std::move(keys)), http2_(settings.http2) {
    if (settings.certificates.empty()) throw error("tls_certificate: needed by tls_listen");
    try {
        for (const certificate_files& files : settings.certificates) {
            SSL_CTX* ctx = load(files);
            ctxs_.push_back(ctx);
            if (SSL_CTX_set_cipher_list(ctx, settings.ciphers.c_str()) != 1)
                throw error("tls_ciphers: " + last_error());
            for (const std::string& n : files.names)
                names_.push_back({lower(n), ctx});
        }
    } catch (...) {
        for (SSL_CTX* c : ctxs_)
            SSL_CTX_free(c);
        throw;
    }
}

context::~context() {
    for (SSL_CTX* c : ctxs_)
        SSL_CTX_free(c);
}

SSL_CTX* context::load(const certificate_files& files) {
    const std::string cert = files.certificate.string();
    const std::string key = files.key.string();
    // Files that cannot be read are told apart before OpenSSL's "system lib".
    if (const std::string why = unreadable(cert); !why.empty())
        throw error(files.certificate_setting + ": " + cert + ": " + why);
    if (const std::string why = unreadable(key); !why.empty())
        throw error(files.key_setting + ": " + key + ": " + why);
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) throw error(files.certificate_setting + ": " + last_error());
    const auto fail = [&](const std::string& what) {
        SSL_CTX_free(ctx);
        throw error(what);
    };
    // An encrypted key is refused, never asked for a passphrase on a terminal.
    SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void*) { return 0; });
    if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1)
        fail(files.certificate_setting + ": " + cert + ": " + not_a_certificate(cert));
    const std::string mismatch = ": the key does not match the certificate " + cert;
    if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
        // (OpenSSL checks the key against the certificate as it takes it.)
        const unsigned long e = ERR_peek_last_error();
        if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            fail(files.key_setting + ": " + key + mismatch);
        }
        fail(files.key_setting + ": " + key + ": " + not_a_key(key));
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        fail(files.key_setting + ": " + key + mismatch);
    }
    if (X509* x = SSL_CTX_get0_certificate(ctx); x != nullptr) {
        const ASN1_TIME* not_after = X509_get0_notAfter(x);
        if (X509_cmp_current_time(not_after) < 0) {
            std::string when = "?";
            if (BIO* b = BIO_new(BIO_s_mem()); b != nullptr) {
                ASN1_TIME_print(b, not_after);
                char* p = nullptr;
                const long n = BIO_get_mem_data(b, &p);
                when.assign(p, static_cast<std::size_t>(n));
                BIO_free(b);
            }
            warnings_.push_back(files.certificate_setting + ": the certificate " + cert +
                                " expired on " + when);
        }
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    // Idle connections hold no OpenSSL buffers; writes report what went out, record by record.
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set1_groups_list(ctx, "X25519:prime256v1:secp384r1");
    // Resumption by stateless tickets only: no per-session memory on the server.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_timeout(ctx, static_cast<long>(keys_->lifetime().count()));
    static const unsigned char sid[] = "tarry";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
    SSL_CTX_set_app_data(ctx, this);
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key);
    SSL_CTX_set_alpn_select_cb(ctx, http2_ ? select_alpn_h2 : select_alpn, nullptr);
    SSL_CTX_set_tlsext_servername_callback(ctx, select_certificate);
    SSL_CTX_set_tlsext_servername_arg(ctx, this);
    SSL_CTX_set_keylog_callback(ctx, handshake::on_secret);
    return ctx;
}

SSL_CTX* context::for_name(const char* name) const noexcept {
    try {
        std::string n = lower(name);
        if (!n.empty() && n.back() == '.') n.pop_back(); // "example.com." is example.com
        for (const named& e : names_)
            if (e.name == n) return e.ctx;
        const auto dot = n.find('.');
        if (dot != std::string::npos) {
            const std::string wildcard = "*" + n.substr(dot);
            for (const named& e : names_)
                if (e.name == wildcard) return e.ctx;
        }
    } catch (...) {
    }
    return ctxs_.front();
}

std::uint8_t context::index_of(const SSL_CTX* ctx) const noexcept {
    const auto at = std::find(ctxs_.begin(), ctxs_.end(), ctx);
    return at == ctxs_.end() ? 0 : static_cast<std::uint8_t>(at - ctxs_.begin());
}

SSL* context::new_ssl() const noexcept {
    SSL* ssl = SSL_new(ctxs_.front());
    if (ssl == nullptr) return nullptr;
    SSL_set_accept_state(ssl);
    return ssl;
}

} // namespace tarry::tls

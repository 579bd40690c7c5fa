#include "handshake_failure.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace tarry::tls {

handshake_failure classify_failure() noexcept {
    const unsigned long e = ERR_peek_last_error();
    if (ERR_GET_LIB(e) != ERR_LIB_SSL) return handshake_failure::other;
    const int reason = ERR_GET_REASON(e);
    // Alerts the client sent are reported as SSL_R_*ALERT* reasons (1000 plus the alert).
    if (reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256)
        return handshake_failure::peer_alert;
    switch (reason) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_UNKNOWN_PROTOCOL:
        return handshake_failure::protocol_version;
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
        return handshake_failure::no_shared_cipher;
    case SSL_R_NO_APPLICATION_PROTOCOL:
        return handshake_failure::no_alpn;
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
        return handshake_failure::plain_http;
    case SSL_R_UNEXPECTED_MESSAGE:
    case SSL_R_UNEXPECTED_RECORD:
    case SSL_R_LENGTH_MISMATCH:
    case SSL_R_BAD_PACKET_LENGTH:
    case SSL_R_RECORD_LENGTH_MISMATCH:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_BAD_EXTENSION:
    case SSL_R_BAD_LENGTH:
        return handshake_failure::malformed;
    default:
        return handshake_failure::other;
    }
}

} // namespace tarry::tls

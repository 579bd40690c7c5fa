#pragma once

#include "context.hpp"
#include "handshake_failure.hpp"
#include "record_protection.hpp"

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

typedef struct ssl_st SSL;

namespace tarry::tls {

/// What a step of the handshake needs next. plain_http: the bytes are not TLS, to be answered
/// in plain HTTP (400), failure() saying whether they begin an HTTP request (plain_http) or not
/// (not_tls).
enum class step : std::uint8_t { done, want_read, want_write, failed, plain_http };

/// The cipher suites a connection can be counted under (metrics): TLS 1.3's three, the
/// intermediate profile's six TLS 1.2 ones, and anything else.
inline constexpr std::array<std::string_view, 10> suite_names{
    "TLS_AES_128_GCM_SHA256",       "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",  "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",  "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",  "other"};

/// Where OpenSSL's reads and writes go: the owner's socket, with the socket calls' contract
/// (bytes, 0 at the end, -1 with errno; EAGAIN: wait). The handshake makes no I/O of its own.
struct transport {
    int (*read)(void* owner, char* out, int len) noexcept;
    int (*write)(void* owner, const char* data, int len) noexcept;
};

/// What a finished handshake chose, kept by its connection once OpenSSL's object is gone.
struct handshake_outcome {
    handshake_failure failure = handshake_failure::other; ///< why it failed, if it did
    std::uint8_t suite = suite_names.size() - 1;          ///< index in suite_names
    std::uint8_t certificate = 0;                         ///< context::index_of the one SNI chose
    bool resumed = false;
    bool h2 = false; ///< ALPN chose h2
};

/// The traffic secrets a TLS 1.3 handshake derived, for records of our own to take over: `client`
/// protects what is read, `server` what is written, OpenSSL having sealed `server_sealed`
/// records under it already (its session tickets).
struct traffic_secrets {
    aead algorithm = aead::aes_128_gcm;
    std::uint8_t client[48];
    std::uint8_t server[48];
    std::uint8_t client_len = 0;
    std::uint8_t server_len = 0;
    std::uint64_t server_sealed = 0;
    ~traffic_secrets();
};

/// OpenSSL's server handshake, reading and writing through a BIO of ours that calls the owner's
/// transport. As the handshake derives the application traffic secrets, the key log callback
/// (installed on the context's SSL_CTXs) hands them over, and the message callback counts the
/// records OpenSSL seals under the server's (its session tickets), which is where our sequence
/// number starts: after a TLS 1.3 handshake, take_secrets() gives them up and OpenSSL's object is
/// freed. After a TLS 1.2 one, OpenSSL's object goes on carrying the records (read(), write()),
/// its buffers released while idle (SSL_MODE_RELEASE_BUFFERS).
///
/// Lives where it is made (the BIO and the callbacks know its address).
class handshake {
public:
    /// A handshake with `ctx`'s certificates (kept for its callbacks until it is over), reading
    /// and writing through `io` with `owner`. Throws std::bad_alloc.
    handshake(std::shared_ptr<const context> ctx, const transport& io, void* owner);
    handshake(const handshake&) = delete;
    handshake& operator=(const handshake&) = delete;
    ~handshake();

    /// OpenSSL's object (kilobytes), once the ClientHello's first byte is here: false when out
    /// of memory.
    bool begin() noexcept;
    [[nodiscard]] bool begun() const noexcept { return ssl_ != nullptr; }
    /// One step of OpenSSL's handshake; when done, `out` says what it chose, and on failure why.
    step advance(handshake_outcome& out) noexcept;
    /// After a TLS 1.3 handshake, its traffic secrets; OpenSSL's object is freed. False for
    /// TLS 1.2 (or a suite our records do not cover): OpenSSL's object carries the records.
    bool take_secrets(traffic_secrets& out) noexcept;

    // --- TLS 1.2: OpenSSL's records, with the socket calls' contract ---

    /// Up to `n` bytes of plaintext; short only when OpenSSL wants to read.
    ssize_t read(char* buf, std::size_t n) noexcept;
    /// Up to `n` bytes, SSL_write's retry contract.
    ssize_t write(const char* buf, std::size_t n) noexcept;
    /// Whether an end or error was read behind the bytes read() returned.
    [[nodiscard]] bool ended() const noexcept { return ended_; }
    /// Whether plaintext, or a record not yet opened, waits in OpenSSL's object.
    [[nodiscard]] bool plaintext_waiting() const noexcept;
    /// close_notify, if the handshake is over.
    void close_notify() noexcept;

    /// True once after a burst of concurrent handshakes on this thread is over (none in
    /// progress now, at least 64 at the peak): the time to give the heap they used back.
    static bool burst_over() noexcept;

    /// For SSL_CTX_set_keylog_callback: takes the traffic secrets of a handshake in progress.
    static void on_secret(const SSL* ssl, const char* line) noexcept;
    /// For SSL_set_msg_callback: counts the records OpenSSL seals under the application secret.
    static void on_record(int write_p, int version, int content_type, const void* buf,
                          std::size_t len, SSL* ssl, void* arg) noexcept;

    /// The BIO's calls.
    int bio_read(char* out, int len) noexcept { return io_->read(owner_, out, len); }
    int bio_write(const char* data, int len) noexcept { return io_->write(owner_, data, len); }
    /// Whether a TLS 1.3 client's Finished is in: what OpenSSL writes now is session tickets.
    [[nodiscard]] bool writing_tickets() const noexcept;

private:
    struct capture;
    /// OpenSSL's handshake state is gone (done, failed or cut short): counted for burst_over().
    void ended_handshake() noexcept;

    SSL* ssl_ = nullptr;
    const transport* io_;
    void* owner_;
    std::unique_ptr<capture> hs_; ///< only while the handshake runs
    bool counted_ = false;        ///< a handshake in progress, counted for burst_over()
    bool ended_ = false;          ///< OpenSSL's read ended behind bytes returned (read())
};

} // namespace tarry::tls

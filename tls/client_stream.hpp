#pragma once

#include "handshake.hpp" // step
#include "stream.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

typedef struct ssl_st SSL;

namespace tarry::tls {

class client_context;
class session_slot;

/// One upstream connection's TLS as a client, on its owner's non-blocking socket, with the
/// socket calls' contract: bytes, 0 at the end, -1 with errno (EAGAIN: wait for the next edge).
///
/// OpenSSL's object makes the handshake and carries the records of the first exchange, which is
/// where a TLS 1.3 server's NewSessionTickets come: OpenSSL reads them and hands the sessions to
/// the pool's slot, for the next connection's resumption. When the connection first goes idle
/// (idle()), a TLS 1.3 connection's records are taken over, as the server side does at the end
/// of its handshake: the traffic secrets (from the key log callback) and the count of records
/// each way since the handshake (from the message callback) make a tls::stream's records, and
/// OpenSSL's object is freed. An idle pooled connection then keeps two keys and two sequence
/// numbers, not OpenSSL's 14 KB; a ticket that comes later is skipped. A connection OpenSSL
/// cannot hand over (TLS 1.2, a KeyUpdate seen, records buffered) keeps its object, its buffers
/// released while idle (SSL_MODE_RELEASE_BUFFERS).
class client_stream {
public:
    client_stream() noexcept;
    client_stream(const client_stream&) = delete;
    client_stream& operator=(const client_stream&) = delete;
    ~client_stream();

    /// OpenSSL's client object on the socket `fd` (read at each call: it must outlive this),
    /// for a server verified as `name`, offering the session in `slot`; false when out of
    /// memory.
    bool start(const client_context& ctx, const int& fd, const std::string& name,
               session_slot* slot) noexcept;
    /// One step of the handshake: call again on the edge it asks for. When it failed, `why`
    /// says why in words (the verification's reason, else OpenSSL's).
    step handshake(std::string& why) noexcept;
    /// Whether the handshake resumed a session (after it is done).
    [[nodiscard]] bool resumed() const noexcept { return resumed_; }

    /// Up to `n` bytes of plaintext.
    ssize_t recv(char* out, std::size_t n) noexcept;
    /// Whether a recv() that returned fewer bytes than asked left nothing in the socket (so that
    /// an edge-triggered caller may wait for the next edge): with tarry's own records, unless
    /// the peer's end was read behind the bytes; with OpenSSL's, never (a read returns one
    /// record's bytes).
    [[nodiscard]] bool short_read_drains() const noexcept;
    /// Sends `n` bytes; returns how many went (short only when the socket is full). A retry
    /// starts with the bytes not yet reported, as SSL_write's does.
    ssize_t send(const char* data, std::size_t n) noexcept;
    /// Whether plaintext, or records not yet opened, wait here.
    [[nodiscard]] bool input_waiting() const noexcept;
    /// Whether plaintext waits here (not a record, or part of one, that may carry nothing for
    /// the application: a ticket, a KeyUpdate cut over segments behind a response).
    [[nodiscard]] bool plaintext_waiting() const noexcept;
    /// The connection goes idle, nothing in flight: tarry's own records from here if OpenSSL's
    /// can be taken over; the record buffers given back.
    void idle() noexcept;
    /// close_notify, if the handshake is over (the caller's FIN follows at once).
    void close_notify() noexcept;
    /// Whether the records are tarry's own, OpenSSL's object gone.
    [[nodiscard]] bool own_records() const noexcept { return ssl_ == nullptr && finished_; }

    /// Out of this thread's burst of new connections (burst_over()): it went idle once, became
    /// a tunnel that may never be idle, or is freed.
    void settled() noexcept;

    /// For the client SSL_CTX's key log callback: a handshake's traffic secrets.
    static void on_secret(const SSL* ssl, const char* line) noexcept;

    /// True once after a burst of connections through their handshakes and first exchanges
    /// on this thread is over (none such now, at least 64 at once at the peak): OpenSSL's
    /// objects, freed as each went idle, leave heap glibc keeps resident under the pooled
    /// connections: the time to give it back (no close comes to decide a trim).
    static bool burst_over() noexcept;

private:
    struct capture;
    /// For SSL_set_msg_callback: counts the records each way since the handshake.
    static void on_record(int write_p, int version, int content_type, const void* buf,
                          std::size_t len, SSL* ssl, void* arg) noexcept;
    /// OpenSSL's records handed over to records_, if they can be.
    void take_over() noexcept;

    SSL* ssl_ = nullptr;
    std::unique_ptr<capture> capture_; ///< while OpenSSL's object lives
    stream records_;                   ///< after take_over()
    const int* fd_ = nullptr;

    bool finished_ = false; ///< the handshake is done
    bool resumed_ = false;
    bool counted_ = false; ///< in this thread's burst
};

} // namespace tarry::tls

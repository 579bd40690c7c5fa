#pragma once

#include "context.hpp"
#include "handshake.hpp"
#include "record_protection.hpp"
#include "record_reader.hpp"
#include "record_writer.hpp"

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <variant>

namespace tarry::tls {

/// One client's TLS, driven on its non-blocking socket by the connection's own readiness
/// edges, with the socket calls' contract: recv() and send() return bytes, 0 at the end, or -1
/// with errno (EAGAIN: wait for the next edge).
///
/// The stream alone touches the socket; what it holds is in one of two modes. The handshake is
/// OpenSSL's (tls/handshake), reading and writing through the stream's record buffer. After a
/// TLS 1.3 one, the traffic secrets are taken and OpenSSL's object is freed: the records are
/// then tarry's own, opened by a record_reader and sealed by a record_writer, neither of which
/// makes a system call, so an idle connection keeps two secrets, two keys and two sequence
/// numbers, not OpenSSL's kilobytes. Everything TLS 1.3 allows after the handshake is handled:
/// KeyUpdate both ways, alerts, close_notify, records up to the size limit; the rest
/// (post-handshake messages a server never asks for, change_cipher_spec, runs of records that
/// carry nothing past the reader's limits) is answered with its alert and a close. A TLS 1.2
/// connection keeps its OpenSSL object, buffers released while idle (SSL_MODE_RELEASE_BUFFERS).
///
///     socket --recv--> buffers.in --record_reader--> plaintext, events --> the caller
///     socket <--send-- buffers.out <--record_writer-- plaintext, alerts, KeyUpdates
///
/// Buffers for records in and out are taken from a per-thread free list while bytes move and
/// given back by release() when nothing is pending.
class stream {
public:
    stream() noexcept;
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;
    ~stream();

    /// Prepares a server handshake on `fd` with `ctx`'s certificates (kept for its callbacks
    /// until the handshake is over); false when out of memory. OpenSSL's object is made by the
    /// first handshake() that finds the ClientHello's first byte.
    bool start(std::shared_ptr<const context> ctx, int fd) noexcept;
    /// Whether start() was called.
    [[nodiscard]] bool prepared() const noexcept { return fd_ >= 0; }
    /// Skips the handshake: records protected with these traffic secrets from the start, as
    /// after a TLS 1.3 handshake (`client` protects what is read). For tests and fuzzing.
    bool start_with_secrets(aead a, std::span<const std::uint8_t> client,
                            std::span<const std::uint8_t> server) noexcept {
        return start_records(a, client, 0, server, 0, false);
    }
    /// Takes over the records of a TLS 1.3 connection whose handshake someone else made (the
    /// client side's OpenSSL object, client_stream): what is read is protected by `in` and
    /// `in_seq` records were opened under it, what is written by `out` after `out_seq`.
    /// `from_server`: the peer is a server (its NewSessionTickets are skipped).
    bool start_records(aead a, std::span<const std::uint8_t> in, std::uint64_t in_seq,
                       std::span<const std::uint8_t> out, std::uint64_t out_seq,
                       bool from_server) noexcept;
    /// One step of the handshake on `fd`: call again on the edge it asks for.
    step handshake(int fd) noexcept;
    [[nodiscard]] handshake_failure failure() const noexcept { return outcome_.failure; }
    [[nodiscard]] bool resumed() const noexcept { return outcome_.resumed; }
    /// Index in suite_names of the negotiated suite (after the handshake).
    [[nodiscard]] std::uint8_t suite() const noexcept { return outcome_.suite; }
    /// Whether ALPN chose h2 (after the handshake).
    [[nodiscard]] bool h2() const noexcept { return outcome_.h2; }
    /// The certificate SNI chose (context::index_of), after the handshake.
    [[nodiscard]] std::uint8_t certificate() const noexcept { return outcome_.certificate; }
    /// Whether the records are tarry's own (TLS 1.3), not an OpenSSL object's.
    [[nodiscard]] bool own_records() const noexcept {
        return std::holds_alternative<records>(mode_);
    }
    /// The limit on records without data this connection went past (its recv() failed, EPROTO).
    [[nodiscard]] noop_limit limit_reached() const noexcept;

    /// Up to `n` bytes of plaintext. Returns short only once the socket said EAGAIN (or the
    /// peer ended): an edge-triggered caller may wait for the next edge. A protocol error is
    /// answered with its alert and reported as -1, errno EPROTO; a fatal alert from the peer
    /// as -1, ECONNRESET.
    ssize_t recv(int fd, char* buf, std::size_t n) noexcept;
    /// Sends `n` bytes of plaintext; returns how many are on the wire (short only when the
    /// socket is full). Records sealed but not yet sent stay here: the next call must start
    /// with the same bytes, as SSL_write's retry does.
    ssize_t send(int fd, const char* buf, std::size_t n) noexcept;
    /// Whether plaintext is waiting here, already read from the socket.
    [[nodiscard]] bool plaintext_waiting() const noexcept;
    /// Whether anything read from the socket waits here: plaintext, or records (or part of
    /// one) not yet opened.
    [[nodiscard]] bool input_waiting() const noexcept;
    /// Whether the peer's end (close_notify, the TCP end) or an error was read behind the bytes
    /// recv() returned: the next recv() reports it at once, and no edge of the socket will come
    /// for it (a short read does not mean the socket had nothing more).
    [[nodiscard]] bool end_waiting() const noexcept;
    /// close_notify, sent if the socket takes it now (the end of our output: a half-close). The
    /// caller shuts the socket down (or closes it) right after: the alert goes with the FIN.
    void close_notify(int fd) noexcept;
    /// Gives the record buffers back when nothing waits in them (the connection is idle).
    void release() noexcept;
    /// Frees the buffers this thread keeps for reuse.
    static void release_kept() noexcept;
    /// True once after a burst of concurrent handshakes on this thread is over (none in
    /// progress now, at least 64 at the peak): the time to give the heap they used back.
    static bool burst_over() noexcept;

    /// KeyUpdates received and sent over this thread's life (metrics).
    static std::uint64_t key_updates() noexcept;

    /// OpenSSL's reads (the handshake; a TLS 1.2 connection's records): served from the
    /// record buffer, filled by one recv of as much as the socket has (see read_for_openssl).
    int read_for_openssl(char* out, int len) noexcept;
    /// OpenSSL's writes: to the socket at once, but a TLS 1.3 handshake's session tickets are
    /// held in the record buffer and go out with the first response.
    int write_for_openssl(const char* data, int len) noexcept;

public:
    struct buffers;

private:
    /// tarry's own records (TLS 1.3): all an idle connection keeps of TLS.
    struct records {
        record_reader reader;
        record_writer writer;
    };
    /// The records of OpenSSL's object (TLS 1.2), without a stream's mode (not started).
    ssize_t openssl_recv(char* buf, std::size_t n) noexcept;
    ssize_t openssl_send(const char* buf, std::size_t n) noexcept;
    /// Ends reading on an error: `got` bytes read before it are returned first.
    ssize_t fail_recv(bool by_peer, std::size_t got) noexcept;
    /// Our fatal alert, sent if the socket takes it now.
    void fail_with(records& r, std::uint8_t alert, int fd) noexcept;
    /// Sends what is sealed; the caller's bytes whose records all went out are counted in the
    /// buffers' `sent`, for send() to report. False when the socket took less (errno set).
    /// `flags` go to send(2) (MSG_MORE when a FIN follows at once, to travel with it).
    bool flush(int fd, int flags = 0) noexcept;
    buffers& buf();
    /// The buffers for a recv or a send; null, errno set, when this direction is `closed`
    /// (`closed_errno`) or memory is out (ENOMEM).
    buffers* buffers_for(bool closed, int closed_errno) noexcept;

    /// Before start(): nothing; the handshake (and after a TLS 1.2 one, its records); or
    /// tarry's own records after a TLS 1.3 one.
    std::variant<std::monostate, tls::handshake, records> mode_;
    std::unique_ptr<buffers> buf_;
    int fd_ = -1; ///< the socket OpenSSL's reads come from (read_for_openssl)
    handshake_outcome outcome_;
    bool peer_closed_ = false; ///< close_notify (or the TCP end) came in
    bool broken_ = false;      ///< a fatal alert went out or came in: nothing more is read or sent
    bool peer_broke_ = false;  ///< it came in (recv reports ECONNRESET, not EPROTO)
    bool sent_close_ = false;  ///< our close_notify went out: nothing more is sent (we still read)
    bool fill_short_ = false;  ///< OpenSSL's last read emptied the socket (read_for_openssl)
};

} // namespace tarry::tls

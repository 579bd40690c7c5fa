// Who a connection's client is: the socket's peer, or the one a balancer's PROXY header names.
#include "connection.hpp"

#include "client_refusal.hpp"
#include "proxy_protocol.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <array>
#include <cstring>

namespace tarry::server {

namespace {

/// `a` in dotted decimal, NUL-terminated, into `out` (at least 16 bytes).
void write_ipv4(in_addr a, char* out) noexcept {
    const auto* b = reinterpret_cast<const unsigned char*>(&a.s_addr); // network order
    for (int i = 0; i < 4; ++i) {
        unsigned v = b[i];
        if (v >= 100) *out++ = static_cast<char>('0' + v / 100);
        if (v >= 10) *out++ = static_cast<char>('0' + v / 10 % 10);
        *out++ = static_cast<char>('0' + v % 10);
        *out++ = i < 3 ? '.' : '\0';
    }
}

} // namespace

std::string_view connection::peer() noexcept {
    // Asked for by the access log and the few handlers that want it (a proxy's
    // X-Forwarded-For): looked up and kept on the first ask, so idle connections hold no
    // address. The text goes with the buffers when the connection is idle; an IPv4 address
    // stays in 4 bytes of the object, so a keep-alive connection makes the system call once,
    // not once per request (IPv6: once per busy spell). A PROXY header's client replaces the
    // socket's peer (the balancer) for good.
    if (io_ && io_->peer[0] != '\0') return io_->peer;
    sockaddr_storage a{};
    const void* addr = nullptr;
    if (peer_v6_) {
        const auto found = ctx_.proxied_v6.find(this);
        if (found == ctx_.proxied_v6.end()) return {};
        a.ss_family = AF_INET6;
        addr = &found->second;
    } else if (peer_v4_known_) {
        a.ss_family = AF_INET;
        reinterpret_cast<sockaddr_in*>(&a)->sin_addr.s_addr = peer_v4_;
        addr = &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr;
    } else {
        socklen_t len = sizeof a;
        if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return {};
        if (a.ss_family == AF_INET) {
            addr = &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr;
            peer_v4_ = reinterpret_cast<const sockaddr_in*>(&a)->sin_addr.s_addr;
            peer_v4_known_ = true;
        } else if (a.ss_family == AF_INET6) {
            addr = &reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr;
        } else if (a.ss_family == AF_UNIX) {
            return "unix:"; // what nginx logs for a client of a Unix socket
        }
    }
    if (addr == nullptr) return {};
    char* peer = nullptr;
    try {
        peer = io().peer;
    } catch (...) {
        return {};
    }
    if (a.ss_family == AF_INET) {
        // Every proxied request of a keep-alive connection asks anew (the text goes with the
        // buffers between requests): glibc's inet_ntop formats through sprintf, ten times this.
        write_ipv4(*static_cast<const in_addr*>(addr), peer);
        return peer;
    }
    if (::inet_ntop(a.ss_family, addr, peer, INET6_ADDRSTRLEN) == nullptr) {
        peer[0] = '\0';
        return {};
    }
    return peer;
}

bool connection::take_proxy_header(io_state& io) noexcept {
    const proxy_header h = parse_proxy_header({io.in.data(), io.in_len});
    if (h.what == proxy_header::status::incomplete) return false; // header_timeout bounds it
    if (!adopt_proxy_header(h)) return false;
    io.in_len -= static_cast<std::uint32_t>(h.length);
    std::memmove(io.in.data(), io.in.data() + h.length, io.in_len);
    return io.in_len != 0;
}

bool connection::take_proxy_header_tls() {
    // The TLS stream reads its records from the socket itself: the header is looked at where
    // it waits, and only its own bytes are taken out, the ClientHello behind it left in the
    // socket. Looked at on the stack: a connection waiting for its header holds no buffer, and
    // OpenSSL's object comes only with the ClientHello's first byte, after the header.
    std::array<char, max_proxy_header_bytes> bytes;
    const ssize_t got = peek_some(bytes.data(), bytes.size());
    if (got < 0) {
        if (!closed_) wait(false); // nothing yet: header_timeout bounds the wait
        return false;
    }
    if (got == 0) {
        close(close_reason::client_close);
        return false;
    }
    const proxy_header h = parse_proxy_header({bytes.data(), static_cast<std::size_t>(got)});
    if (h.what == proxy_header::status::incomplete) {
        // The rest raises an edge when it comes; after the peer's end, nothing will.
        if (hung_up_) {
            close(close_reason::client_close);
            return false;
        }
        readable_ = false;
        wait(false);
        return false;
    }
    if (h.what == proxy_header::status::malformed)
        drop_waiting(); // closed below, with an end rather than a reset
    else if (!take_peeked(bytes.data(), h.length))
        return false;
    if (!adopt_proxy_header(h)) return false;
    // The handshake's own deadline from here (a total, as from accept without a header).
    enter(conn_phase::handshake, false);
    readable_ = true; // the ClientHello may have come with the header
    return true;
}

bool connection::adopt_proxy_header(const proxy_header& h) noexcept {
    if (h.what == proxy_header::status::malformed) {
        // A listener behind a balancer takes nothing else: no answer (TLS: no alert either),
        // as nginx and HAProxy.
        close(close_reason::proxy_header);
        return false;
    }
    proxy_header_ = false;
    if (h.has_source && h.source.ss_family == AF_INET) {
        peer_v4_ = reinterpret_cast<const sockaddr_in&>(h.source).sin_addr.s_addr;
        peer_v4_known_ = true; // 0.0.0.0 too: what the header says
    } else if (h.has_source && h.source.ss_family == AF_INET6) {
        try {
            ctx_.proxied_v6[this] = reinterpret_cast<const sockaddr_in6&>(h.source).sin6_addr;
            peer_v6_ = true;
        } catch (...) {
            close(close_reason::error);
            return false;
        }
    }
    // Behind a balancer the client is known only now: counted against it from here.
    if (const auto k = client()) {
        bool admitted = false;
        try {
            admitted = ctx_.clients.admit(*k, ctx_.settings.max_per_client);
        } catch (...) {
            close(close_reason::error);
            return false;
        }
        if (!admitted) {
            if (!tls_) answer_over_client_limit(fd_, ctx_.date.value());
            close(close_reason::per_client);
            return false;
        }
        counted_ = true;
    }
    return true;
}

void connection::counted_at_accept(const sockaddr_storage& peer) noexcept {
    counted_ = true;
    if (peer.ss_family == AF_INET) {
        peer_v4_ = reinterpret_cast<const sockaddr_in&>(peer).sin_addr.s_addr;
        peer_v4_known_ = true;
    } else if (const auto k = ctx_.settings.clients.of(peer)) {
        peer_v4_ = static_cast<std::uint32_t>(*k);
        client_hash_ = true;
    }
}

std::optional<client_key> connection::client() noexcept {
    const client_prefixes& prefixes = ctx_.settings.clients;
    if (peer_v6_) {
        const auto found = ctx_.proxied_v6.find(this);
        if (found == ctx_.proxied_v6.end()) return std::nullopt;
        return prefixes.of_v6(found->second);
    }
    if (peer_v4_known_) return prefixes.of_v4(peer_v4_);
    if (client_hash_) return v6_key(peer_v4_);
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return std::nullopt;
    if (a.ss_family == AF_INET) {
        peer_v4_ = reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr;
        peer_v4_known_ = true;
        return prefixes.of_v4(peer_v4_);
    }
    const auto k = prefixes.of(a);
    if (k) {
        peer_v4_ = static_cast<std::uint32_t>(*k);
        client_hash_ = true;
    }
    return k;
}

void connection::recount() noexcept {
    if (!counted_ || closed_) return;
    // An IPv6 client's kept hash was made with the old prefixes: told again from the socket.
    client_hash_ = false;
    const auto k = client();
    try {
        if (k && ctx_.clients.admit(*k, 0)) return;
    } catch (...) {
    }
    counted_ = false; // no longer told (its peer is gone) or no memory: it counts for nobody
}

} // namespace tarry::server

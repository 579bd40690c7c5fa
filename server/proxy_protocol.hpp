#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <string_view>

namespace tarry::server {

/// What a PROXY protocol header (v1 or v2) at the start of a connection's bytes says.
struct proxy_header {
    enum class status { incomplete, malformed, done };
    status what = status::incomplete;
    std::size_t length = 0;    ///< done: bytes the header takes (to strip before HTTP)
    bool has_source = false;   ///< done: false for v2 LOCAL, v1 UNKNOWN, v2 UNSPEC/unix families:
                               ///< keep the socket's own peer
    sockaddr_storage source{}; ///< done and has_source: AF_INET or AF_INET6 address + port
                               ///< (network order) of the client the balancer saw
};

/// The longest v2 header accepted (v1 lines end within 107 bytes): its 16 fixed bytes and at most
/// 4 KiB of addresses and TLVs; a longer one is malformed as soon as its length field arrives.
/// The spec only asks that a header fit a 536-byte segment; HAProxy bounds v2 by its 16 KiB buffer
/// and takes each TLV up to 1 KiB. All HAProxy itself sends (addresses, authority up to 255,
/// unique id up to 128, ALPN, the SSL TLV, netns, CRC32C) stays near 1 KiB and cloud balancers
/// send a few dozen bytes: 4 KiB leaves room for custom TLVs while a whole header still fits the
/// smallest read buffer a connection has (8 KiB), so it can always be read before it is judged.
inline constexpr std::size_t max_proxy_header_bytes = 16 + 4096;

/// Parses `bytes` (what has arrived so far). incomplete: a prefix of a valid header, read more.
/// malformed: not a PROXY header, or a bad one (close the connection); decided as soon as the
/// bytes rule out every valid header (a v1 IPv6 address once the space after it arrives, a v2
/// length with the 16th byte). Never reads past bytes.size(). Stateless: call it again with all
/// that has arrived.
proxy_header parse_proxy_header(std::string_view bytes) noexcept;

} // namespace tarry::server

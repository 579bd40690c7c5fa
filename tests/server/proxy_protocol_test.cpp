// The PROXY protocol header parser: every valid v1/v2 header is recognised with its exact length
// and the client's address, every prefix of one waits for more, and anything else is refused at
// the first byte no valid header could have, so a client speaking HTTP to a PROXY listener is
// closed at once instead of waiting out a timeout.
#include <tarry/server/proxy_protocol.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::test {
namespace {

using server::parse_proxy_header;
using server::proxy_header;
using status = proxy_header::status;

using namespace std::string_literals;

const std::string v2_signature = "\r\n\r\n\0\r\nQUIT\n"s;

/// A v2 header: signature, version/command, family, then `body` (addresses and TLVs) with its
/// length.
std::string v2(unsigned ver_cmd, unsigned family, const std::string& body) {
    std::string h = v2_signature;
    h += static_cast<char>(ver_cmd);
    h += static_cast<char>(family);
    h += static_cast<char>(body.size() >> 8);
    h += static_cast<char>(body.size() & 0xff);
    return h + body;
}

std::string port_bytes(std::uint16_t port) {
    return {static_cast<char>(port >> 8), static_cast<char>(port & 0xff)};
}

std::string ipv4_block(const char* src, const char* dst, std::uint16_t sport, std::uint16_t dport) {
    in_addr s{}, d{};
    EXPECT_EQ(inet_pton(AF_INET, src, &s), 1);
    EXPECT_EQ(inet_pton(AF_INET, dst, &d), 1);
    std::string b(reinterpret_cast<const char*>(&s), 4);
    b.append(reinterpret_cast<const char*>(&d), 4);
    return b + port_bytes(sport) + port_bytes(dport);
}

std::string ipv6_block(const char* src, const char* dst, std::uint16_t sport, std::uint16_t dport) {
    in6_addr s{}, d{};
    EXPECT_EQ(inet_pton(AF_INET6, src, &s), 1);
    EXPECT_EQ(inet_pton(AF_INET6, dst, &d), 1);
    std::string b(reinterpret_cast<const char*>(&s), 16);
    b.append(reinterpret_cast<const char*>(&d), 16);
    return b + port_bytes(sport) + port_bytes(dport);
}

std::string tlv(unsigned type, const std::string& value) {
    std::string t(1, static_cast<char>(type));
    t += static_cast<char>(value.size() >> 8);
    t += static_cast<char>(value.size() & 0xff);
    return t + value;
}

/// Parses a heap copy of exactly `bytes`, so that AddressSanitizer catches a read past its end.
proxy_header parse(std::string_view bytes) {
    const std::unique_ptr<char[]> copy(new char[bytes.size()]);
    std::memcpy(copy.get(), bytes.data(), bytes.size());
    return parse_proxy_header(std::string_view(copy.get(), bytes.size()));
}

sockaddr_in ipv4_of(const proxy_header& h) {
    sockaddr_in sin{};
    std::memcpy(&sin, &h.source, sizeof sin);
    return sin;
}

sockaddr_in6 ipv6_of(const proxy_header& h) {
    sockaddr_in6 sin6{};
    std::memcpy(&sin6, &h.source, sizeof sin6);
    return sin6;
}

std::string text_of(const sockaddr_in& sin) {
    char text[INET_ADDRSTRLEN];
    return inet_ntop(AF_INET, &sin.sin_addr, text, sizeof text);
}

std::string text_of(const sockaddr_in6& sin6) {
    char text[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, &sin6.sin6_addr, text, sizeof text);
}

void expect_ipv4_source(const std::string& header, const char* address, std::uint16_t port) {
    const proxy_header h = parse(header);
    ASSERT_EQ(h.what, status::done);
    EXPECT_EQ(h.length, header.size());
    ASSERT_TRUE(h.has_source);
    const sockaddr_in sin = ipv4_of(h);
    EXPECT_EQ(sin.sin_family, AF_INET);
    EXPECT_EQ(ntohs(sin.sin_port), port);
    EXPECT_EQ(text_of(sin), address);
}

void expect_ipv6_source(const std::string& header, const char* address, std::uint16_t port) {
    const proxy_header h = parse(header);
    ASSERT_EQ(h.what, status::done);
    EXPECT_EQ(h.length, header.size());
    ASSERT_TRUE(h.has_source);
    const sockaddr_in6 sin6 = ipv6_of(h);
    EXPECT_EQ(sin6.sin6_family, AF_INET6);
    EXPECT_EQ(ntohs(sin6.sin6_port), port);
    EXPECT_EQ(text_of(sin6), address);
}

void expect_no_source(const std::string& header) {
    const proxy_header h = parse(header);
    ASSERT_EQ(h.what, status::done);
    EXPECT_EQ(h.length, header.size());
    EXPECT_FALSE(h.has_source);
    EXPECT_EQ(h.source.ss_family, AF_UNSPEC);
}

/// `header` is refused once its first `decided_after` bytes have arrived (not before), and
/// refused whole (and with anything after it) too.
void expect_malformed(const std::string& header, std::size_t decided_after) {
    ASSERT_LE(decided_after, header.size());
    // Not sooner either: up to there it could still have been a valid header.
    if (decided_after > 0) {
        EXPECT_EQ(parse(std::string_view(header).substr(0, decided_after - 1)).what,
                  status::incomplete)
            << "before " << decided_after << " of " << testing::PrintToString(header);
    }
    for (std::size_t n = decided_after; n <= header.size(); ++n) {
        EXPECT_EQ(parse(std::string_view(header).substr(0, n)).what, status::malformed)
            << "after " << n << " of " << testing::PrintToString(header);
    }
    EXPECT_EQ(parse(header + "GET / HTTP/1.1\r\n\r\n").what, status::malformed)
        << testing::PrintToString(header);
}

/// v1: `marked` with a '|' before the first byte no valid line has there.
void expect_v1_malformed_at(std::string marked) {
    const auto at = marked.find('|');
    ASSERT_NE(at, std::string::npos) << marked;
    marked.erase(at, 1);
    expect_malformed(marked, at + 1);
}

const std::string v1_tcp4 = "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n";
const std::string v1_tcp6 = "PROXY TCP6 2001:db8::1 2001:db8::2 65535 0\r\n";
const std::string v1_tcp6_longest =
    "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
    "65535 65535\r\n";
const std::string v1_unknown = "PROXY UNKNOWN\r\n";
const std::string v1_unknown_longest =
    "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
    "65535 65535\r\n";

std::vector<std::string> valid_headers() {
    return {
        v1_tcp4,
        v1_tcp6,
        v1_tcp6_longest,
        "PROXY TCP4 0.0.0.0 255.255.255.255 0 65535\r\n",
        "PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n",
        v1_unknown,
        v1_unknown_longest,
        v2(0x21, 0x11, ipv4_block("192.0.2.1", "198.51.100.7", 40000, 443)),
        v2(0x21, 0x21, ipv6_block("2001:db8::7", "2001:db8::1", 1234, 80)),
        v2(0x21, 0x11,
           ipv4_block("10.0.0.1", "10.0.0.2", 1, 2) + tlv(0x01, "h2") + tlv(0x02, "example.com") +
               tlv(0x04, std::string(5, '\0'))),
        v2(0x20, 0x00, ""),
        v2(0x20, 0x11, ipv4_block("10.0.0.1", "10.0.0.2", 1, 2)),
        v2(0x21, 0x00, ""),
        v2(0x21, 0x31, std::string(216, 'u')),
    };
}

TEST(ProxyProtocolTest, V1Tcp4) {
    expect_ipv4_source(v1_tcp4, "192.168.0.1", 56324);
    expect_ipv4_source("PROXY TCP4 0.0.0.0 255.255.255.255 0 65535\r\n", "0.0.0.0", 0);
    expect_ipv4_source("PROXY TCP4 255.255.255.255 0.0.0.0 65535 0\r\n", "255.255.255.255", 65535);
}

TEST(ProxyProtocolTest, V1Tcp6) {
    expect_ipv6_source(v1_tcp6, "2001:db8::1", 65535);
    EXPECT_EQ(v1_tcp6_longest.size(), 104u);
    expect_ipv6_source(v1_tcp6_longest, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535);
    // What inet_ntop prints for a v4-mapped address, which senders on dual-stack sockets send.
    expect_ipv6_source("PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n", "::ffff:192.0.2.1", 1);
    expect_ipv6_source("PROXY TCP6 2001:DB8::A ::1 80 81\r\n", "2001:db8::a", 80);
}

TEST(ProxyProtocolTest, V1UnknownKeepsThePeer) {
    expect_no_source(v1_unknown);
    EXPECT_EQ(v1_unknown_longest.size(), 107u);
    expect_no_source(v1_unknown_longest);
    // The receiver ignores whatever follows UNKNOWN before the CRLF.
    expect_no_source("PROXY UNKNOWN whatever \t at all 1.2.3.4\r\n");
}

TEST(ProxyProtocolTest, V2ProxyTcp4) {
    expect_ipv4_source(v2(0x21, 0x11, ipv4_block("192.0.2.1", "198.51.100.7", 40000, 443)),
                       "192.0.2.1", 40000);
}

TEST(ProxyProtocolTest, V2ProxyTcp6) {
    expect_ipv6_source(v2(0x21, 0x21, ipv6_block("2001:db8::7", "2001:db8::1", 1234, 80)),
                       "2001:db8::7", 1234);
}

TEST(ProxyProtocolTest, V2LocalKeepsThePeer) {
    expect_no_source(v2(0x20, 0x00, ""));
    // Addresses a LOCAL header carries anyway are skipped by its length, and its family ignored.
    expect_no_source(v2(0x20, 0x11, ipv4_block("10.0.0.1", "10.0.0.2", 1, 2)));
    expect_no_source(v2(0x20, 0x21, ""));
    expect_no_source(v2(0x20, 0x12, "abc"));
    expect_no_source(v2(0x20, 0xff, ""));
}

TEST(ProxyProtocolTest, V2UnspecAndUnixKeepThePeer) {
    expect_no_source(v2(0x21, 0x00, ""));
    expect_no_source(v2(0x21, 0x00, "address information to ignore"));
    expect_no_source(v2(0x21, 0x31, std::string(216, 'u')));
    expect_no_source(v2(0x21, 0x32, std::string(216, 'u') + tlv(0x04, "")));
}

TEST(ProxyProtocolTest, V2TlvsAreSkipped) {
    const std::string tlvs = tlv(0x01, "h2") + tlv(0x02, "example.com") +
                             tlv(0x05, std::string(128, 'i')) + tlv(0x20, std::string(40, 's')) +
                             tlv(0xe0, std::string(300, 'x'));
    expect_ipv4_source(v2(0x21, 0x11, ipv4_block("203.0.113.9", "10.0.0.1", 65535, 443) + tlvs),
                       "203.0.113.9", 65535);
    expect_ipv6_source(v2(0x21, 0x21, ipv6_block("::1", "::2", 7, 8) + tlvs), "::1", 7);
}

TEST(ProxyProtocolTest, V2LengthUpToTheLimit) {
    const std::string addresses = ipv4_block("192.0.2.1", "192.0.2.2", 9, 10);
    const std::string longest =
        v2(0x21, 0x11,
           addresses + std::string(server::max_proxy_header_bytes - 16 - addresses.size(), 'p'));
    ASSERT_EQ(longest.size(), server::max_proxy_header_bytes);
    expect_ipv4_source(longest, "192.0.2.1", 9);

    // One byte more is refused as soon as the length field says so.
    const std::string too_long =
        v2(0x21, 0x11,
           addresses + std::string(server::max_proxy_header_bytes - 15 - addresses.size(), 'p'));
    expect_malformed(too_long, 16);
    expect_malformed(v2(0x20, 0x00, std::string(server::max_proxy_header_bytes, 'p')), 16);
    std::string length_ffff = v2(0x21, 0x00, "");
    length_ffff[14] = length_ffff[15] = '\xff';
    expect_malformed(length_ffff, 16);
}

TEST(ProxyProtocolTest, BytesAfterTheHeaderAreNotPartOfIt) {
    const std::string http = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";
    for (const std::string& header : valid_headers()) {
        for (const std::string& after :
             {http, std::string(1, '\n'), std::string(1, '\0'), std::string(2000, '\r'), header}) {
            const proxy_header h = parse(header + after);
            ASSERT_EQ(h.what, status::done) << testing::PrintToString(header);
            EXPECT_EQ(h.length, header.size()) << testing::PrintToString(header);
        }
    }
}

TEST(ProxyProtocolTest, EveryStrictPrefixIsIncomplete) {
    for (const std::string& header : valid_headers()) {
        for (std::size_t n = 0; n < header.size(); ++n) {
            const proxy_header h = parse(std::string_view(header).substr(0, n));
            EXPECT_EQ(h.what, status::incomplete)
                << n << " bytes of " << testing::PrintToString(header);
            EXPECT_EQ(h.length, 0u);
        }
    }
}

TEST(ProxyProtocolTest, OtherProtocolsAreMalformedAtTheFirstByte) {
    expect_malformed("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", 1);
    expect_malformed("POST /x HTTP/1.1\r\n\r\n", 2);
    expect_malformed(std::string("\x16\x03\x01\x02\x00\x01", 6), 1); // a TLS ClientHello
    expect_malformed("\nPROXY TCP4 1.2.3.4 1.2.3.4 1 2\r\n", 1);
    expect_malformed(" PROXY TCP4 1.2.3.4 1.2.3.4 1 2\r\n", 1);
    expect_malformed(std::string(1, '\0'), 1);
    // "PUT" starts like "PROXY ": refused at its second byte.
    expect_malformed("PUT / HTTP/1.1\r\n\r\n", 2);
}

TEST(ProxyProtocolTest, WrongSignatureByteAtEachPosition) {
    for (std::size_t i = 0; i < 6; ++i) {
        std::string bad = v1_tcp4;
        bad[i] = static_cast<char>(bad[i] ^ 0x20);
        expect_malformed(bad, i + 1);
    }
    const std::string good = v2(0x21, 0x11, ipv4_block("192.0.2.1", "192.0.2.2", 1, 2));
    for (std::size_t i = 0; i < 12; ++i) {
        for (const char replacement : {'\x00', '\x0d', '\x20', '\x51', '\xff'}) {
            if (replacement == good[i]) continue;
            std::string bad = good;
            bad[i] = replacement;
            expect_malformed(bad, i + 1);
        }
    }
}

TEST(ProxyProtocolTest, V1BadProtocols) {
    expect_v1_malformed_at("PROXY |tcp4 1.2.3.4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP|5 1.2.3.4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY U|DP4 1.2.3.4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY UNKNOW|M\r\n");
    expect_v1_malformed_at("PROXY | TCP4 1.2.3.4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 | 1.2.3.4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY|\tTCP4 1.2.3.4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4|\r\n");
    expect_v1_malformed_at("PROXY |\r\n");
}

TEST(ProxyProtocolTest, V1BadPorts) {
    const std::string head = "PROXY TCP4 1.2.3.4 5.6.7.8 ";
    expect_v1_malformed_at(head + "0|443 443\r\n");   // leading zero
    expect_v1_malformed_at(head + "0|0 443\r\n");     // leading zero
    expect_v1_malformed_at(head + "443 0|443\r\n");   // leading zero
    expect_v1_malformed_at(head + "|+443 443\r\n");   // sign
    expect_v1_malformed_at(head + "|-1 443\r\n");     // sign
    expect_v1_malformed_at(head + "6553|6 443\r\n");  // out of range
    expect_v1_malformed_at(head + "9999|9 443\r\n");  // out of range
    expect_v1_malformed_at(head + "443 12345|6\r\n"); // too many digits
    expect_v1_malformed_at(head + "| 443\r\n");       // empty
    expect_v1_malformed_at(head + "443 |\r\n");       // empty
    expect_v1_malformed_at(head + "443 | 443\r\n");   // double space
    expect_v1_malformed_at(head + "0|x1bb 443\r\n");  // not decimal
    expect_v1_malformed_at(head + "443 443| \r\n");   // trailing space
    expect_v1_malformed_at(head + "443 443| 1\r\n");  // a fifth field
    expect_v1_malformed_at(head + "443|\r\n");        // a missing field
    expect_v1_malformed_at(head + "443 |https\r\n");  // a name
}

TEST(ProxyProtocolTest, V1BadAddresses) {
    expect_v1_malformed_at("PROXY TCP4 |::1 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3.4 |::1 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3.4 200|1:db8::1 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 1.2.3.4| ::1 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 ::1 1.2.3.4| 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 25|6.1.1.1 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3| 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3.4|.5 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 0|1.2.3.4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3.0|4 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.|.2.3 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 |.1.2.3 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3.| 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 |localhost 1.2.3.4 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3.4 1.2.3.4|.\r\n");
    expect_v1_malformed_at("PROXY TCP6 :::1| ::2 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 2001:db8::1::2| ::2 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 12345::1| ::2 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 fe80::1|%eth0 ::2 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 |[::1] ::2 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 |g::1 ::2 1 2\r\n");
    expect_v1_malformed_at("PROXY TCP6 ::ffff:1.2.3.4:5| ::2 1 2\r\n");
    // Longer than any IPv6 address text (45 characters): refused at the 46th.
    const std::string long6(46, '0');
    expect_malformed("PROXY TCP6 " + long6 + " ::1 1 2\r\n", 11 + 46);
}

TEST(ProxyProtocolTest, V1LineEndings) {
    const std::string fields = "PROXY TCP4 1.2.3.4 5.6.7.8 1 2";
    expect_v1_malformed_at(fields + "|\n");
    expect_v1_malformed_at(fields + "\r|\r\n");
    expect_v1_malformed_at(fields + "\r|X");
    expect_v1_malformed_at(fields + "\r| \n");
    expect_v1_malformed_at("PROXY UNKNOWN|\n");
    expect_v1_malformed_at("PROXY UNKNOWN 1|\n2\r\n");
    expect_v1_malformed_at("PROXY UNKNOWN\r|X\r\n");
    expect_v1_malformed_at("PROXY UNKNOWN\r|\r\n");
    expect_v1_malformed_at("PROXY TCP4 1.2.3.4|\r\n");
}

TEST(ProxyProtocolTest, V1LongerThan107BytesIsMalformed) {
    // 108 bytes with the CRLF at the end.
    const std::string one_too_many = "PROXY UNKNOWN " + std::string(92, 'x') + "\r\n";
    ASSERT_EQ(one_too_many.size(), 108u);
    expect_malformed(one_too_many, 106);
    // No CR as the 106th byte: a line still open there cannot end in 107.
    const std::string no_end = "PROXY UNKNOWN " + std::string(200, 'x');
    expect_malformed(no_end, 106);
    EXPECT_EQ(parse(no_end.substr(0, 105)).what, status::incomplete);
    // 107 exactly, the longest there is.
    const std::string longest = "PROXY UNKNOWN " + std::string(91, 'x') + "\r\n";
    ASSERT_EQ(longest.size(), 107u);
    expect_no_source(longest);
    // A TCP6 line made long by v4-mapped addresses (inet_pton accepts 45 characters).
    const std::string mapped = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255";
    expect_malformed("PROXY TCP6 " + mapped + " " + mapped + " 65535 65535\r\n", 106);
}

TEST(ProxyProtocolTest, V2BadVersion) {
    for (unsigned version = 0; version < 16; ++version) {
        if (version == 2) continue;
        for (const unsigned command : {0u, 1u}) {
            expect_malformed(
                v2(version << 4 | command, 0x11, ipv4_block("1.2.3.4", "1.2.3.4", 1, 2)), 13);
        }
    }
}

TEST(ProxyProtocolTest, V2BadCommand) {
    for (unsigned command = 2; command < 16; ++command) {
        expect_malformed(v2(0x20 | command, 0x11, ipv4_block("1.2.3.4", "1.2.3.4", 1, 2)), 13);
    }
}

TEST(ProxyProtocolTest, V2BadFamily) {
    for (unsigned family = 0; family < 256; ++family) {
        const std::string header = v2(0x21, family, std::string(216, 'a'));
        if (family == 0x00 || family == 0x11 || family == 0x21 || family == 0x31 ||
            family == 0x32) {
            EXPECT_EQ(parse(header).what, status::done) << family;
        } else {
            expect_malformed(header, 14);
        }
    }
}

TEST(ProxyProtocolTest, V2UdpIsMalformed) {
    expect_malformed(v2(0x21, 0x12, ipv4_block("1.2.3.4", "1.2.3.4", 1, 2)), 14);
    expect_malformed(v2(0x21, 0x22, ipv6_block("::1", "::2", 1, 2)), 14);
}

TEST(ProxyProtocolTest, V2LengthShorterThanTheAddresses) {
    const std::string v4 = ipv4_block("1.2.3.4", "1.2.3.4", 1, 2);
    expect_malformed(v2(0x21, 0x11, ""), 16);
    expect_malformed(v2(0x21, 0x11, v4.substr(0, 11)), 16);
    expect_malformed(v2(0x21, 0x21, v4), 16);
    expect_malformed(v2(0x21, 0x21, ipv6_block("::1", "::2", 1, 2).substr(0, 35)), 16);
    expect_malformed(v2(0x21, 0x31, std::string(215, 'u')), 16);
    expect_malformed(v2(0x21, 0x32, ""), 16);
}

/// What parsing must guarantee on any input: never a read past the end (the heap copy in
/// parse()), a length within what arrived, and answers consistent across prefixes: some
/// incomplete ones, then either malformed for good or, from the header's last byte on, done with
/// one length for good.
void check_any_input(const std::string& input) {
    bool settled = false;
    proxy_header first{};
    for (std::size_t n = 0; n <= input.size(); ++n) {
        const proxy_header h = parse(std::string_view(input).substr(0, n));
        if (h.what == status::done) {
            ASSERT_GT(h.length, 0u);
            ASSERT_LE(h.length, n);
            ASSERT_LE(h.length, server::max_proxy_header_bytes);
            if (h.has_source) {
                ASSERT_TRUE(h.source.ss_family == AF_INET || h.source.ss_family == AF_INET6);
            } else {
                ASSERT_EQ(h.source.ss_family, AF_UNSPEC);
            }
        } else {
            ASSERT_EQ(h.length, 0u);
        }
        if (settled) {
            ASSERT_EQ(h.what, first.what) << testing::PrintToString(input) << " at " << n;
            ASSERT_EQ(h.length, first.length);
            ASSERT_EQ(h.has_source, first.has_source);
            ASSERT_EQ(std::memcmp(&h.source, &first.source, sizeof h.source), 0);
        } else if (h.what != status::incomplete) {
            if (h.what == status::done) {
                ASSERT_EQ(h.length, n) << testing::PrintToString(input);
            }
            settled = true;
            first = h;
        }
    }
}

TEST(ProxyProtocolTest, FuzzRandomBytesAndMutations) {
    std::mt19937 random(20260521);
    const auto below = [&random](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(random);
    };
    const auto any_byte = [&below] { return static_cast<char>(below(256)); };
    // Bytes a header is made of, so that mutations stay near valid ones.
    static constexpr char alphabet_bytes[] =
        "PROXY TCP46UNKNOWN0123456789abcdef:. \r\n\0\x11\x21\x20";
    const std::string_view alphabet{alphabet_bytes, sizeof alphabet_bytes - 1};

    const std::vector<std::string> valid = valid_headers();
    int incomplete = 0, malformed = 0, done = 0, with_source = 0;
    for (int round = 0; round < 4000; ++round) {
        std::string input;
        switch (below(4)) {
        case 0: // random bytes, sometimes after a signature
            if (below(2) == 0) input = below(2) == 0 ? "PROXY "s : v2_signature;
            for (std::size_t n = below(130); n > 0; --n)
                input += any_byte();
            break;
        default: { // a valid header mutated a few times
            input = valid[below(valid.size())];
            for (std::size_t edits = 1 + below(4); edits > 0; --edits) {
                const std::size_t at = below(input.size() + 1);
                const char c = below(2) == 0 ? any_byte() : alphabet[below(alphabet.size())];
                switch (below(4)) {
                case 0:
                    if (at < input.size()) input[at] = c;
                    break;
                case 1:
                    input.insert(at, 1, c);
                    break;
                case 2:
                    if (at < input.size()) input.erase(at, 1);
                    break;
                default:
                    input.resize(at);
                    break;
                }
            }
            if (below(2) == 0) input += "GET / HTTP/1.1\r\n\r\n";
            break;
        }
        }
        check_any_input(input);
        if (HasFatalFailure()) return;
        const proxy_header h = parse(input);
        incomplete += h.what == status::incomplete;
        malformed += h.what == status::malformed;
        done += h.what == status::done;
        with_source += h.has_source;
    }
    // The mutations reach every outcome, not only the refusals.
    EXPECT_GT(incomplete, 100);
    EXPECT_GT(malformed, 100);
    EXPECT_GT(done, 100);
    EXPECT_GT(with_source, 100);
}

} // namespace
} // namespace tarry::test

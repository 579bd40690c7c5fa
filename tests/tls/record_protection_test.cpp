#include "reference.hpp"

#include <tarry/tls/record_protection.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tarry::tls::test {
namespace {

// --- RFC 8448, section 3: "Simple 1-RTT Handshake" (TLS_AES_128_GCM_SHA256) -------------------

const bytes rfc_client_secret = hex("9e 40 64 6c e7 9a 7f 9d c0 5a f8 88 9b ce 65 52"
                                    "87 5a fa 0b 06 df 00 87 f7 92 eb b7 c1 75 04 a5");
const bytes rfc_server_secret = hex("a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32"
                                    "82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43");

/// {server} send handshake record: the NewSessionTicket, the first record under the server's
/// application traffic secret (sequence 0).
const bytes rfc_server_ticket =
    hex("17 03 03 00 de 3a 6b 8f 90 41 4a 97 d6 95 9c 34 87 68 0d e5 13 4a 2b 24 0e 6c ff ac 11"
        "6e 95 d4 1d 6a f8 f6 b5 80 dc f3 d1 1d 63 c7 58 db 28 9a 01 59 40 25 2f 55 71 3e 06 1d"
        "c1 3e 07 88 91 a3 8e fb cf 57 53 ad 8e f1 70 ad 3c 73 53 d1 6d 9d a7 73 b9 ca 7f 2b 9f"
        "a1 b6 c0 d4 a3 d0 3f 75 e0 9c 30 ba 1e 62 97 2a c4 6f 75 f7 b9 81 be 63 43 9b 29 99 ce"
        "13 06 46 15 13 98 91 d5 e4 c5 b4 06 f1 6e 3f c1 81 a7 7c a4 75 84 00 25 db 2f 0a 77 f8"
        "1b 5a b0 5b 94 c0 13 46 75 5f 69 23 2c 86 51 9d 86 cb ee ac 87 aa c3 47 d1 43 f9 60 5d"
        "64 f6 50 db 4d 02 3e 70 e9 52 ca 49 fe 51 37 12 1c 74 bc 26 97 68 7e 24 87 46 d6 df 35"
        "30 05 f3 bc e1 86 96 12 9c 81 53 55 6b 3b 6c 67 79 b3 7b f1 59 85 68 4f");
/// {client} send application_data record (client sequence 0).
const bytes rfc_client_data =
    hex("17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55 cb ef ac ea 42 f9 14 aa 66"
        "bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44 1e 2b 62 97 4e 1f 5a 62 92 a2 97 70"
        "14 bd 1e 3d ea e6 3a ee bb 21 69 49 15 e4");
/// {server} send application_data record (server sequence 1).
const bytes rfc_server_data =
    hex("17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4 a4 69 32 fc 32 25 d0 5f 82"
        "aa 1b 36 e3 0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a 59 a8 fc c4 9c 4b f2 e5 f0 a2 1c 00"
        "47 c2 ab f3 32 54 0d d0 32 e1 67 c2 95 5d");
/// {client} send alert record: close_notify (client sequence 1).
const bytes rfc_client_alert =
    hex("17 03 03 00 13 c9 87 27 60 65 56 66 b7 4d 7f f1 15 3e fd 6d b6 d0 b0 e3");
/// {server} send alert record: close_notify (server sequence 2).
const bytes rfc_server_alert =
    hex("17 03 03 00 13 b5 8f d6 71 66 eb f5 99 d2 47 20 cf be 7e fa 7a 88 64 a9");

/// The application data both sides send in the trace: 00 01 ... 31.
const bytes rfc_payload = pattern(50);
const bytes close_notify_body{1, 0};

/// Seals one record with `p` (advancing its sequence number).
bytes seal(record_protection& p, std::uint8_t type, const bytes& plain) {
    bytes out(plain.size() + record_overhead);
    const std::size_t n = p.seal(type, plain.data(), plain.size(), out.data());
    out.resize(n);
    return out;
}

struct opened_record {
    std::uint8_t type = 0;
    bytes plain;
};

/// Opens a copy of `record` with `p`; nothing when it does not authenticate.
std::optional<opened_record> open(record_protection& p, const bytes& record) {
    bytes copy = record;
    const auto o = p.open(copy.data(), copy.size());
    if (!o) return std::nullopt;
    const auto* body = copy.data() + record_header_bytes;
    return opened_record{o->type, bytes(body, body + o->length)};
}

TEST(RecordRfc8448, ReferenceDerivesTheTracesKeysAndIvs) {
    // The reference sealer below is checked against the trace's key and IV values first.
    EXPECT_EQ(expand_label(aead::aes_128_gcm, rfc_server_secret, "key", 16),
              hex("9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56"));
    EXPECT_EQ(expand_label(aead::aes_128_gcm, rfc_server_secret, "iv", 12),
              hex("cf 78 2b 88 dd 83 54 9a ad f1 e9 84"));
    EXPECT_EQ(expand_label(aead::aes_128_gcm, rfc_client_secret, "key", 16),
              hex("17 42 2d da 59 6e d5 d9 ac d8 90 e3 c6 3f 50 51"));
    EXPECT_EQ(expand_label(aead::aes_128_gcm, rfc_client_secret, "iv", 12),
              hex("5b 78 92 3d ee 08 57 90 33 e5 23 d9"));
}

TEST(RecordRfc8448, ServerRecordsSealAsInTheTrace) {
    record_protection server;
    ASSERT_TRUE(server.init(aead::aes_128_gcm, rfc_server_secret));
    // The ticket's plaintext is not printed with the record: open it, check it is the
    // NewSessionTicket, and seal it again at the same sequence number.
    record_protection reader;
    ASSERT_TRUE(reader.init(aead::aes_128_gcm, rfc_server_secret));
    const auto ticket = open(reader, rfc_server_ticket);
    ASSERT_TRUE(ticket);
    EXPECT_EQ(ticket->type, handshake_record);
    ASSERT_EQ(ticket->plain.size(), 4u + 0xc9);
    EXPECT_EQ(bytes(ticket->plain.begin(), ticket->plain.begin() + 4), hex("04 00 00 c9"));

    EXPECT_EQ(seal(server, handshake_record, ticket->plain), rfc_server_ticket);
    EXPECT_EQ(seal(server, application_data, rfc_payload), rfc_server_data);
    EXPECT_EQ(seal(server, alert, close_notify_body), rfc_server_alert);
    EXPECT_EQ(server.sequence(), 3u);
}

TEST(RecordRfc8448, ClientRecordsSealAsInTheTrace) {
    record_protection client;
    ASSERT_TRUE(client.init(aead::aes_128_gcm, rfc_client_secret));
    EXPECT_EQ(seal(client, application_data, rfc_payload), rfc_client_data);
    EXPECT_EQ(seal(client, alert, close_notify_body), rfc_client_alert);
}

TEST(RecordRfc8448, TraceRecordsOpen) {
    record_protection server;
    ASSERT_TRUE(server.init(aead::aes_128_gcm, rfc_server_secret));
    ASSERT_TRUE(open(server, rfc_server_ticket));
    const auto data = open(server, rfc_server_data);
    ASSERT_TRUE(data);
    EXPECT_EQ(data->type, application_data);
    EXPECT_EQ(data->plain, rfc_payload);
    const auto end = open(server, rfc_server_alert);
    ASSERT_TRUE(end);
    EXPECT_EQ(end->type, alert);
    EXPECT_EQ(end->plain, close_notify_body);

    record_protection client;
    ASSERT_TRUE(client.init(aead::aes_128_gcm, rfc_client_secret));
    const auto request = open(client, rfc_client_data);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->type, application_data);
    EXPECT_EQ(request->plain, rfc_payload);
    const auto client_end = open(client, rfc_client_alert);
    ASSERT_TRUE(client_end);
    EXPECT_EQ(client_end->type, alert);
    EXPECT_EQ(client_end->plain, close_notify_body);
}

TEST(RecordRfc8448, TraceRecordsAtTheWrongSequenceDoNotOpen) {
    // The server's application data is its record number 1: at 0 (the ticket skipped) it fails.
    record_protection server;
    ASSERT_TRUE(server.init(aead::aes_128_gcm, rfc_server_secret));
    EXPECT_FALSE(open(server, rfc_server_data));
    EXPECT_EQ(server.sequence(), 0u); // a failed open does not advance
    ASSERT_TRUE(server.init(aead::aes_128_gcm, rfc_server_secret, 1));
    EXPECT_TRUE(open(server, rfc_server_data));
    // The client's secret does not open the server's records.
    record_protection other;
    ASSERT_TRUE(other.init(aead::aes_128_gcm, rfc_client_secret, 1));
    EXPECT_FALSE(open(other, rfc_server_data));
}

// --- Everything else, for each AEAD ------------------------------------------------------------

TEST(RecordProtection, SuitesMapToTheirAeads) {
    EXPECT_EQ(aead_of_suite(0x1301), aead::aes_128_gcm);
    EXPECT_EQ(aead_of_suite(0x1302), aead::aes_256_gcm);
    EXPECT_EQ(aead_of_suite(0x1303), aead::chacha20_poly1305);
    EXPECT_FALSE(aead_of_suite(0x1304)); // TLS_AES_128_CCM_SHA256: not enabled
    EXPECT_FALSE(aead_of_suite(0x1305));
    EXPECT_FALSE(aead_of_suite(0xc02f));
    EXPECT_FALSE(aead_of_suite(0));
}

TEST(RecordProtection, SecretsOfTheWrongSizeAreRefused) {
    record_protection p;
    EXPECT_FALSE(p.init(aead::aes_128_gcm, pattern(48)));
    EXPECT_FALSE(p.init(aead::aes_128_gcm, pattern(31)));
    EXPECT_FALSE(p.init(aead::aes_256_gcm, pattern(32)));
    EXPECT_FALSE(p.init(aead::chacha20_poly1305, pattern(48)));
    EXPECT_FALSE(p.init(aead::chacha20_poly1305, {}));
    EXPECT_TRUE(p.init(aead::aes_256_gcm, pattern(48)));
    EXPECT_EQ(p.algorithm(), aead::aes_256_gcm);
}

class RecordProtectionAead : public ::testing::TestWithParam<aead> {
protected:
    void SetUp() override {
        ASSERT_TRUE(writer_.init(GetParam(), secret_));
        ASSERT_TRUE(reader_.init(GetParam(), secret_));
    }

    const bytes secret_ = client_secret(GetParam());
    record_protection writer_;
    record_protection reader_;
};

INSTANTIATE_TEST_SUITE_P(Aeads, RecordProtectionAead,
                         ::testing::Values(aead::aes_128_gcm, aead::aes_256_gcm,
                                           aead::chacha20_poly1305),
                         [](const auto& p) { return std::string(aead_name(p.param)); });

TEST_P(RecordProtectionAead, RoundTripsAndMatchesTheReference) {
    const std::size_t sizes[] = {0, 1, 15, 16, 17, 100, 1500, 4096, max_plaintext};
    const std::uint8_t types[] = {application_data, handshake_record, alert};
    std::uint64_t seq = 0;
    for (const std::size_t n : sizes) {
        for (const std::uint8_t type : types) {
            SCOPED_TRACE(testing::Message() << "size " << n << " type " << int{type});
            const bytes plain = pattern(n, seq);
            const bytes record = seal(writer_, type, plain);
            ASSERT_EQ(record.size(), n + record_overhead);
            EXPECT_EQ(record[0], application_data); // the outer type is always 23
            EXPECT_EQ(record[1], 3);
            EXPECT_EQ(record[2], 3);
            EXPECT_EQ(std::size_t{record[3]} << 8 | record[4], n + 1 + tag_bytes);
            bytes inner = plain;
            inner.push_back(type);
            EXPECT_EQ(record, reference_seal(GetParam(), secret_, seq, inner));
            const auto o = open(reader_, record);
            ASSERT_TRUE(o);
            EXPECT_EQ(o->type, type);
            EXPECT_EQ(o->plain, plain);
            ++seq;
            EXPECT_EQ(writer_.sequence(), seq);
            EXPECT_EQ(reader_.sequence(), seq);
        }
    }
}

TEST_P(RecordProtectionAead, OpensTheReferencesRecords) {
    const bytes plain = of("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    for (std::uint64_t seq = 0; seq < 4; ++seq) {
        bytes inner = plain;
        inner.push_back(application_data);
        const auto o = open(reader_, reference_seal(GetParam(), secret_, seq, inner));
        ASSERT_TRUE(o);
        EXPECT_EQ(o->type, application_data);
        EXPECT_EQ(o->plain, plain);
    }
}

TEST_P(RecordProtectionAead, EveryTamperedByteFailsToOpen) {
    const bytes record = seal(writer_, application_data, pattern(40));
    for (std::size_t i = 0; i < record.size(); ++i) {
        for (const std::uint8_t flip : {std::uint8_t{0x01}, std::uint8_t{0x80}}) {
            SCOPED_TRACE(testing::Message() << "byte " << i << " ^ " << int{flip});
            bytes bad = record;
            bad[i] ^= flip;
            record_protection r;
            ASSERT_TRUE(r.init(GetParam(), secret_));
            EXPECT_FALSE(open(r, bad));
            EXPECT_EQ(r.sequence(), 0u);
        }
    }
    // Cut short, or with a byte more, it fails too; whole, it opens.
    bytes shorter(record.begin(), record.end() - 1);
    EXPECT_FALSE(open(reader_, shorter));
    bytes longer = record;
    longer.push_back(0);
    EXPECT_FALSE(open(reader_, longer));
    EXPECT_TRUE(open(reader_, record));
}

TEST_P(RecordProtectionAead, RecordsTooShortForATagFail) {
    for (std::size_t size = 0; size < record_header_bytes + 1 + tag_bytes; ++size) {
        bytes rec(std::max<std::size_t>(size, record_header_bytes), 0);
        if (rec.size() >= record_header_bytes) {
            rec[0] = application_data;
            rec[1] = rec[2] = 3;
            rec[4] = static_cast<std::uint8_t>(size - std::min(size, record_header_bytes));
        }
        const auto o = reader_.open(rec.data(), size);
        EXPECT_FALSE(o) << size;
    }
    EXPECT_EQ(reader_.sequence(), 0u);
}

TEST_P(RecordProtectionAead, SequenceNumbersMustMatch) {
    const bytes first = seal(writer_, application_data, of("first"));
    const bytes second = seal(writer_, application_data, of("second"));
    // Out of order: the second at sequence 0 fails, and the failure costs nothing.
    EXPECT_FALSE(open(reader_, second));
    EXPECT_EQ(reader_.sequence(), 0u);
    ASSERT_TRUE(open(reader_, first));
    EXPECT_FALSE(open(reader_, first)); // a replay, at sequence 1
    const auto o = open(reader_, second);
    ASSERT_TRUE(o);
    EXPECT_EQ(text(o->plain), "second");

    // A reader started at a sequence number opens from there.
    record_protection late;
    ASSERT_TRUE(late.init(GetParam(), secret_, 1));
    EXPECT_FALSE(open(late, first));
    EXPECT_TRUE(open(late, second));

    // The same at a sequence number with high bytes set (every byte of the nonce counts).
    const std::uint64_t far = 0x0102030405060708;
    record_protection w;
    record_protection r;
    ASSERT_TRUE(w.init(GetParam(), secret_, far));
    ASSERT_TRUE(r.init(GetParam(), secret_, far ^ (std::uint64_t{1} << 56)));
    const bytes rec = seal(w, application_data, of("far"));
    bytes inner = of("far");
    inner.push_back(application_data);
    EXPECT_EQ(rec, reference_seal(GetParam(), secret_, far, inner));
    EXPECT_FALSE(open(r, rec));
    ASSERT_TRUE(r.init(GetParam(), secret_, far));
    EXPECT_TRUE(open(r, rec));
}

TEST_P(RecordProtectionAead, UpdateOnBothSidesKeepsThemInStep) {
    bytes secret = secret_;
    for (int generation = 1; generation <= 5; ++generation) {
        SCOPED_TRACE(testing::Message() << "generation " << generation);
        ASSERT_TRUE(open(reader_, seal(writer_, application_data, of("before"))));
        ASSERT_TRUE(writer_.update());
        EXPECT_EQ(writer_.sequence(), 0u);
        secret = next_secret(GetParam(), secret);
        const bytes rec = seal(writer_, application_data, of("after"));
        // Sealed under the next secret, from sequence 0 again ...
        EXPECT_EQ(rec, reference_seal(GetParam(), secret, 0, of("after\x17")));
        // ... which the reader opens only once it has updated too.
        EXPECT_FALSE(open(reader_, rec));
        ASSERT_TRUE(reader_.update());
        EXPECT_EQ(reader_.sequence(), 0u);
        const auto o = open(reader_, rec);
        ASSERT_TRUE(o);
        EXPECT_EQ(text(o->plain), "after");
    }
    // A protection started from the fifth generation's secret is the same as the updated one.
    record_protection fresh;
    ASSERT_TRUE(fresh.init(GetParam(), secret, writer_.sequence()));
    EXPECT_EQ(seal(fresh, alert, close_notify_body), seal(writer_, alert, close_notify_body));
}

TEST_P(RecordProtectionAead, PaddingIsStripped) {
    // seal() appends the type after the bytes it is given: sealing content, its type and zeros
    // under type 0 makes a TLSInnerPlaintext padded with zeros (RFC 8446, 5.4).
    for (const std::size_t padding :
         {std::size_t{1}, std::size_t{2}, std::size_t{100}, std::size_t{max_plaintext - 6}}) {
        SCOPED_TRACE(testing::Message() << "padding " << padding);
        bytes inner = of("hello");
        inner.push_back(application_data);
        inner.resize(inner.size() + padding - 1, 0); // the last zero is seal()'s type
        const auto o = open(reader_, seal(writer_, 0, inner));
        ASSERT_TRUE(o);
        EXPECT_EQ(o->type, application_data);
        EXPECT_EQ(text(o->plain), "hello");
    }
    // Content ending in zeros keeps them: only the bytes after the type are padding.
    bytes inner{'a', 0, 0, handshake_record, 0, 0, 0};
    const auto o = open(reader_, seal(writer_, 0, inner));
    ASSERT_TRUE(o);
    EXPECT_EQ(o->type, handshake_record);
    EXPECT_EQ(o->plain, (bytes{'a', 0, 0}));
    // Padding past the 2^14 bytes seal() takes: the most a record may carry, from the reference.
    bytes big = pattern(max_plaintext);
    big.push_back(alert);
    big.resize(max_ciphertext - tag_bytes, 0);
    const auto o2 = open(reader_, reference_seal(GetParam(), secret_, reader_.sequence(), big));
    ASSERT_TRUE(o2);
    EXPECT_EQ(o2->type, alert);
    EXPECT_EQ(o2->plain, pattern(max_plaintext));
}

TEST_P(RecordProtectionAead, AllZeroInnerPlaintextHasTypeZero) {
    for (const std::size_t zeros : {std::size_t{0}, std::size_t{1}, std::size_t{31}}) {
        SCOPED_TRACE(testing::Message() << "zeros " << zeros);
        const auto o = open(reader_, seal(writer_, 0, bytes(zeros, 0)));
        ASSERT_TRUE(o);
        EXPECT_EQ(o->type, 0);
        EXPECT_EQ(o->plain.size(), 0u);
    }
}

TEST_P(RecordProtectionAead, MaxSizeRecord) {
    const bytes plain = pattern(max_plaintext, 3);
    const bytes rec = seal(writer_, application_data, plain);
    ASSERT_EQ(rec.size(), max_plaintext + record_overhead);
    const auto o = open(reader_, rec);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->plain, plain);
    // One byte more is refused, and costs no sequence number.
    const bytes too_big = pattern(max_plaintext + 1);
    bytes out(too_big.size() + record_overhead);
    EXPECT_EQ(writer_.seal(application_data, too_big.data(), too_big.size(), out.data()), 0u);
    EXPECT_EQ(writer_.sequence(), 1u);
}

TEST_P(RecordProtectionAead, ExhaustedSequenceRefusesToSealOrOpen) {
    const std::uint64_t last = ~std::uint64_t{0} - 1;
    record_protection w;
    record_protection r;
    ASSERT_TRUE(w.init(GetParam(), secret_, last));
    ASSERT_TRUE(r.init(GetParam(), secret_, last));
    const bytes rec = seal(w, application_data, of("last"));
    ASSERT_FALSE(rec.empty());
    EXPECT_TRUE(open(r, rec));
    // 2^64 - 1: the sequence must not wrap.
    const bytes plain = pattern(16);
    bytes out(plain.size() + record_overhead);
    EXPECT_EQ(w.seal(application_data, plain.data(), plain.size(), out.data()), 0u);
    EXPECT_FALSE(open(r, rec));
}

TEST_P(RecordProtectionAead, WornAfterRekeyAfterRecords) {
    record_protection w;
    ASSERT_TRUE(w.init(GetParam(), secret_, record_protection::rekey_after - 1));
    EXPECT_FALSE(w.worn());
    ASSERT_FALSE(seal(w, application_data, of("x")).empty());
    EXPECT_TRUE(w.worn());
    ASSERT_TRUE(w.update());
    EXPECT_FALSE(w.worn());
}

} // namespace
} // namespace tarry::tls::test

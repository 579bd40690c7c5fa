// The record layer without a socket: the reader fed bytes, one row per row of docs/tls.md's
// "received -> answer" table, and the writer's retry bounds and KeyUpdate order.
#include "reference.hpp"

#include <tarry/tls/record_protection.hpp>
#include <tarry/tls/record_reader.hpp>
#include <tarry/tls/record_writer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace tarry::tls::test {
namespace {

constexpr std::uint8_t key_update_message = 24;

/// A TLS 1.3 client reduced to what it writes: records sealed by the reference sealer under the
/// client secret, following its own KeyUpdates.
class client_records {
public:
    explicit client_records(aead a = aead::aes_128_gcm) : a_(a), secret_(client_secret(a)) {}

    /// A record of `type` carrying `body`, then `padding` zero bytes.
    client_records& record(std::uint8_t type, const bytes& body, std::size_t padding = 0) {
        bytes inner = body;
        inner.push_back(type);
        inner.resize(inner.size() + padding, 0);
        return inner_plaintext(inner);
    }
    /// A record whose whole TLSInnerPlaintext is `inner` (no content type, oversized ...).
    client_records& inner_plaintext(const bytes& inner) {
        const bytes rec = reference_seal(a_, secret_, seq_++, inner);
        wire.insert(wire.end(), rec.begin(), rec.end());
        return *this;
    }
    client_records& data(std::string_view s, std::size_t padding = 0) {
        return record(application_data, of(s), padding);
    }
    client_records& empty_data(std::size_t n = 1) {
        for (std::size_t i = 0; i < n; ++i)
            record(application_data, {});
        return *this;
    }
    client_records& alert(std::uint8_t level, std::uint8_t description, std::size_t n = 1) {
        for (std::size_t i = 0; i < n; ++i)
            record(tls::alert, {level, description});
        return *this;
    }
    /// A KeyUpdate in one record (`request`: 1 update_requested, 0 not), or its bytes split
    /// over records as `parts` says; the client's key changes behind it.
    client_records& key_update(std::uint8_t request, std::vector<std::size_t> parts = {5}) {
        const bytes ku{key_update_message, 0, 0, 1, request};
        std::size_t off = 0;
        for (const std::size_t k : parts) {
            record(handshake_record, bytes(ku.begin() + static_cast<std::ptrdiff_t>(off),
                                           ku.begin() + static_cast<std::ptrdiff_t>(off + k)));
            off += k;
        }
        next_key();
        return *this;
    }
    client_records& key_updates(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            key_update(0);
        return *this;
    }
    /// Handshake message bytes, the key unchanged.
    client_records& handshake(const bytes& body) { return record(handshake_record, body); }
    client_records& raw(const bytes& b) {
        wire.insert(wire.end(), b.begin(), b.end());
        return *this;
    }
    /// The last record's last byte changed (its tag).
    client_records& tampered() {
        wire.back() ^= 1;
        return *this;
    }

    bytes wire;

private:
    void next_key() {
        secret_ = next_secret(a_, secret_);
        seq_ = 0;
    }

    aead a_;
    bytes secret_;
    std::uint64_t seq_ = 0;
};

/// What the record layer answered to the bytes, as the stream passes it on.
struct answer {
    std::string plaintext;         ///< the application data handed out, in order
    unsigned key_updates{};        ///< the peer's KeyUpdates taken (the read key updated)
    unsigned ours{};               ///< our KeyUpdates sealed in answer, under the key before them
    std::optional<unsigned> alert; ///< our fatal alert: the end
    std::optional<unsigned> peer_alert; ///< the peer's fatal alert: the end
    bool closed = false;                ///< close_notify: the end of the peer's input
    bool operator==(const answer&) const = default;
};

void PrintTo(const answer& a, std::ostream* os) {
    *os << "{plaintext " << a.plaintext.size() << " bytes \"" << a.plaintext.substr(0, 40)
        << "\", key_updates " << a.key_updates << ", ours " << a.ours << ", alert "
        << (a.alert ? std::to_string(*a.alert) : "none") << ", peer_alert "
        << (a.peer_alert ? std::to_string(*a.peer_alert) : "none") << ", closed " << a.closed
        << "}";
}

answer data(std::string s) {
    answer a;
    a.plaintext = std::move(s);
    return a;
}
answer updates(unsigned taken, unsigned ours, std::string then) {
    answer a = data(std::move(then));
    a.key_updates = taken;
    a.ours = ours;
    return a;
}
answer alert_after(unsigned description, std::string s = {}, unsigned key_updates = 0) {
    answer a = data(std::move(s));
    a.alert = description;
    a.key_updates = key_updates;
    return a;
}

/// Feeds `wire` to a reader `piece` bytes at a time (as a socket hands them over), taking the
/// records off the front as the stream does, until the bytes or the connection end; our
/// KeyUpdates come from a writer and are opened by the peer's side, key after key.
answer feed(const bytes& wire, std::size_t piece, aead a = aead::aes_128_gcm,
            bool from_server = false) {
    record_reader reader;
    record_writer writer;
    record_protection peer_in; // the peer's reading: the server secret
    EXPECT_TRUE(reader.init(a, client_secret(a), 0, from_server));
    EXPECT_TRUE(writer.init(a, server_secret(a)));
    EXPECT_TRUE(peer_in.init(a, server_secret(a)));
    auto out = std::make_unique<record_output>();
    answer got;
    bytes in;
    std::size_t given = 0;
    for (;;) {
        const record_event e = reader.read(in.data(), in.size());
        if (e.what == record_event::data)
            got.plaintext.append(reinterpret_cast<const char*>(in.data() + e.offset), e.length);
        in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(e.used));
        if (e.what == record_event::error) {
            got.alert = e.alert;
            break;
        }
        if (e.what == record_event::peer_alert) {
            got.peer_alert = e.alert;
            break;
        }
        if (e.what == record_event::close_notify) {
            got.closed = true;
            break;
        }
        if (e.what == record_event::key_update) {
            ++got.key_updates;
            if (e.requested) {
                EXPECT_TRUE(writer.answer_key_update(*out));
            }
            // What the writer sealed, as the peer opens it (the socket took it all).
            while (!out->empty()) {
                const auto pending = out->pending();
                bytes rec(pending.begin(), pending.end());
                const std::size_t len = std::size_t{rec[3]} << 8 | rec[4];
                const auto o = peer_in.open(rec.data(), record_header_bytes + len);
                EXPECT_TRUE(o.has_value());
                if (!o) break;
                EXPECT_EQ(o->type, handshake_record);
                EXPECT_EQ(bytes(rec.begin() + record_header_bytes,
                                rec.begin() +
                                    static_cast<std::ptrdiff_t>(record_header_bytes + o->length)),
                          (bytes{key_update_message, 0, 0, 1, 0}));
                EXPECT_TRUE(peer_in.update());
                ++got.ours;
                out->consumed(record_header_bytes + len);
            }
        }
        if (e.what != record_event::need_more) continue;
        if (given == wire.size()) break;
        const std::size_t k = std::min(piece, wire.size() - given);
        in.insert(in.end(), wire.begin() + static_cast<std::ptrdiff_t>(given),
                  wire.begin() + static_cast<std::ptrdiff_t>(given + k));
        given += k;
    }
    return got;
}

/// One row of docs/tls.md's table ("received" as it is written there; a row may have several
/// cases), the bytes that stand for it, and the answer.
struct row {
    std::string_view received;
    std::string_view the_case;
    bytes (*wire)();
    answer expected;
};

bytes largest_records() {
    client_records c;
    const std::string big(max_plaintext, 'b');
    c.data("GET / HTTP/1.1\r\n").data(big).data("padded", 300);
    // Content and padding up to the limit (2^14 of inner plaintext but the type).
    c.record(application_data, of("edge"), max_plaintext - 4);
    return c.wire;
}

std::string largest_plaintext() {
    return "GET / HTTP/1.1\r\n" + std::string(max_plaintext, 'b') + "padded" + "edge";
}

bytes handshake_message(std::uint8_t type) {
    return client_records{}.handshake({type, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8}).wire;
}

const row rows[] = {
    {"application data", "records up to 2^14 bytes, padded", largest_records,
     data(largest_plaintext())},
    {"`KeyUpdate(update_requested)`", "then data under the next key",
     [] { return client_records{}.data("before").key_update(1).data("after").wire; },
     updates(1, 1, "beforeafter")},
    {"`KeyUpdate(update_not_requested)`", "then data under the next key",
     [] { return client_records{}.key_update(0).data("after").wire; }, updates(1, 0, "after")},
    {"`KeyUpdate` with another value", "the value 2",
     [] {
         return client_records{}.handshake({key_update_message, 0, 0, 1, 2}).wire;
     },
     alert_after(47)},
    {"a `KeyUpdate` split over records (RFC 8446 §5.1 allows fragmenting handshake messages)",
     "2 + 3 bytes",
     [] {
         return client_records{}.key_update(1, {2, 3}).data("after").wire;
     },
     updates(1, 1, "after")},
    {"a `KeyUpdate` split over records (RFC 8446 §5.1 allows fragmenting handshake messages)",
     "a byte a record",
     [] {
         return client_records{}.key_update(0, {1, 1, 1, 1, 1}).data("after").wire;
     },
     updates(1, 0, "after")},
    {"another record between the fragments of a `KeyUpdate`", "data",
     [] {
         return client_records{}.handshake({key_update_message, 0}).data("between").wire;
     },
     alert_after(10)},
    {"another record between the fragments of a `KeyUpdate`", "an empty record",
     [] { return client_records{}.handshake({key_update_message}).empty_data().wire; },
     alert_after(10)},
    {"another record between the fragments of a `KeyUpdate`", "user_canceled",
     [] {
         return client_records{}.handshake({key_update_message, 0, 0}).alert(1, 90).wire;
     },
     alert_after(10)},
    {"a `KeyUpdate` with a length other than 1", "in one record",
     [] {
         return client_records{}.handshake({key_update_message, 0, 0, 2, 0, 0}).wire;
     },
     alert_after(50)},
    {"a `KeyUpdate` with a length other than 1", "split",
     [] {
         return client_records{}.handshake({key_update_message, 0}).handshake({0, 2, 0, 0}).wire;
     },
     alert_after(50)},
    {"zero-length application data", "32 in a row, data, then 33",
     [] { return client_records{}.empty_data(32).data("x").empty_data(33).wire; },
     alert_after(10, "x")},
    {"`close_notify`", "after data; nothing read behind it",
     [] { return client_records{}.data("last").alert(1, 0).data("ignored").wire; },
     [] {
         answer a = data("last");
         a.closed = true;
         return a;
     }()},
    {"`user_canceled`", "4 in a row, data, then 5",
     [] { return client_records{}.alert(1, 90, 4).data("x").alert(1, 90, 5).wire; },
     alert_after(10, "x")},
    {"a 5th `KeyUpdate` in a row", "4, data, then 5",
     [] { return client_records{}.key_updates(4).data("x").key_updates(5).wire; },
     alert_after(10, "x", 8)},
    {"any other alert", "handshake_failure, fatal",
     [] { return client_records{}.data("first").alert(2, 40).wire; },
     [] {
         answer a = data("first");
         a.peer_alert = 40;
         return a;
     }()},
    {"any other alert", "a warning-level alert other than closure",
     [] { return client_records{}.alert(1, 42).wire; },
     [] {
         answer a;
         a.peer_alert = 42;
         return a;
     }()},
    {"another handshake message (`NewSessionTicket`, `Certificate`, ...), or a `KeyUpdate` not "
     "at the end of its record (the key changes there, so a message may not straddle it)",
     "NewSessionTicket", [] { return handshake_message(4); }, alert_after(10)},
    {"another handshake message (`NewSessionTicket`, `Certificate`, ...), or a `KeyUpdate` not "
     "at the end of its record (the key changes there, so a message may not straddle it)",
     "Certificate", [] { return handshake_message(11); }, alert_after(10)},
    {"another handshake message (`NewSessionTicket`, `Certificate`, ...), or a `KeyUpdate` not "
     "at the end of its record (the key changes there, so a message may not straddle it)",
     "two KeyUpdates in one record",
     [] {
         return client_records{}
             .handshake({key_update_message, 0, 0, 1, 0, key_update_message, 0, 0, 1, 0})
             .wire;
     },
     alert_after(10)},
    {"`change_cipher_spec`, or any unprotected record", "change_cipher_spec",
     [] { return bytes{change_cipher_spec, 3, 3, 0, 1, 1}; }, alert_after(10)},
    {"`change_cipher_spec`, or any unprotected record", "a plain handshake record",
     [] { return bytes{handshake_record, 3, 3, 0, 4, key_update_message, 0, 0, 0}; },
     alert_after(10)},
    {"`change_cipher_spec`, or any unprotected record", "a protected change_cipher_spec",
     [] { return client_records{}.record(change_cipher_spec, {1}).wire; }, alert_after(10)},
    {"a record over 2^14 + 256 bytes", "announced in the header, before its bytes",
     [] {
         const std::size_t len = max_ciphertext + 1;
         return bytes{application_data, 3, 3, static_cast<std::uint8_t>(len >> 8),
                      static_cast<std::uint8_t>(len)};
     },
     alert_after(22)},
    {"a record over 2^14 + 256 bytes", "2^14 + 1 bytes of plaintext",
     [] {
         bytes inner = pattern(max_plaintext + 1);
         inner.push_back(application_data);
         return client_records{}.inner_plaintext(inner).wire;
     },
     alert_after(22)},
    {"a record that does not authenticate", "its tag changed",
     [] { return client_records{}.data("ok").data("changed").tampered().wire; },
     alert_after(20, "ok")},
    {"a record that does not authenticate", "too short for its tag",
     [] { return bytes{application_data, 3, 3, 0, 3, 1, 2, 3}; }, alert_after(20)},
};

void PrintTo(const row& r, std::ostream* os) {
    *os << r.received << ": " << r.the_case;
}

class ReceivedAnswer : public ::testing::TestWithParam<row> {};

INSTANTIATE_TEST_SUITE_P(DocsTlsTable, ReceivedAnswer, ::testing::ValuesIn(rows),
                         [](const auto& p) {
                             std::string name = std::to_string(p.index) + "_";
                             for (const char c : p.param.the_case)
                                 if (std::isalnum(static_cast<unsigned char>(c)) != 0) name += c;
                             return name;
                         });

TEST_P(ReceivedAnswer, AllAtOnceAndAByteAtATime) {
    const row& r = GetParam();
    SCOPED_TRACE(std::string(r.received) + ": " + std::string(r.the_case));
    const bytes wire = r.wire();
    EXPECT_EQ(feed(wire, wire.size()), r.expected);
    EXPECT_EQ(feed(wire, 1), r.expected);
    EXPECT_EQ(feed(wire, 1000), r.expected);
}

/// The "received" cells of the table under "What TLS 1.3 allows after the handshake".
std::set<std::string> documented_rows() {
    std::ifstream in(TARRY_DOCS_DIR "/tls.md");
    std::set<std::string> cells;
    std::string line;
    bool table = false;
    while (std::getline(in, line)) {
        if (line == "| received | answer |") {
            table = true;
            continue;
        }
        if (!table) continue;
        if (!line.starts_with("|")) break;
        if (line.starts_with("|---")) continue;
        const auto end = line.find(" | ");
        cells.insert(line.substr(2, end - 2));
    }
    return cells;
}

TEST(ReceivedAnswerTable, OneCaseAtLeastForEachRowOfTheDocsAndNoOther) {
    const std::set<std::string> documented = documented_rows();
    ASSERT_FALSE(documented.empty()) << "no table in " TARRY_DOCS_DIR "/tls.md";
    std::set<std::string> tested;
    for (const row& r : rows)
        tested.emplace(r.received);
    EXPECT_EQ(tested, documented);
}

TEST(ReceivedAnswerTable, EachAead) {
    for (const aead a : {aead::aes_128_gcm, aead::aes_256_gcm, aead::chacha20_poly1305}) {
        client_records c(a);
        c.data("one").key_update(1).data("two").alert(1, 0);
        answer expected = updates(1, 1, "onetwo");
        expected.closed = true;
        EXPECT_EQ(feed(c.wire, 3, a), expected) << aead_name(a);
    }
}

// --- The writer: retry bounds and KeyUpdate order ------------------------------------------

class RecordWriterTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(writer.init(a, server_secret(a)));
        ASSERT_TRUE(peer_in.init(a, server_secret(a)));
    }

    /// The records that wait in out, opened by the peer (KeyUpdates followed), all taken.
    std::vector<std::pair<std::uint8_t, std::string>> drain() {
        std::vector<std::pair<std::uint8_t, std::string>> got;
        const auto pending = out->pending();
        bytes wire(pending.begin(), pending.end());
        out->consumed(wire.size());
        std::size_t off = 0;
        while (off < wire.size()) {
            const std::size_t len = std::size_t{wire[off + 3]} << 8 | wire[off + 4];
            const auto o = peer_in.open(wire.data() + off, record_header_bytes + len);
            EXPECT_TRUE(o.has_value());
            if (!o) break;
            got.emplace_back(o->type, text({wire.data() + off + record_header_bytes, o->length}));
            if (o->type == handshake_record) {
                EXPECT_TRUE(peer_in.update());
            }
            off += record_header_bytes + len;
        }
        return got;
    }

    aead a = aead::aes_128_gcm;
    record_writer writer;
    record_protection peer_in;
    std::unique_ptr<record_output> out = std::make_unique<record_output>();
};

TEST_F(RecordWriterTest, BytesAreReportedOnlyOnceTheirRecordIsOut) {
    const std::string data(3 * max_plaintext, 'd');
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
    ASSERT_EQ(writer.seal(*out, p, data.size()), record_writer::sealed::ok);
    // Two records fit; the third waits for room.
    EXPECT_EQ(out->ahead, 2 * max_plaintext);
    out->consumed(record_header_bytes + 1); // a short send: no record is out
    EXPECT_EQ(out->take_sent(), 0U);
    out->consumed(max_plaintext + record_overhead - record_header_bytes - 1);
    EXPECT_EQ(out->take_sent(), max_plaintext);
    // The retry starts where the report ended; fewer bytes than are sealed is not a retry.
    EXPECT_EQ(writer.seal(*out, p + max_plaintext, max_plaintext - 1),
              record_writer::sealed::shrunk);
    ASSERT_EQ(writer.seal(*out, p + max_plaintext, data.size() - max_plaintext),
              record_writer::sealed::ok);
    EXPECT_EQ(out->ahead, max_plaintext); // the third waits until the output is empty
    out->consumed(out->pending().size());
    EXPECT_EQ(out->take_sent(), max_plaintext);
    EXPECT_TRUE(out->empty());
    ASSERT_EQ(writer.seal(*out, p + 2 * max_plaintext, max_plaintext), record_writer::sealed::ok);
    EXPECT_EQ(out->ahead, max_plaintext);
}

TEST_F(RecordWriterTest, OurKeyUpdateGoesBeforeTheDataAfterItAndAnswersOnceWhileItWaits) {
    const std::string data = "onetwo";
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
    ASSERT_EQ(writer.seal(*out, p, 3), record_writer::sealed::ok);
    ASSERT_TRUE(writer.answer_key_update(*out));
    ASSERT_TRUE(writer.answer_key_update(*out)); // ours waits: it answers both (RFC 8446, 4.6.3)
    // The retry: the same bytes first, then more, sealed behind the KeyUpdate under its key.
    ASSERT_EQ(writer.seal(*out, p, data.size()), record_writer::sealed::ok);
    const auto got = drain();
    ASSERT_EQ(got.size(), 3U);
    EXPECT_EQ(got[0], std::make_pair(std::uint8_t{application_data}, std::string("one")));
    EXPECT_EQ(got[1].first, handshake_record);
    EXPECT_EQ(got[2], std::make_pair(std::uint8_t{application_data}, std::string("two")));
    EXPECT_EQ(out->take_sent(), data.size());
    // Once it is out, the next request gets a KeyUpdate of its own.
    ASSERT_TRUE(writer.answer_key_update(*out));
    ASSERT_TRUE(writer.alert(*out, 1, 0));
    const auto then = drain();
    ASSERT_EQ(then.size(), 2U);
    EXPECT_EQ(then[0].first, handshake_record);
    EXPECT_EQ(then[1], std::make_pair(std::uint8_t{alert}, std::string("\x01\x00", 2)));
    EXPECT_EQ(writer.sequence(), 1U);
}

TEST_F(RecordWriterTest, AWornKeyIsUpdatedBeforeItSealsMore) {
    ASSERT_TRUE(writer.init(a, server_secret(a), record_protection::rekey_after));
    ASSERT_TRUE(peer_in.init(a, server_secret(a), record_protection::rekey_after));
    const std::string data = "after the key";
    ASSERT_EQ(writer.seal(*out, reinterpret_cast<const std::uint8_t*>(data.data()), data.size()),
              record_writer::sealed::ok);
    const auto got = drain();
    ASSERT_EQ(got.size(), 2U);
    EXPECT_EQ(got[0].first, handshake_record);
    EXPECT_EQ(got[1], std::make_pair(std::uint8_t{application_data}, data));
    EXPECT_EQ(writer.sequence(), 1U);
}

// --- Reading a server's records (the proxy's upstream connections) --------------------------

/// A NewSessionTicket of `body` bytes (its fields are not read: it is skipped).
bytes new_session_ticket(std::size_t body) {
    bytes m{4, static_cast<std::uint8_t>(body >> 16), static_cast<std::uint8_t>(body >> 8),
            static_cast<std::uint8_t>(body)};
    const bytes b = pattern(body);
    m.insert(m.end(), b.begin(), b.end());
    return m;
}

/// `m` split into records of the sizes in `parts` (the rest in a last one).
void split(client_records& peer, const bytes& m, std::vector<std::size_t> parts) {
    std::size_t off = 0;
    for (const std::size_t k : parts) {
        peer.handshake(bytes(m.begin() + static_cast<std::ptrdiff_t>(off),
                             m.begin() + static_cast<std::ptrdiff_t>(off + k)));
        off += k;
    }
    if (off < m.size())
        peer.handshake(bytes(m.begin() + static_cast<std::ptrdiff_t>(off), m.end()));
}

TEST(RecordReaderFromServer, NewSessionTicketsAreSkippedWholeSplitOrSeveralInARecord) {
    client_records server;
    server.handshake(new_session_ticket(200)).data("a");
    split(server, new_session_ticket(300), {1, 3, 100}); // the header itself split
    server.data("b");
    bytes two = new_session_ticket(40);
    const bytes second = new_session_ticket(0);
    two.insert(two.end(), second.begin(), second.end());
    server.handshake(two).key_update(1).data("c").alert(1, 0);
    for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, server.wire.size()}) {
        answer expected = updates(1, 1, "abc");
        expected.closed = true;
        EXPECT_EQ(feed(server.wire, piece, aead::aes_128_gcm, true), expected) << piece;
    }
    // From a client, a ticket is a message it never sends.
    EXPECT_EQ(feed(server.wire, 1000), alert_after(10));
}

TEST(RecordReaderFromServer, NothingComesBetweenATicketsFragments) {
    const bytes ticket = new_session_ticket(100);
    client_records server;
    server.handshake(bytes(ticket.begin(), ticket.begin() + 50)).data("x");
    EXPECT_EQ(feed(server.wire, 1000, aead::aes_128_gcm, true), alert_after(10));
    client_records alert_between;
    alert_between.handshake(bytes(ticket.begin(), ticket.begin() + 2)).alert(1, 90);
    EXPECT_EQ(feed(alert_between.wire, 1000, aead::aes_128_gcm, true), alert_after(10));
}

TEST(RecordReaderFromServer, ARunOfTicketsIsBoundedAsEmptyRecordsAre) {
    client_records allowed;
    for (unsigned i = 0; i < max_empty_records; ++i)
        allowed.handshake(new_session_ticket(10));
    allowed.data("ok");
    EXPECT_EQ(feed(allowed.wire, 1000, aead::aes_128_gcm, true), data("ok"));
    client_records flood;
    for (unsigned i = 0; i <= max_empty_records; ++i)
        flood.handshake(new_session_ticket(10));
    EXPECT_EQ(feed(flood.wire, 1000, aead::aes_128_gcm, true), alert_after(10));
}

} // namespace
} // namespace tarry::tls::test

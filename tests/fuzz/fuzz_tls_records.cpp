// libFuzzer harness for the TLS 1.3 record layer without I/O (tls::record_reader and
// tls::record_writer) with the request path behind it: the input becomes records, handed to the
// reader in pieces as a socket hands them over and taken off the front as tls::stream takes them;
// the plaintext goes through http::session as in fuzz_session.cpp; the answers are sealed by the
// writer under SSL_write's retry contract and taken off its output in pieces as a socket takes
// them, and the harness, as the client, opens every record and checks it. No socket: each input
// runs in microseconds. The sanitizers check the rest.
//
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DTARRY_FUZZ=ON
//   cmake --build build-fuzz --target fuzz_tls_records
//   build-fuzz/tests/fuzz_tls_records -max_total_time=60 tests/fuzz/corpus_tls
//
// Input: byte 0 chooses the mode (% 3: 0 records sealed by the harness with the client's
// secret, 1 raw bytes as they are, 2 both, chosen per segment), the AEAD (/ 3 % 3) and whether
// the reader reads a server's records, whose NewSessionTickets it skips (/ 9 % 2); byte 1
// the size of the pieces (of the input handed to the reader, and of the output taken); bytes 2
// and 3 the session's limits. Then segments, each starting with a control byte c:
//   raw (mode 1, or mode 2 with c & 0x40): a length byte, then that many bytes, unsealed;
//   sealed: c & 7 is what: 0-3 application data, 4 a handshake message from the input, 5 a
//   KeyUpdate (update_requested: c & 0x20), 6 an alert from the input, 7 the inner type from
//   the next byte; (c >> 3) & 3 the padding (0, 1, 32 or 300 zero bytes); a length byte L for
//   the content (except KeyUpdate): L bytes of the input, or, with c & 0x80, L * 64 bytes (the
//   input's, then 'a's), so that records up to the size limits are reached.
#include <tarry/http/hello_handler.hpp>
#include <tarry/http/session.hpp>
#include <tarry/tls/record_protection.hpp>
#include <tarry/tls/record_reader.hpp>
#include <tarry/tls/record_writer.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tls = tarry::tls;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

constexpr std::uint8_t client_secret[48] = {
    0x9e, 0x40, 0x64, 0x6c, 0xe7, 0x9a, 0x7f, 0x9d, 0xc0, 0x5a, 0xf8, 0x88, 0x9b, 0xce, 0x65, 0x52,
    0x87, 0x5a, 0xfa, 0x0b, 0x06, 0xdf, 0x00, 0x87, 0xf7, 0x92, 0xeb, 0xb7, 0xc1, 0x75, 0x04, 0xa5,
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10};
constexpr std::uint8_t server_secret[48] = {
    0xa1, 0x1a, 0xf9, 0xf0, 0x55, 0x31, 0xf8, 0x56, 0xad, 0x47, 0x11, 0x6b, 0x45, 0xa9, 0x50, 0x32,
    0x82, 0x04, 0xb4, 0xf4, 0x4b, 0xfb, 0x6b, 0x3a, 0x4b, 0x4f, 0x1f, 0x3f, 0xcb, 0x63, 0x16, 0x43,
    0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x20};

/// The most ciphertext one input makes (a byte can ask for 64), and the most rounds of pieces
/// in and out (one-byte pieces of a large record): each input's run stays short.
constexpr std::size_t max_wire = 64 * 1024;
constexpr int max_rounds = 20000;
/// The ciphertext the stream's buffer holds: a record of the largest size and then some.
constexpr std::size_t in_capacity = tls::record_header_bytes + tls::max_ciphertext + 4096;

/// The input, read from the front.
struct reader {
    const std::uint8_t* p;
    std::size_t n;
    [[nodiscard]] bool empty() const { return n == 0; }
    std::uint8_t byte() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
    std::span<const std::uint8_t> take(std::size_t k) {
        k = std::min(k, n);
        const std::span<const std::uint8_t> s(p, k);
        p += k;
        n -= k;
        return s;
    }
};

/// The client: it seals what it sends with the client secret and opens what the writer's
/// output gives it with the server secret, checking every record.
struct client {
    tls::record_protection seal;
    tls::record_protection open;
    std::string in;     ///< bytes from the writer, not yet a whole record
    std::string data;   ///< application data the stream sent
    bool ended = false; ///< a fatal alert or close_notify came: nothing may follow
    bool fatal = false;
    bool closed = false;

    /// The whole records among the bytes the writer's output gave.
    void read() {
        while (in.size() >= tls::record_header_bytes) {
            auto* rec = reinterpret_cast<std::uint8_t*>(in.data());
            check(rec[0] == tls::application_data && rec[1] == 3 && rec[2] == 3);
            const std::size_t len = std::size_t{rec[3]} << 8 | rec[4];
            // The writer seals 2^14 bytes at most, and never an empty record.
            check(len >= 1 + tls::tag_bytes && len <= tls::max_plaintext + 1 + tls::tag_bytes);
            if (in.size() < tls::record_header_bytes + len) break;
            check(!ended);
            const auto o = open.open(rec, tls::record_header_bytes + len);
            check(o.has_value());
            const std::uint8_t* body = rec + tls::record_header_bytes;
            switch (o->type) {
            case tls::application_data:
                check(o->length != 0);
                data.append(reinterpret_cast<const char*>(body), o->length);
                break;
            case tls::handshake_record: // only a KeyUpdate not requesting one
                check(o->length == 5 && body[0] == 24 && body[1] == 0 && body[2] == 0 &&
                      body[3] == 1 && body[4] == 0);
                check(open.update());
                break;
            case tls::alert:
                check(o->length == 2);
                if (body[0] == 2) {
                    fatal = true;
                } else {
                    check(body[0] == 1 && body[1] == 0); // close_notify
                    closed = true;
                }
                ended = true;
                break;
            default:
                std::abort();
            }
            in.erase(0, tls::record_header_bytes + len);
        }
    }
};

/// One record sealed by the client: `content`, its type, `padding` zero bytes.
void seal_record(client& c, std::string& wire, std::uint8_t type,
                 std::span<const std::uint8_t> content, std::size_t padding) {
    std::string inner(content.begin(), content.end());
    std::uint8_t seal_type = type;
    if (padding != 0) {
        // seal() puts the type after the bytes it is given: type 0 leaves the padding last.
        if (inner.size() + padding > tls::max_plaintext)
            padding = tls::max_plaintext - std::min(inner.size(), tls::max_plaintext);
        if (padding != 0) {
            inner.push_back(static_cast<char>(type));
            inner.append(padding - 1, '\0');
            seal_type = 0;
        }
    }
    if (inner.size() > tls::max_plaintext) inner.resize(tls::max_plaintext);
    std::string rec(inner.size() + tls::record_overhead, '\0');
    const std::size_t n =
        c.seal.seal(seal_type, reinterpret_cast<const std::uint8_t*>(inner.data()), inner.size(),
                    reinterpret_cast<std::uint8_t*>(rec.data()));
    check(n == inner.size() + tls::record_overhead);
    wire.append(rec.data(), n);
}

/// The wire bytes the input describes.
std::string build_wire(reader& in, unsigned mode, client& c) {
    static constexpr std::size_t paddings[] = {0, 1, 32, 300};
    std::string wire;
    while (!in.empty() && wire.size() < max_wire) {
        const std::uint8_t ctl = in.byte();
        if (mode == 1 || (mode == 2 && (ctl & 0x40) != 0)) {
            const auto raw = in.take(in.byte());
            wire.append(raw.begin(), raw.end());
            continue;
        }
        const std::size_t padding = paddings[(ctl >> 3) & 3];
        const unsigned what = ctl & 7;
        if (what == 5) {
            const std::uint8_t ku[] = {24, 0, 0, 1, static_cast<std::uint8_t>((ctl >> 5) & 1)};
            seal_record(c, wire, tls::handshake_record, ku, padding);
            check(c.seal.update()); // the client writes under its next key from here
            continue;
        }
        std::uint8_t type = tls::application_data;
        if (what == 4) type = tls::handshake_record;
        if (what == 6) type = tls::alert;
        if (what == 7) type = in.byte();
        const std::size_t len = (ctl & 0x80) != 0 ? std::size_t{in.byte()} * 64 : in.byte();
        const auto given = in.take(len);
        std::vector<std::uint8_t> content(given.begin(), given.end());
        content.resize(len, 'a');
        seal_record(c, wire, type, content, padding);
        // A KeyUpdate the fuzzer spelled out itself: the client follows it too.
        if (type == tls::handshake_record && content.size() == 5 && content[0] == 24 &&
            content[1] == 0 && content[2] == 0 && content[3] == 1 && content[4] <= 1)
            check(c.seal.update());
    }
    return wire;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    static const tarry::http::router routes = [] {
        tarry::http::router r;
        r.add("/", std::make_shared<tarry::http::hello_handler>());
        return r;
    }();
    const unsigned mode = data[0] % 3;
    const auto a = static_cast<tls::aead>(data[0] / 3 % 3);
    const std::size_t secret_len = a == tls::aead::aes_256_gcm ? 48 : 32;
    const std::size_t write_size =
        data[1] < 128 ? 1 + std::size_t{data[1]} : 1 + std::size_t{data[1] - 128u} * 512;
    tarry::http::session_settings settings;
    settings.routes = &routes;
    settings.max_header_bytes = 64 + static_cast<std::size_t>(data[2]) * 16;
    settings.max_body_bytes = static_cast<std::size_t>(data[3]) * 8;
    settings.max_requests = data[3] % 5;
    settings.max_queued_bytes = 1 + static_cast<std::size_t>(data[3] % 8) * 256;
    settings.keep_alive_timeout_s = data[3] % 3;
    reader in{data + 4, size - 4};

    client c;
    tls::record_reader rd;
    tls::record_writer wr;
    const auto out = std::make_unique<tls::record_output>();
    check(rd.init(a, {client_secret, secret_len}, 0, data[0] / 9 % 2 == 1));
    check(wr.init(a, {server_secret, secret_len}));
    check(c.seal.init(a, {client_secret, secret_len}));
    check(c.open.init(a, {server_secret, secret_len}));
    const std::string wire = build_wire(in, mode, c);

    tarry::http::session s(settings);
    const std::size_t capacity = settings.max_header_bytes + 1024;
    std::string cipher;  // handed to the reader, not yet taken (a partial record at most)
    std::string waiting; // plaintext of the last record opened, not yet handed over
    std::string plain;   // handed over, not yet consumed by the session
    std::string out_text;
    std::string queued;   // the session's answers, not yet reported sent by the writer
    std::string sent;     // what the writer's output reported sent
    std::size_t off = 0;  // of the wire, handed over
    bool reading = true;  // the reader is still fed (no end, error, or closing session)
    bool broken = false;  // a protocol error (our alert) or the client's fatal alert
    bool settled = false; // the exchange ran to its end within max_rounds
    // The session takes what it can of the plaintext, as the connection hands it over: after
    // a read, and again once the answers are written (it stops at max_queued_bytes).
    const auto feed = [&]() -> bool {
        if (s.closing()) return false;
        const std::size_t used =
            s.consume(plain.data(), plain.size(), out_text, "Thu, 01 Jan 1970 00:00:00 GMT");
        check(used <= plain.size());
        plain.erase(0, used);
        const bool answered = !out_text.empty();
        if (answered) check(out_text.compare(0, 9, "HTTP/1.1 ") == 0);
        check(out_text.size() <= settings.max_queued_bytes + 512);
        queued += out_text;
        out_text.clear();
        if (s.has_file()) s.file_done();
        if (settings.max_requests != 0) check(s.requests() <= settings.max_requests);
        if (s.closing()) {
            reading = false; // the connection stops reading
            return answered;
        }
        // A full buffer the session cannot make progress on must be impossible: the header
        // limit is below the capacity and bodies are consumed as they arrive.
        if (plain.size() == capacity && used == 0) std::abort();
        return used != 0 || answered;
    };
    // What the writer's output holds goes to the client, `limit` bytes at most (a socket that
    // takes a piece); the bytes of the records all out are reported sent.
    const auto take_output = [&](std::size_t limit) -> bool {
        const auto pending = out->pending();
        const std::size_t k = std::min(limit, pending.size());
        c.in.append(reinterpret_cast<const char*>(pending.data()), k);
        out->consumed(k);
        const std::size_t r = out->take_sent();
        check(r <= queued.size());
        sent.append(queued, 0, r);
        queued.erase(0, r);
        return k != 0;
    };
    for (int rounds = 0; rounds < max_rounds; ++rounds) {
        bool moved = false;
        // A piece of the wire arrives, as much as the stream's buffer has room for.
        if (reading && off < wire.size() && cipher.size() < in_capacity) {
            const std::size_t k =
                std::min({write_size, wire.size() - off, in_capacity - cipher.size()});
            cipher.append(wire, off, k);
            off += k;
            moved = true;
        }
        // The connection's side: records opened while the session has room for plaintext.
        while (reading) {
            if (!waiting.empty()) {
                const std::size_t k = std::min(capacity - plain.size(), waiting.size());
                if (k == 0) break;
                plain.append(waiting, 0, k);
                waiting.erase(0, k);
                moved = true;
                feed();
                continue;
            }
            auto* bytes = reinterpret_cast<std::uint8_t*>(cipher.data());
            const tls::record_event e = rd.read(bytes, cipher.size());
            check(e.used <= cipher.size());
            if (e.what == tls::record_event::data) {
                check(e.length != 0 && e.length <= tls::max_plaintext);
                check(e.offset + e.length <= e.used);
                waiting.assign(reinterpret_cast<const char*>(bytes + e.offset), e.length);
            }
            cipher.erase(0, e.used);
            if (e.what == tls::record_event::need_more) {
                // A record too large for the buffer is refused at its header.
                check(cipher.size() < in_capacity);
                break;
            }
            moved = true;
            if (e.what == tls::record_event::error) {
                // Our alert goes out (the client reads everything).
                check(e.alert != 0);
                check(wr.alert(*out, 2, e.alert));
                take_output(SIZE_MAX);
                c.read();
                check(c.fatal);
                reading = false;
                broken = true;
            } else if (e.what == tls::record_event::peer_alert) {
                reading = false;
                broken = true;
            } else if (e.what == tls::record_event::close_notify) {
                reading = false;
            } else if (e.what == tls::record_event::key_update && e.requested) {
                check(wr.answer_key_update(*out));
            }
        }
        // The answers, by the retry contract: every call starts at the first byte not reported.
        if (!queued.empty() && !broken) {
            const auto* p = reinterpret_cast<const std::uint8_t*>(queued.data());
            const tls::record_writer::sealed r = wr.seal(*out, p, queued.size());
            check(r != tls::record_writer::sealed::shrunk);
            if (r == tls::record_writer::sealed::exhausted) broken = true;
        }
        if (!broken && take_output(write_size)) moved = true;
        if (queued.empty() && !plain.empty() && !broken && feed()) moved = true;
        c.read();
        // The client has each byte reported sent, once and in order; and only bytes the
        // session gave (those not yet reported can only be the next ones queued).
        check(c.data.size() >= sent.size());
        check(c.data.compare(0, sent.size(), sent) == 0);
        check(c.data.size() <= sent.size() + queued.size());
        check(c.data.compare(sent.size(), std::string::npos, queued, 0,
                             c.data.size() - sent.size()) == 0);
        if (!moved && (off == wire.size() || !reading) && (queued.empty() || broken)) {
            settled = true;
            break;
        }
    }
    if (settled && !broken) {
        check(queued.empty());
        check(out->empty());
        check(c.data == sent);
        check(wr.alert(*out, 1, 0)); // close_notify
        take_output(SIZE_MAX);
        c.read();
        check(c.closed);
    }
    return 0;
}

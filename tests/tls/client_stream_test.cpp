// tls::client_stream, the proxy's TLS to its upstreams, against OpenSSL's own server on a
// socketpair: OpenSSL's object for the handshake and the first exchange, then tarry's records
// from the first time the connection goes idle (TLS 1.3), and what a server may do from there:
// more data both ways, records of every size, a KeyUpdate it asks to be answered, a ticket that
// comes late, close_notify each way. And the connections that keep OpenSSL's object: TLS 1.2, a
// KeyUpdate during the first exchange.

#include <tarry/tls/client_context.hpp>
#include <tarry/tls/client_stream.hpp>
#include <tarry/tls/key_log.hpp>
#include <tarry/tls/record_protection.hpp>

#include "reference.hpp"

#include <gtest/gtest.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tarry::tls::test {
namespace {

/// A self-signed certificate for "localhost" and its key, made once.
struct identity {
    EVP_PKEY* key = nullptr;
    X509* cert = nullptr;
    identity() {
        key = EVP_EC_gen("P-256");
        cert = X509_new();
        if (key == nullptr || cert == nullptr) throw std::runtime_error("no key");
        X509_set_version(cert, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
        X509_gmtime_adj(X509_getm_notBefore(cert), 0);
        X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
        X509_set_pubkey(cert, key);
        X509_NAME* name = X509_get_subject_name(cert);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
        X509_set_issuer_name(cert, name);
        if (X509_sign(cert, key, EVP_sha256()) == 0) throw std::runtime_error("no certificate");
    }
    ~identity() {
        X509_free(cert);
        EVP_PKEY_free(key);
    }
};

const identity& server_identity() {
    static const identity id;
    return id;
}

int nonblocking(int fd) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

class ClientStreamTest : public ::testing::Test {
protected:
    void SetUp() override {
        int fds[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
        client_fd = nonblocking(fds[0]);
        server_fd = nonblocking(fds[1]);
    }
    void TearDown() override {
        if (server != nullptr) SSL_free(server);
        if (server_ctx != nullptr) SSL_CTX_free(server_ctx);
        ::close(client_fd);
        ::close(server_fd);
        ERR_clear_error();
    }

    /// Both handshakes, stepped in turn until each is done. `max_version`: the server's.
    void connect(int max_version = TLS1_3_VERSION) {
        server_ctx = SSL_CTX_new(TLS_server_method());
        ASSERT_NE(server_ctx, nullptr);
        SSL_CTX_set_max_proto_version(server_ctx, max_version);
        if (setup_server) setup_server(server_ctx);
        ASSERT_EQ(SSL_CTX_use_certificate(server_ctx, server_identity().cert), 1);
        ASSERT_EQ(SSL_CTX_use_PrivateKey(server_ctx, server_identity().key), 1);
        server = SSL_new(server_ctx);
        SSL_set_fd(server, server_fd);
        SSL_set_accept_state(server);
        ASSERT_TRUE(client.start(context, client_fd, "localhost", &slot));
        bool client_done = false;
        bool server_done = false;
        std::string why;
        for (int i = 0; i < 100 && !(client_done && server_done); ++i) {
            if (!client_done) {
                const step s = client.handshake(why);
                ASSERT_NE(s, step::failed) << why;
                client_done = s == step::done;
            }
            if (!server_done) {
                const int r = SSL_do_handshake(server);
                if (r == 1) {
                    server_done = true;
                } else {
                    const int e = SSL_get_error(server, r);
                    ASSERT_TRUE(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) << e;
                }
            }
        }
        ASSERT_TRUE(client_done && server_done);
    }

    /// `data` from the client to the server, each side taking what the socket has room for.
    void up(const std::string& data) {
        std::string got;
        std::size_t sent = 0;
        char buf[20000];
        for (int i = 0; i < 10000 && got.size() < data.size(); ++i) {
            if (sent < data.size()) {
                const ssize_t n = client.send(data.data() + sent, data.size() - sent);
                if (n < 0) {
                    ASSERT_EQ(errno, EAGAIN);
                } else {
                    sent += static_cast<std::size_t>(n);
                }
            }
            const int r = SSL_read(server, buf, sizeof buf);
            if (r > 0) {
                got.append(buf, static_cast<std::size_t>(r));
            } else {
                ASSERT_EQ(SSL_get_error(server, r), SSL_ERROR_WANT_READ);
            }
        }
        EXPECT_TRUE(got == data) << got.size() << " of " << data.size() << " bytes";
    }

    /// `data` from the server to the client.
    void down(const std::string& data) {
        std::string got;
        std::size_t sent = 0;
        char buf[20000];
        for (int i = 0; i < 10000 && got.size() < data.size(); ++i) {
            if (sent < data.size()) {
                const int w =
                    SSL_write(server, data.data() + sent,
                              static_cast<int>(std::min<std::size_t>(data.size() - sent, 100000)));
                if (w > 0) {
                    sent += static_cast<std::size_t>(w);
                } else {
                    ASSERT_EQ(SSL_get_error(server, w), SSL_ERROR_WANT_WRITE);
                }
            }
            const ssize_t n = client.recv(buf, sizeof buf);
            if (n > 0) {
                got.append(buf, static_cast<std::size_t>(n));
            } else {
                ASSERT_EQ(n, -1);
                ASSERT_EQ(errno, EAGAIN);
            }
        }
        EXPECT_TRUE(got == data) << got.size() << " of " << data.size() << " bytes";
    }

    /// What the client reads of a response already on its socket: until `size` bytes, in at
    /// most `reads` reads, each of which must give some.
    std::string read_response(std::size_t size, int reads) {
        std::string got;
        char buf[8192];
        for (int i = 0; i < reads && got.size() < size; ++i) {
            const ssize_t n = client.recv(buf, sizeof buf);
            if (n <= 0) {
                ADD_FAILURE() << "read " << i << ": " << n << ", errno " << errno;
                break;
            }
            got.append(buf, static_cast<std::size_t>(n));
        }
        return got;
    }

    /// A request and its response.
    void exchange(const std::string& request, const std::string& response) {
        up(request);
        down(response);
    }

    /// The connection goes idle, as its pool takes it: nothing waits in it.
    void idle() {
        ASSERT_FALSE(client.input_waiting());
        client.idle();
    }

    /// What the server writes while `write` runs, held back from the socket (for the test to
    /// put there piece by piece, or to spoil).
    std::string held(const std::function<void()>& write) {
        BIO* mem = BIO_new(BIO_s_mem());
        BIO* sock = SSL_get_wbio(server);
        BIO_up_ref(sock); // (the read side keeps its own reference)
        SSL_set0_wbio(server, mem);
        write();
        char* p = nullptr;
        const long n = BIO_get_mem_data(mem, &p);
        std::string out(p, static_cast<std::size_t>(std::max(n, 0L)));
        SSL_set0_wbio(server, sock); // (frees mem)
        return out;
    }
    /// Bytes onto the client's socket, as if the server's TCP sent them.
    void wire(const std::string& bytes) {
        ASSERT_EQ(::send(server_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }
    /// The records in `bytes` (each with its header), one string each.
    static std::vector<std::string> records_in(const std::string& bytes) {
        std::vector<std::string> out;
        for (std::size_t at = 0; at + 5 <= bytes.size();) {
            const std::size_t len = std::size_t{static_cast<unsigned char>(bytes[at + 3])} << 8 |
                                    static_cast<unsigned char>(bytes[at + 4]);
            out.push_back(bytes.substr(at, 5 + len));
            at += 5 + len;
        }
        return out;
    }
    /// The client's recv as an idle pooled connection's (upstream_connection::tls_quiet): it
    /// takes what carries nothing, and finds nothing for HTTP.
    void quiet() {
        char c = 0;
        ASSERT_EQ(client.recv(&c, 1), -1);
        ASSERT_EQ(errno, EAGAIN);
    }

    /// The connection idle on tarry's records, then `bytes()` on its socket: refused.
    void refused_when_idle(const std::function<std::string()>& bytes) {
        connect();
        exchange("first", "first answer");
        idle();
        ASSERT_TRUE(client.own_records());
        wire(bytes());
        char c = 0;
        EXPECT_EQ(client.recv(&c, 1), -1);
        EXPECT_EQ(errno, EPROTO);
        EXPECT_EQ(client.recv(&c, 1), -1);
        EXPECT_EQ(client.send("more", 4), -1); // nothing goes after a fatal alert
        char buf[100];
        const int r = SSL_read(server, buf, sizeof buf);
        EXPECT_LE(r, 0);
        EXPECT_EQ(SSL_get_error(server, r), SSL_ERROR_SSL); // (not the end: an alert)
    }

    std::function<void(SSL_CTX*)> setup_server;
    client_context context{[] {
        client_settings s;
        s.verify = false;
        return s;
    }()};
    session_slot slot;
    client_stream client;
    int client_fd = -1;
    int server_fd = -1;
    SSL_CTX* server_ctx = nullptr;
    SSL* server = nullptr;
};

std::string text_of(std::size_t n, std::size_t offset = 0) {
    return text(pattern(n, offset));
}

/// A server whose session tickets carry 2,000 bytes of its own, in records of at most 512
/// bytes: each ticket spans several records (RFC 8446, 5.1 lets a handshake message be split).
void big_tickets_in_small_records(SSL_CTX* ctx) {
    SSL_CTX_set_max_send_fragment(ctx, 512);
    SSL_CTX_set_session_ticket_cb(
        ctx,
        [](SSL* s, void*) {
            static const std::string data(2000, 't');
            return SSL_SESSION_set1_ticket_appdata(SSL_get_session(s), data.data(), data.size());
        },
        nullptr, nullptr);
}

TEST_F(ClientStreamTest, TheRecordsBecomeOursWhenItFirstGoesIdleAndTheSessionIsKept) {
    connect();
    exchange("GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK\r\n\r\n");
    EXPECT_FALSE(client.own_records());
    // The server's tickets came with the first response: a session to resume.
    EXPECT_NE(slot.get(), nullptr);
    idle();
    EXPECT_TRUE(client.own_records());
    for (int i = 0; i < 5; ++i)
        exchange("GET /" + std::to_string(i) + " HTTP/1.1\r\n\r\n", "answer " + std::to_string(i));
    // Records of every size both ways: several full records, and one byte past.
    exchange(text_of(3 * 16384 + 1), text_of(5 * 16384 + 1, 7));
    exchange(text_of(300000, 3), text_of(1000000, 5));
    idle();
    exchange("again", "still");
}

TEST_F(ClientStreamTest, AKeyUpdateTheServerAsksForIsAnsweredAndBothKeysMove) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(SSL_key_update(server, SSL_KEY_UPDATE_REQUESTED), 1);
        down("after the server's key update " + std::to_string(i));
        // The client's answer (its KeyUpdate) came before this, or OpenSSL could not open it.
        up("under the client's next key " + std::to_string(i));
    }
    ASSERT_EQ(SSL_key_update(server, SSL_KEY_UPDATE_NOT_REQUESTED), 1);
    exchange("one more", "under the server's fourth key");
}

TEST_F(ClientStreamTest, ATicketThatComesLaterIsSkipped) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    ASSERT_EQ(SSL_new_session_ticket(server), 1);
    ASSERT_EQ(SSL_new_session_ticket(server), 1);
    exchange("second", "second answer, behind two tickets");
}

TEST_F(ClientStreamTest, CloseNotifyFromTheServerEndsTheInput) {
    connect();
    exchange("first", "first answer");
    idle();
    down("last words");
    ASSERT_EQ(SSL_shutdown(server), 0); // sent, the client's not yet read
    char buf[100];
    EXPECT_EQ(client.recv(buf, sizeof buf), 0);
}

TEST_F(ClientStreamTest, OurCloseNotifyReachesTheServerAfterOurRecords) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    up("the last request");
    client.close_notify();
    char buf[100];
    const int r = SSL_read(server, buf, sizeof buf);
    EXPECT_EQ(r, 0);
    EXPECT_EQ(SSL_get_error(server, r), SSL_ERROR_ZERO_RETURN);
}

TEST_F(ClientStreamTest, TheNextConnectionResumesWithTheKeptSession) {
    connect();
    exchange("first", "first answer");
    idle();
    SSL_CTX* first_ctx = std::exchange(server_ctx, nullptr);
    SSL_free(std::exchange(server, nullptr));
    ::close(client_fd);
    ::close(server_fd);
    SetUp();
    // The same server context (its ticket key), a new connection with the slot's session.
    server = SSL_new(first_ctx);
    server_ctx = first_ctx;
    SSL_set_fd(server, server_fd);
    SSL_set_accept_state(server);
    client_stream second;
    ASSERT_TRUE(second.start(context, client_fd, "localhost", &slot));
    std::string why;
    bool c = false;
    bool s = false;
    for (int i = 0; i < 100 && !(c && s); ++i) {
        if (!c) c = second.handshake(why) == step::done;
        if (!s) s = SSL_do_handshake(server) == 1;
    }
    ASSERT_TRUE(c && s) << why;
    EXPECT_TRUE(second.resumed());
}

TEST_F(ClientStreamTest, TlsOneTwoKeepsOpenSslsObjectAndWorks) {
    connect(TLS1_2_VERSION);
    exchange("first", "first answer");
    idle();
    EXPECT_FALSE(client.own_records());
    exchange("second", "second answer");
    exchange(text_of(200000), text_of(400000, 1));
}

TEST_F(ClientStreamTest, ARenegotiationTheServerAsksForOnTlsOneTwoIsRefused) {
    connect(TLS1_2_VERSION);
    exchange("first", "first answer");
    idle();
    // A HelloRequest: the client reads the data behind it and answers no_renegotiation (a
    // warning), never a ClientHello; OpenSSL's server ends the connection on that answer (its
    // fatal alert), which the client's next read reports.
    ASSERT_EQ(SSL_renegotiate(server), 1);
    SSL_do_handshake(server); // (the HelloRequest goes)
    down("under the same keys");
    char buf[100];
    const int r = SSL_read(server, buf, sizeof buf);
    EXPECT_LE(r, 0);
    EXPECT_EQ(SSL_get_error(server, r), SSL_ERROR_SSL);
    EXPECT_EQ(SSL_renegotiate_pending(server), 1); // (no ClientHello came)
    char c = 0;
    EXPECT_EQ(client.recv(&c, 1), -1);
    EXPECT_EQ(errno, EPROTO);
}

TEST_F(ClientStreamTest, AKeyUpdateDuringTheFirstExchangeKeepsOpenSslsObject) {
    connect();
    up("first");
    ASSERT_EQ(SSL_key_update(server, SSL_KEY_UPDATE_REQUESTED), 1);
    down("first answer, under the server's next key");
    idle();
    // The secrets captured at the handshake are not the keys in use now.
    EXPECT_FALSE(client.own_records());
    exchange("second", "second answer");
}

TEST_F(ClientStreamTest, BytesNoOneAskedForKeepTheConnectionFromGoingIdle) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    ASSERT_GT(SSL_write(server, "unasked", 7), 0);
    char buf[3];
    ASSERT_EQ(client.recv(buf, sizeof buf), 3); // part of it read, the rest waiting here
    EXPECT_TRUE(client.input_waiting());
}

// --- What a real server may do around the takeover, and what an attacker would -----------------

TEST_F(ClientStreamTest, ATicketSplitOverRecordsAroundTheFirstIdleMomentIsSkippedWhole) {
    setup_server = big_tickets_in_small_records;
    connect();
    exchange("first", "first answer"); // (behind the handshake's two tickets, in pieces)
    const std::string ticket = held([&] {
        ASSERT_EQ(SSL_new_session_ticket(server), 1);
        ASSERT_EQ(SSL_do_handshake(server), 1);
    });
    const std::vector<std::string> records = records_in(ticket);
    ASSERT_GE(records.size(), 3U);
    // The ticket's first record comes right behind the response, and OpenSSL reads it as the
    // connection goes idle; the rest comes while it waits in its pool.
    wire(records[0]);
    quiet();
    idle();
    for (std::size_t i = 1; i < records.size(); ++i)
        wire(records[i]);
    quiet();
    idle();
    exchange("second", "second answer");
    idle();
    EXPECT_TRUE(client.own_records());
    exchange("third", "third answer");
}

/// The server's traffic secret, from its key log (the callback takes no argument).
std::string server_secret_line;

TEST_F(ClientStreamTest, ATicketWhoseHeaderIsSplitOverRecordsAtTheFirstIdleMomentIsSkipped) {
    // A server other than OpenSSL may pack a whole ticket and the first bytes of the next into
    // one record: OpenSSL's object then holds a part of a message header that no call tells
    // of. The server's records after the handshake are sealed here (its secret from its key
    // log; no tickets of OpenSSL's, so the response is its only record before them).
    server_secret_line.clear();
    setup_server = [](SSL_CTX* ctx) {
        SSL_CTX_set_num_tickets(ctx, 0);
        SSL_CTX_set_keylog_callback(ctx, [](const SSL*, const char* line) {
            if (std::string_view(line).starts_with("SERVER_TRAFFIC_SECRET_0 "))
                server_secret_line = line;
        });
    };
    connect();
    exchange("first", "first answer"); // the server's record 0
    std::uint8_t secret[64];
    const std::size_t secret_len = key_log_secret(server_secret_line, secret);
    const auto a = aead_of_suite(
        static_cast<std::uint16_t>(SSL_CIPHER_get_protocol_id(SSL_get_current_cipher(server))));
    ASSERT_TRUE(a.has_value());
    record_protection sealer;
    ASSERT_TRUE(sealer.init(*a, {secret, secret_len}, 1));
    const auto sealed = [&](std::uint8_t type, const std::string& plain) {
        std::string out(plain.size() + record_overhead, '\0');
        const std::size_t n =
            sealer.seal(type, reinterpret_cast<const std::uint8_t*>(plain.data()), plain.size(),
                        reinterpret_cast<std::uint8_t*>(out.data()));
        out.resize(n);
        return out;
    };
    // NewSessionTicket: lifetime 7200 s, age_add, a 1-byte nonce, a 4-byte ticket, no
    // extensions (18 bytes).
    const std::string body("\x00\x00\x1c\x20\x01\x02\x03\x04\x01\x07\x00\x04tick\x00\x00", 18);
    const std::string ticket = std::string("\x04\x00\x00\x12", 4) + body;
    wire(sealed(handshake_record, ticket + ticket.substr(0, 2)));
    quiet();
    client.idle();
    wire(sealed(handshake_record, ticket.substr(2)));
    quiet();
    client.idle();
    up("second");
    wire(sealed(application_data, "second answer"));
    char buf[100];
    ASSERT_EQ(client.recv(buf, sizeof buf), 13) << errno;
    EXPECT_EQ(std::string(buf, 13), "second answer");
    idle();
    EXPECT_TRUE(client.own_records());
    up("third");
    wire(sealed(application_data, "third answer"));
    ASSERT_EQ(client.recv(buf, sizeof buf), 12) << errno;
    EXPECT_EQ(std::string(buf, 12), "third answer");
}

TEST_F(ClientStreamTest, TicketsSplitOverRecordsAfterTheTakeoverAreSkipped) {
    setup_server = big_tickets_in_small_records;
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    const std::string tickets = held([&] {
        ASSERT_EQ(SSL_new_session_ticket(server), 1);
        ASSERT_EQ(SSL_new_session_ticket(server), 1);
        ASSERT_EQ(SSL_do_handshake(server), 1);
    });
    // Record by record, the connection idle in between.
    for (const std::string& r : records_in(tickets)) {
        wire(r);
        quiet();
        idle();
    }
    // And between the records of a response (small ones: max_send_fragment).
    const std::string response = text_of(5000, 3);
    const std::string mixed = held([&] {
        ASSERT_EQ(SSL_write(server, response.data(), 2000), 2000);
        ASSERT_EQ(SSL_new_session_ticket(server), 1);
        ASSERT_EQ(SSL_do_handshake(server), 1);
        ASSERT_EQ(SSL_write(server, response.data() + 2000, 3000), 3000);
    });
    up("second");
    wire(mixed);
    EXPECT_TRUE(read_response(response.size(), 100) == response);
    exchange("third", "third answer");
}

TEST_F(ClientStreamTest, ARecordHalfReadWhenItGoesIdleKeepsOpenSslsObjectUntilItIsWhole) {
    connect();
    exchange("first", "first answer");
    const std::string ticket = held([&] {
        ASSERT_EQ(SSL_new_session_ticket(server), 1);
        ASSERT_EQ(SSL_do_handshake(server), 1);
    });
    ASSERT_GT(ticket.size(), 20U);
    wire(ticket.substr(0, 11)); // its header, and part of it
    quiet();
    client.idle(); // (as the pool's: the part read waits in OpenSSL's buffer)
    EXPECT_FALSE(client.own_records());
    wire(ticket.substr(11));
    quiet();
    idle();
    exchange("second", "second answer");
    idle();
    EXPECT_TRUE(client.own_records());
    exchange("third", "third answer");
}

TEST_F(ClientStreamTest, AFullRecordTrickledInByteByByteIsOpenedOnce) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    const std::string body = text_of(16384, 9);
    std::string bytes = held([&] { ASSERT_EQ(SSL_write(server, body.data(), 16384), 16384); });
    ASSERT_EQ(records_in(bytes).size(), 1U);
    up("a full record, please");
    std::string got;
    char buf[20000];
    for (std::size_t at = 0; at < bytes.size(); ++at) {
        wire(bytes.substr(at, 1));
        const ssize_t n = client.recv(buf, sizeof buf);
        if (n > 0) {
            got.append(buf, static_cast<std::size_t>(n));
        } else {
            ASSERT_EQ(n, -1);
            ASSERT_EQ(errno, EAGAIN) << "at byte " << at;
        }
    }
    EXPECT_TRUE(got == body) << got.size();
    exchange("second", "second answer");
}

TEST_F(ClientStreamTest, PaddedRecordsAndOneByteRecordsFromTheServerAreOpened) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    SSL_set_block_padding(server, 4096); // each record padded up to a multiple of 4 KB
    exchange("padded", text_of(100000, 1));
    SSL_set_block_padding(server, 1);
    // A response in one-byte records (a server that writes as it makes each byte).
    const std::string response = text_of(3000, 2);
    const std::string bytes = held([&] {
        for (char c : response)
            ASSERT_EQ(SSL_write(server, &c, 1), 1);
    });
    ASSERT_EQ(records_in(bytes).size(), response.size());
    up("one byte at a time");
    wire(bytes);
    EXPECT_TRUE(read_response(response.size(), 10) == response);
    exchange("last", "last answer");
}

TEST_F(ClientStreamTest, AKeyUpdateInTheMiddleOfAResponseWhileTheRequestStillGoesUp) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    // A large upload, the socket full most of the time; the server answers as it reads, and
    // half way asks for the client's new key.
    const std::string request = text_of(2'000'000, 4);
    const std::string response = text_of(500'000, 6);
    std::string got_up;
    std::string got_down;
    std::size_t sent_up = 0;
    std::size_t sent_down = 0;
    bool asked = false;
    char buf[20000];
    for (int i = 0;
         i < 100000 && (got_up.size() < request.size() || got_down.size() < response.size()); ++i) {
        if (sent_up < request.size()) {
            const ssize_t n = client.send(request.data() + sent_up, request.size() - sent_up);
            if (n < 0) {
                ASSERT_EQ(errno, EAGAIN);
            } else {
                sent_up += static_cast<std::size_t>(n);
            }
        }
        const int r = SSL_read(server, buf, sizeof buf);
        if (r > 0) {
            got_up.append(buf, static_cast<std::size_t>(r));
        } else {
            ASSERT_EQ(SSL_get_error(server, r), SSL_ERROR_WANT_READ);
        }
        if (!asked && got_up.size() > request.size() / 2 && sent_down > response.size() / 3) {
            ASSERT_EQ(SSL_key_update(server, SSL_KEY_UPDATE_REQUESTED), 1);
            asked = true;
        }
        if (sent_down < response.size() && got_up.size() > sent_down) {
            const int w = SSL_write(
                server, response.data() + sent_down,
                static_cast<int>(std::min<std::size_t>(response.size() - sent_down, 7000)));
            if (w > 0) {
                sent_down += static_cast<std::size_t>(w);
            } else {
                ASSERT_EQ(SSL_get_error(server, w), SSL_ERROR_WANT_WRITE);
            }
        }
        const ssize_t n = client.recv(buf, sizeof buf);
        if (n > 0) {
            got_down.append(buf, static_cast<std::size_t>(n));
        } else {
            ASSERT_EQ(n, -1);
            ASSERT_EQ(errno, EAGAIN);
        }
    }
    EXPECT_TRUE(asked);
    EXPECT_TRUE(got_up == request) << got_up.size();
    EXPECT_TRUE(got_down == response) << got_down.size();
    exchange("after", "after answer");
}

TEST_F(ClientStreamTest, AFatalAlertFromTheServerToAnIdleConnectionIsAReset) {
    connect();
    exchange("first", "first answer");
    idle();
    ASSERT_TRUE(client.own_records());
    // OpenSSL's server answers bytes it cannot open with its fatal alert.
    ASSERT_EQ(::send(client_fd, "\x17\x03\x03\x00\x20", 5, MSG_NOSIGNAL), 5);
    ASSERT_EQ(::send(client_fd, std::string(32, 'z').data(), 32, MSG_NOSIGNAL), 32);
    char buf[100];
    const int r = SSL_read(server, buf, sizeof buf);
    ASSERT_LE(r, 0);
    ASSERT_EQ(SSL_get_error(server, r), SSL_ERROR_SSL);
    char c = 0;
    EXPECT_EQ(client.recv(&c, 1), -1);
    EXPECT_EQ(errno, ECONNRESET);
    EXPECT_EQ(client.send("more", 4), -1);
}

// Bytes a broken server (or someone on the path) puts on an idle connection whose records are
// tarry's: the client's recv fails (EPROTO), again at the next call, and the server gets the
// client's fatal alert.

TEST_F(ClientStreamTest, PlaintextOnAnIdleConnectionEndsIt) {
    refused_when_idle([] { return std::string("HTTP/1.1 200 OK\r\n\r\n"); });
}

TEST_F(ClientStreamTest, ARecordLongerThanTlsAllowsEndsTheIdleConnection) {
    refused_when_idle(
        [] { return std::string("\x17\x03\x03\x48\x01", 5) + std::string(100, 'x'); });
}

TEST_F(ClientStreamTest, ARecordWhoseTagDoesNotVerifyEndsTheIdleConnection) {
    refused_when_idle([&] {
        std::string r = held([&] { ASSERT_EQ(SSL_write(server, "late", 4), 4); });
        r[r.size() - 3] = static_cast<char>(r[r.size() - 3] ^ 1);
        return r;
    });
}

TEST_F(ClientStreamTest, ChangeCipherSpecAfterTheHandshakeEndsTheIdleConnection) {
    refused_when_idle([] { return std::string("\x14\x03\x03\x00\x01\x01", 6); });
}

} // namespace
} // namespace tarry::tls::test

// A small h2c server (prior knowledge, plain TCP, one thread) over h2::connection, for h2spec:
// every request is answered 200 "hello", its body read and thrown away; a path /bytes/N is
// answered N bytes, written as room() allows and continued at on_writable(), so real clients
// exercise flow control both ways. It prints the port it listens on (127.0.0.1, an ephemeral
// port unless one is given) and serves until killed.
//
//   h2_conformance_server [PORT]
//   ../shared/tools/h2spec/h2spec -h 127.0.0.1 -p PORT
#include <tarry/h2/connection.hpp>

#include <boost/asio.hpp>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

namespace asio = boost::asio;
using asio::ip::tcp;
namespace h2 = tarry::h2;

namespace {

h2::workspace shared_workspace;
h2::connection_config config;

class session final : public h2::connection_owner, public std::enable_shared_from_this<session> {
public:
    explicit session(tcp::socket socket)
        : socket_(std::move(socket)), h2_(config, *this, shared_workspace) {}

    void start() {
        h2_.start(out_);
        write();
        read();
    }

    void on_request(std::uint32_t stream, const h2::request& head) override {
        const std::array<h2::field, 1> fields{{{"content-type", "text/plain"}}};
        h2_.respond(stream, 200, fields, false, out_);
        constexpr std::string_view prefix = "/bytes/";
        std::size_t n = 0;
        if (head.path.starts_with(prefix)) {
            const std::string_view digits = head.path.substr(prefix.size());
            std::from_chars(digits.data(), digits.data() + digits.size(), n);
        }
        if (n == 0) {
            h2_.data(stream, "hello", true, out_);
            return;
        }
        left_[stream] = n;
        on_writable(stream);
    }
    std::size_t on_body(std::uint32_t /*stream*/, std::string_view bytes) override {
        return bytes.size();
    }
    void on_body_end(std::uint32_t /*stream*/, std::span<const h2::field> /*trailers*/) override {}
    void on_reset(std::uint32_t stream, h2::error_code /*code*/, bool /*by_peer*/) override {
        left_.erase(stream);
    }
    void on_writable(std::uint32_t stream) override {
        const auto it = left_.find(stream);
        if (it == left_.end()) return;
        static const std::string chunk(16384, 'x');
        while (it->second > 0) {
            const std::size_t n = std::min(it->second, chunk.size());
            const std::size_t took =
                h2_.data(stream, std::string_view(chunk).substr(0, n), n == it->second, out_);
            it->second -= took;
            if (took < n) return; // on_writable() again when there is room
        }
        left_.erase(it);
    }

private:
    void read() {
        socket_.async_read_some(
            asio::buffer(buffer_),
            [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                self->on_read(ec, n);
            });
    }

    void on_read(boost::system::error_code ec, std::size_t n) {
        if (ec) return close();
        in_.append(buffer_.data(), n);
        const std::size_t taken = h2_.consume(in_.data(), in_.size(), out_);
        in_.erase(0, taken);
        write();
        if (h2_.closing()) return; // the write closes once the output is out
        read();
    }

    void write() {
        if (writing_) return;
        if (out_.empty()) {
            if (h2_.closing()) close();
            return;
        }
        writing_ = true;
        sending_ = std::move(out_);
        out_.clear();
        asio::async_write(socket_, asio::buffer(sending_),
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                              self->writing_ = false;
                              if (ec) return self->close();
                              self->write();
                          });
    }

    void close() {
        boost::system::error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
        socket_.close(ignored);
    }

    tcp::socket socket_;
    h2::connection h2_;
    std::array<char, 16384> buffer_{};
    std::string in_;
    std::string out_;
    std::string sending_;
    std::map<std::uint32_t, std::size_t> left_; ///< /bytes/N still to write, per stream
    bool writing_ = false;
};

void accept(tcp::acceptor& acceptor) {
    acceptor.async_accept([&acceptor](boost::system::error_code ec, tcp::socket socket) {
        if (!ec) std::make_shared<session>(std::move(socket))->start();
        accept(acceptor);
    });
}

} // namespace

int main(int argc, char** argv) {
    asio::io_context io;
    const auto port = static_cast<unsigned short>(argc > 1 ? std::atoi(argv[1]) : 0);
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    std::printf("%u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
    std::fflush(stdout);
    accept(acceptor);
    io.run();
}

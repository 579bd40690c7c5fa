// libFuzzer harness for h2::connection: arbitrary bytes are a client's frames after its preface
// and an empty SETTINGS (prepended, so the input reaches frames at once), fed in reads of a size
// the input chooses, keeping only what consume() did not take. The owner answers every request
// with a body as large as the input says (so flow control queues it), takes body bytes or
// pauses and resumes, and may reset streams, as the input's second byte says. It checks that
// consume() never takes more than it was given, that nothing beyond a frame is kept, and that
// everything the server writes reads back as valid frames; the sanitizers check the rest.
//
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DTARRY_FUZZ=ON
//   cmake --build build-fuzz --target fuzz_h2_connection
//   build-fuzz/tests/fuzz_h2_connection -max_total_time=60 tests/fuzz/corpus_h2_connection
//
// Input: byte 0 is the size of the reads (0: all at once), byte 1 the owner's manners (bits 0-1:
// the response body, 0 to 96 KB; bit 2: take half of each body piece and resume on the next
// read; bit 3: reset every third stream; bit 4: graceful shutdown after the first read); the
// rest is the frames.
#include <tarry/h2/connection.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace h2 = tarry::h2;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

class owner final : public h2::connection_owner {
public:
    h2::connection* conn = nullptr;
    std::string* out = nullptr;
    std::uint8_t manners = 0;
    std::vector<std::uint32_t> paused;
    std::uint32_t seen = 0;

    void on_request(std::uint32_t stream, const h2::request& head) override {
        check(!head.method.empty());
        if ((manners & 8) != 0 && ++seen % 3 == 0) {
            conn->reset(stream, h2::error_code::cancel, *out);
            return;
        }
        const std::size_t body = std::size_t{32768} * (manners & 3);
        const h2::field f{"content-type", "text/plain"};
        conn->respond(stream, 200, {&f, 1}, false, *out);
        const std::string bytes(body, 'b');
        conn->data(stream, bytes, true, *out);
    }
    std::size_t on_body(std::uint32_t stream, std::string_view bytes) override {
        if ((manners & 4) == 0 || bytes.size() < 2) return bytes.size();
        paused.push_back(stream);
        return bytes.size() / 2;
    }
    void on_body_end(std::uint32_t, std::span<const h2::field>) override {}
    void on_reset(std::uint32_t, h2::error_code, bool) override {}
    void on_writable(std::uint32_t stream) override { check(conn->room(stream) > 0); }
};

/// Everything the server wrote reads back as frames, none of them an error.
void check_output(const std::string& out) {
    h2::frame_reader reader(h2::largest_max_frame_size);
    h2::bytes in = h2::as_bytes(out);
    while (!in.empty()) {
        const auto r = reader.read(in);
        in = in.subspan(r.consumed);
        check(r.what != h2::frame_reader::event::error);
        if (r.what == h2::frame_reader::event::need_more) break;
    }
    check(in.empty() && reader.between_frames());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t read_size = data[0] == 0 ? size : data[0];
    h2::connection_config config;
    config.max_control_frames = 64;
    config.max_resets = 16;
    static h2::workspace ws;
    owner o;
    o.manners = data[1];
    h2::connection conn(config, o, ws);
    std::string out;
    o.conn = &conn;
    o.out = &out;
    conn.start(out);

    std::string wire(h2::client_preface);
    h2::write_settings(wire, std::span<const h2::setting>{});
    wire.append(reinterpret_cast<const char*>(data + 2), size - 2);

    std::string kept;
    for (std::size_t at = 0; at < wire.size(); at += read_size) {
        kept.append(wire, at, std::min(read_size, wire.size() - at));
        const std::size_t n = conn.consume(kept.data(), kept.size(), out);
        check(n <= kept.size());
        kept.erase(0, n);
        check(kept.size() < h2::frame_header_size + h2::default_max_frame_size);
        for (const std::uint32_t id : std::vector<std::uint32_t>(std::move(o.paused)))
            conn.resume(id, out);
        if ((o.manners & 16) != 0 && at == 0) conn.shutdown(out);
        check_output(out);
        out.clear();
        if (conn.closing()) break;
    }
    check(conn.idle() || !conn.closing() || conn.open_streams() == 0);
    return 0;
}

// libFuzzer harness for the request path of a connection, without sockets: arbitrary bytes,
// split at arbitrary points, go through http::session exactly as server/connection.cpp feeds
// it (a bounded read buffer, unconsumed bytes kept and re-fed, output drained between calls).
// It checks the invariants the connection relies on; the sanitizers check the rest.
//
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DTARRY_FUZZ=ON
//   cmake --build build-fuzz --target fuzz_session
//   build-fuzz/tests/fuzz_session -max_total_time=60 tests/fuzz/corpus
#include <tarry/http/hello_handler.hpp>
#include <tarry/http/session.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    // The first bytes choose the limits and how the input is cut into reads.
    // "/" answered as the server answers it: every request reaches a handler.
    static const tarry::http::router routes = [] {
        tarry::http::router r;
        r.add("/", std::make_shared<tarry::http::hello_handler>());
        return r;
    }();
    tarry::http::session_settings settings;
    settings.routes = &routes;
    settings.max_header_bytes = 64 + static_cast<std::size_t>(data[0]) * 16; // 64 .. 4144
    settings.max_body_bytes = static_cast<std::size_t>(data[1]) * 8;         // 0 .. 2040
    settings.max_requests = data[2] % 5;                                     // 0: unlimited
    settings.max_queued_bytes = 1 + static_cast<std::size_t>(data[3] % 8) * 256;
    settings.keep_alive_timeout_s = data[3] % 3;
    const std::size_t read_size = 1 + data[2] % 97;
    data += 4;
    size -= 4;

    tarry::http::session s(settings);
    // As in the connection: the buffer holds a whole header plus some room.
    const std::size_t capacity = settings.max_header_bytes + 1024;
    std::string in;
    std::string out;
    std::size_t fed = 0;
    std::uint64_t answered = 0;
    while (fed < size || !in.empty()) {
        const std::size_t n = std::min({read_size, size - fed, capacity - in.size()});
        in.append(reinterpret_cast<const char*>(data) + fed, n);
        fed += n;
        const std::size_t before_requests = s.requests();
        const std::size_t used =
            s.consume(in.data(), in.size(), out, "Thu, 01 Jan 1970 00:00:00 GMT");
        check(used <= in.size());
        check(s.requests() >= before_requests);
        in.erase(0, used);
        if (!out.empty()) check(out.compare(0, 9, "HTTP/1.1 ") == 0);
        // The connection writes everything before parsing on: the queue bound holds per call
        // (one response past the bound at most; the largest here is an inline 16 KiB file,
        // and no docroot is set, so a response head is small).
        check(out.size() <= settings.max_queued_bytes + 512);
        out.clear();
        if (s.has_file()) s.file_done();
        if (s.closing()) break; // the connection stops reading
        if (settings.max_requests != 0) check(s.requests() <= settings.max_requests);
        answered = s.requests();
        // A full buffer that the session cannot make progress on must be impossible: the
        // header limit is below the capacity and bodies are consumed as they arrive.
        if (in.size() == capacity && used == 0) std::abort();
        if (n == 0 && used == 0) break; // everything fed; what is left is an incomplete request
        if (fed % 7 == 3) s.drain();    // a graceful stop can come at any moment
    }
    (void)answered;
    return 0;
}

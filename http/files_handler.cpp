#include "files_handler.hpp"

#include "method_gate.hpp"
#include "session.hpp"

#include <unistd.h>

namespace tarry::http {
namespace {

/// Files up to this size are copied into the output with the head: one write, no sendfile.
constexpr std::uint64_t inline_file_bytes = 16 * std::uint64_t{1024};

} // namespace

void files_handler::on_request(exchange& ex) {
    if (answer_unless_get(ex)) return;
    static_files::file f = files_.open(ex.request().target);
    if (f.status != 200) {
        const std::string_view why = reason(f.status);
        response_head head = text_head(f.status, why.size() + 1);
        ex.respond(head);
        ex.write(why);
        ex.write("\n");
        ex.finish();
        return;
    }
    response_head head;
    head.content_type = f.content_type;
    head.content_length = f.size;
    ex.respond(head);
    if (ex.request().method == boost::beast::http::verb::head || f.size == 0) {
        ex.finish();
        return;
    }
    if (f.size <= inline_file_bytes) {
        char buffer[inline_file_bytes];
        const ssize_t got = ::pread(f.fd.get(), buffer, f.size, 0);
        const auto n = static_cast<std::uint64_t>(got > 0 ? got : 0);
        ex.write(std::string_view(buffer, n));
        if (n == f.size) {
            ex.finish();
            return;
        }
        // The file changed under us: stream whatever is there, and the length decides.
        ex.send_file(std::move(f.fd), n, f.size - n);
        return;
    }
    ex.send_file(std::move(f.fd), 0, f.size);
}

} // namespace tarry::http

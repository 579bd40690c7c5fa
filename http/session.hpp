#pragma once

#include "recycler.hpp"
#include "request_parser.hpp"
#include "response_head.hpp"
#include "static_files.hpp"
#include "unique_fd.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tarry::http {

struct session_settings {
    std::size_t max_header_bytes = 16 * std::size_t{1024};
    std::uint64_t max_body_bytes = 1024 * std::uint64_t{1024};
    std::uint32_t max_requests = 1000;  ///< per connection; 0: unlimited
    unsigned keep_alive_timeout_s = 64; ///< advertised in Keep-Alive; 0: field omitted
    std::size_t max_queued_bytes =
        64 * std::size_t{1024};          ///< stop parsing pipelined requests past this
    const static_files* files = nullptr; ///< null: every GET/HEAD gets "Hello, World!"
};

/// Told of each response a session writes: an access log. `request` is null when the bytes
/// never made a request (a malformed request line).
class exchange_log {
public:
    virtual void on_response(const request_head* request, unsigned status,
                             std::uint64_t body_bytes) noexcept = 0;

protected:
    exchange_log() = default;
    exchange_log(const exchange_log&) = default;
    exchange_log& operator=(const exchange_log&) = default;
    ~exchange_log() = default;
};

/// A file body still to be sent after the queued output (the connection streams it).
struct file_body {
    unique_fd fd;
    std::uint64_t offset = 0;
    std::uint64_t remaining = 0;
};

/// The protocol half of one connection, without I/O: bytes in, responses out.
///
/// consume() parses as many complete requests as the input holds and appends their responses
/// to `out`, in order (pipelining), until the output passes max_queued_bytes, a file body must
/// be streamed, or the connection is to close. Request bodies are read and discarded. The
/// parser and request fields live in a pooled request_state taken when a request starts and
/// given back when it ends, so an idle session is a few bytes.
class session {
public:
    enum class phase {
        idle,    ///< between requests: no byte of the next one consumed
        headers, ///< a request started; its header is not complete
        body,    ///< reading a request body
    };

    explicit session(const session_settings& settings) noexcept : settings_(&settings) {}
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    ~session();

    /// Returns how many bytes of [data, data + size) were consumed. Bytes of an incomplete
    /// header are not consumed: call again with them and more.
    std::size_t consume(const char* data, std::size_t size, std::string& out, std::string_view date,
                        exchange_log* log = nullptr);

    /// Answers with an error status and closes (408 on a header or body timeout).
    void fail(unsigned status, std::string& out, std::string_view date);

    /// Graceful stop: the next response says Connection: close; an idle session closes.
    void drain() noexcept;

    /// Settings apply from the next request (a reload).
    void set_settings(const session_settings& s) noexcept { settings_ = &s; }

    [[nodiscard]] phase current_phase() const noexcept;
    [[nodiscard]] bool closing() const noexcept { return closing_; }
    [[nodiscard]] bool has_file() const noexcept { return file_.has_value(); }
    [[nodiscard]] file_body& file() noexcept { return *file_; }
    /// The file body is sent. A session told to drain meanwhile has nothing left: it closes.
    void file_done() noexcept {
        file_.reset();
        if (draining_ && current_phase() == phase::idle) closing_ = true;
    }
    [[nodiscard]] std::uint64_t requests() const noexcept { return requests_; }

private:
    void emit(std::string& out, const response_head& head, std::string_view date);
    struct request_state {
        request_head head;
        std::optional<request_parser> parser;
    };
    using states = recycler<request_state>;

    void respond(std::string& out, std::string_view date);
    void respond_file(std::string& out, std::string_view date, const response_head& base);
    void finish_request() noexcept;
    [[nodiscard]] response_head base_head(unsigned status, bool keep_alive) noexcept;

    const session_settings* settings_;
    states::pointer state_;
    std::optional<file_body> file_;
    exchange_log* log_ = nullptr; ///< set while consume() runs
    std::uint64_t requests_ = 0;
    bool closing_ = false;
    bool draining_ = false;
    bool sent_continue_ = false;
};

} // namespace tarry::http

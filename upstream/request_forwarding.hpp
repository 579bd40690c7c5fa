#pragma once

#include <tarry/http/request_parser.hpp>

#include <boost/beast/http/verb.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace tarry::upstream {

/// The request's way upstream, without I/O: the head the upstream gets (forward_head), and the
/// bytes on their way (request_writer). The proxy exchange alone touches the connection.

/// Whether a request may be sent again after a connection died under it (RFC 9110 9.2.2).
[[nodiscard]] bool is_idempotent(boost::beast::http::verb method) noexcept;

/// What the forwarded head is made of besides the client's request.
struct forward_context {
    std::string_view server;  ///< the upstream's name: the Host of a request without one (HTTP/1.0)
    std::string_view peer;    ///< the client's address, appended to X-Forwarded-For ("" if none)
    std::string_view upgrade; ///< the protocol the client asked for and the route allows, or ""
    bool secure = false;      ///< the request came over TLS (X-Forwarded-Proto: https)
    bool trust_forwarded = false; ///< the client's X-Forwarded-* are kept (appended to)
};

/// The request head as the upstream gets it.
struct forwarded_head {
    std::string bytes;
    bool chunked = false; ///< the body goes up chunk-framed (its size was not known)
};

/// The head to send upstream for `req`: HTTP/1.1, hop-by-hop fields removed (Connection and what
/// it names), Host kept (or the server's name, as nginx does), X-Forwarded-For, -Proto and -Host
/// set, and the framing of the body restated: chunked if the client's was, else its
/// Content-Length. With an upgrade, Upgrade and `Connection: upgrade` go up too.
[[nodiscard]] forwarded_head forward_head(const http::request_head& req,
                                          const forward_context& ctx);

/// The bytes of one request on their way upstream: those waiting to be written, those being
/// written (they stay in place until wrote(), since a write that did not finish at once points
/// into them), and, while the request is at most max_replay bytes, a copy of all of it, so it
/// can be replayed once on a fresh connection when a reused one dies before answering.
class request_writer {
public:
    /// The most request bytes waiting for the upstream before the client's body is paused.
    static constexpr std::size_t max_pending = 64 * std::size_t{1024};
    /// A request (head and body) up to this size is kept whole for a replay.
    static constexpr std::size_t max_replay = 64 * std::size_t{1024};

    /// The body goes up chunk-framed (see forwarded_head::chunked).
    void set_chunked(bool chunked) noexcept { chunked_ = chunked; }
    [[nodiscard]] bool chunked() const noexcept { return chunked_; }

    /// Bytes as they are (the head, or a tunnel's).
    void append(std::string_view bytes);
    /// A piece of the request body, framed as a chunk if the body goes chunked.
    void append_body(std::string_view bytes);
    /// The body is whole: the last chunk, if it goes chunked.
    void end_body();
    /// How many body bytes it takes now (what max_pending leaves): fewer pauses the client.
    [[nodiscard]] std::size_t room() const noexcept {
        return pending_.size() >= max_pending ? 0 : max_pending - pending_.size();
    }

    [[nodiscard]] bool has_pending() const noexcept { return !pending_.empty(); }
    /// The waiting bytes become the ones being written: valid and in place until wrote() or
    /// replay().
    [[nodiscard]] const std::string& next() noexcept {
        writing_.swap(pending_);
        pending_.clear();
        return writing_;
    }
    /// The bytes being written went out.
    void wrote() noexcept { writing_.clear(); }

    [[nodiscard]] bool replayable() const noexcept { return replayable_; }
    /// Starts the request over on a fresh connection: all of it waits again, nothing is being
    /// written. Only while replayable().
    void replay();
    /// The request can no longer be replayed (an upgrade went through): its copy is freed.
    void forget_replay() noexcept;

    /// What a tunnel takes over after an upgrade (the same storage: a write may point into it).
    [[nodiscard]] std::string& pending() noexcept { return pending_; }
    [[nodiscard]] std::string& writing() noexcept { return writing_; }
    [[nodiscard]] const std::string& replay_copy() const noexcept { return replay_; }

private:
    std::string replay_;  ///< the whole request so far, while it is replayable
    std::string pending_; ///< request bytes not yet written
    std::string writing_; ///< request bytes being written
    bool chunked_ = false;
    bool replayable_ = true; ///< replay_ holds the whole request so far
};

} // namespace tarry::upstream

#pragma once

#include <cstddef>
#include <string_view>

namespace tarry::http {

class exchange;

/// Answers requests: one kind of application (the built-in answer, static files, a proxy).
///
/// The session parses and frames; a handler only decides what to answer. It is called once per
/// request, when the request's header is complete and before its body is read, so it can refuse
/// a request at once (405, 404) without waiting for a body it does not want. An answer is either
/// given synchronously, within on_request(), or later (ex.defer()): the session then waits for
/// it, in order, before it parses the next pipelined request.
///
/// A handler belongs to one worker thread. It may be shared by many routes' lookups, but it is
/// never called from two threads.
class handler {
public:
    handler() = default;
    handler(const handler&) = delete;
    handler& operator=(const handler&) = delete;
    virtual ~handler() = default;

    virtual void on_request(exchange& ex) = 0;
    /// The worker is stopping: let go of what is idle (a proxy's pooled upstream connections),
    /// since anything left waiting keeps the worker's loop from ending.
    virtual void stop() noexcept {}
};

/// The state of a request a handler answers later (see exchange::defer). The session calls it
/// until the response is finished or the client connection goes away, whichever comes first.
class deferred {
public:
    /// Bytes of the request body, after exchange::read_body(). Returns how many it took; taking
    /// fewer pauses the body (the connection stops reading) until exchange::resume_body().
    virtual std::size_t on_body(std::string_view bytes) { return bytes.size(); }
    /// The whole request body has been given to on_body.
    virtual void on_body_end() {}
    /// The client drained the output: exchange::room() is back to its full size.
    virtual void on_writable() noexcept {}
    /// The client connection is closing. The exchange is gone: release what the request holds
    /// and never touch the exchange again.
    virtual void on_abort() noexcept = 0;

protected:
    deferred() = default;
    deferred(const deferred&) = default;
    deferred& operator=(const deferred&) = default;
    ~deferred() = default;
};

} // namespace tarry::http

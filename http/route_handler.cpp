// The route's edits around a handler: an exchange that stands between the handler and the
// protocol's exchange. The handler answers it as it would the protocol; it passes each call on,
// editing a response head's fields on the way, rewriting the target the handler sees, and
// swallowing an answer it replaces (an error page, a fallback) so that the client gets one.

#include "route_handler.hpp"

#include "exchange.hpp"
#include "field_writer.hpp"
#include "redirect_handler.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <utility>

namespace tarry::http {
namespace {

namespace bh = boost::beast::http;

class route_exchange final : public exchange, public deferred {
public:
    route_exchange(exchange& inner, const route_options& options, handler& target)
        : inner_(inner), options_(options), target_(target) {
        if (!options_.strip_prefix.empty()) {
            const std::string_view t = inner.request().target;
            if (t.starts_with(options_.strip_prefix)) {
                rewrite(t.substr(options_.strip_prefix.size()));
            }
        }
    }

    /// Gives the request to the handler (and again for a fallback); whether the exchange must
    /// outlive this call (the answer comes later).
    bool run() {
        in_call_ = true;
        target_.on_request(*this);
        if (fallback_pending_) {
            fallback_pending_ = false;
            swallow_ = false;
            over_ = false;
            answer_ = nullptr;
            intercepted_ = true; // the fallback's own 404 goes out as it is
            rewrite(options_.fallback);
            target_.on_request(*this);
        }
        in_call_ = false;
        return answer_ != nullptr && (!over_ || body_owed());
    }

    // --- exchange: what the handler calls ---------------------------------------------------

    [[nodiscard]] const request_head& request() const noexcept override {
        return rewritten_ ? head_ : inner_.request();
    }
    [[nodiscard]] std::string_view peer() const noexcept override { return inner_.peer(); }
    [[nodiscard]] bool secure() const noexcept override { return inner_.secure(); }

    void respond(response_head head) override {
        if (swallow_) return;
        // head.server_date: the server's own answer; an upstream's keeps its own unless the
        // route intercepts them (its body then goes nowhere: write() and finish() swallow it).
        if (!intercepted_ && (head.server_date || options_.intercept_upstream) &&
            replace(head.status)) {
            swallow_ = true;
            return;
        }
        head.extra_fields = edit(head.extra_fields);
        inner_.respond(head);
    }
    void write(std::string_view bytes) override {
        if (!swallow_) inner_.write(bytes);
    }
    void send_file(unique_fd fd, std::uint64_t offset, std::uint64_t length) override {
        if (!swallow_) inner_.send_file(std::move(fd), offset, length);
        done();
    }
    void finish() override {
        if (!swallow_) inner_.finish();
        done();
    }
    [[nodiscard]] std::size_t room() const noexcept override {
        return swallow_ ? 64 * std::size_t{1024} : inner_.room();
    }
    void defer(deferred& d) override {
        answer_ = &d;
        if (!swallow_) inner_.defer(*this);
    }
    void read_body() override {
        reading_body_ = true;
        inner_.read_body();
    }
    void resume_body() override { inner_.resume_body(); }
    void abort() override {
        if (!swallow_) inner_.abort();
        done();
    }
    [[nodiscard]] std::string_view upgrade_asked() const noexcept override {
        return inner_.upgrade_asked();
    }
    void upgrade(response_head head) override {
        head.extra_fields = edit(head.extra_fields, false);
        inner_.upgrade(head);
    }
    void shutdown_output() override { inner_.shutdown_output(); }
    [[nodiscard]] upstream_timing* upstream_record() noexcept override {
        return inner_.upstream_record();
    }

    // --- deferred: what the protocol calls, for the handler's deferred answer ----------------

    std::size_t on_body(std::string_view bytes) override { return answer_->on_body(bytes); }
    void on_body_end() override {
        answer_->on_body_end(); // may finish the answer: done() keeps this until below
        body_ended_ = true;
        if (over_) done();
    }
    void on_writable() noexcept override { answer_->on_writable(); }
    void on_abort() noexcept override {
        deferred* d = answer_;
        swallow_ = true; // the protocol's exchange is gone
        d->on_abort();
        body_ended_ = true; // nothing more comes
        done();
    }

protected:
    void answer_text(unsigned status, std::string_view body,
                     std::string_view extra_fields) override {
        if (swallow_) return done();
        if (!intercepted_ && replace(status)) {
            swallow_ = true;
            return done();
        }
        inner_.respond_text(status, body, edit(extra_fields));
        done();
    }

private:
    /// The target the handler sees from now on.
    void rewrite(std::string_view target) {
        if (!rewritten_) head_ = inner_.request();
        rewritten_ = true;
        std::string t;
        if (!target.starts_with('/')) t.push_back('/');
        t.append(target);
        head_.target = std::move(t);
    }

    /// Whether the server's own answer of `status` is replaced: by the fallback (after the
    /// handler returns) or by an error page (now).
    bool replace(unsigned status) {
        if (status == 404 && !options_.fallback.empty() && in_call_) {
            const bh::verb m = inner_.request().method;
            if (m == bh::verb::get || m == bh::verb::head) {
                fallback_pending_ = true;
                return true;
            }
        }
        const auto page = std::find_if(options_.error_pages.begin(), options_.error_pages.end(),
                                       [&](const error_page& p) { return p.status == status; });
        if (page == options_.error_pages.end()) return false;
        intercepted_ = true;
        response_head head;
        head.status = status;
        head.content_type = page->content_type;
        head.content_length = page->body.size();
        head.extra_fields = edit({});
        inner_.respond(head);
        inner_.write(page->body);
        inner_.finish();
        return true;
    }

    /// `fields` without the removed ones, then the added ones (except on a 101, which
    /// opens a tunnel rather than answering).
    std::string_view edit(std::string_view fields, bool add = true) const {
        thread_local std::string out;
        out.clear();
        while (!fields.empty()) {
            const std::size_t end = fields.find('\n');
            const std::string_view line =
                fields.substr(0, end == std::string_view::npos ? fields.size() : end + 1);
            fields.remove_prefix(line.size());
            const std::string_view name = line.substr(0, line.find(':'));
            const bool removed =
                std::any_of(options_.remove_fields.begin(), options_.remove_fields.end(),
                            [&](const std::string& r) { return boost::beast::iequals(r, name); });
            if (!removed) out.append(line);
        }
        if (add) out.append(options_.add_fields);
        return out;
    }

    /// The handler read the body and it has not ended: the protocol still gives its bytes (and
    /// its end, or an abort) to this exchange, even after the handler answered (a proxied
    /// answer can overtake the request body it then reads and drops).
    [[nodiscard]] bool body_owed() const noexcept { return reading_body_ && !body_ended_; }

    /// The handler is through with the exchange: once the request's call is over, and the
    /// body it reads has ended, it goes.
    void done() {
        over_ = true;
        if (!in_call_ && answer_ != nullptr && !body_owed()) delete this;
    }

    exchange& inner_;
    const route_options& options_;
    handler& target_;
    deferred* answer_ = nullptr; ///< the handler's deferred answer
    request_head head_;          ///< the request with its target rewritten, once rewritten_
    bool rewritten_ = false;
    bool in_call_ = false;          ///< within run(): the caller frees it
    bool over_ = false;             ///< the handler finished, aborted, or was aborted
    bool reading_body_ = false;     ///< the handler asked for the request body
    bool body_ended_ = false;       ///< its end (or an abort) was passed on
    bool swallow_ = false;          ///< the handler's answer is replaced: drop what it sends
    bool intercepted_ = false;      ///< a replacement was made: no second one
    bool fallback_pending_ = false; ///< the 404 is swallowed; the fallback target comes next
};

} // namespace

route_handler::route_handler(std::shared_ptr<handler> inner, route_options options)
    : inner_(std::move(inner)), options_(std::move(options)) {
    if (!options_.plain_redirect.empty()) {
        to_https_ = std::make_unique<redirect_handler>(options_.plain_redirect, 301);
        options_.plain_redirect.clear();
    }
    std::shared_ptr<const name_table> certificates = std::move(options_.certificates);
    edits_ = !options_.empty();
    options_.certificates = std::move(certificates);
    if (options_.certificates) misdirected_ = std::make_unique<status_handler>(421);
}

route_handler::~route_handler() = default;

void route_handler::on_request(exchange& ex) {
    if (to_https_ && !ex.secure()) return to_https_->on_request(ex);
    if (misdirected_ && !ex.request().host.empty()) {
        const int given = ex.certificate();
        if (given >= 0 && options_.certificates->find(ex.request().host).value_or(0) !=
                              static_cast<std::size_t>(given))
            return misdirected_->on_request(ex);
    }
    if (!edits_) return inner_->on_request(ex);
    auto x = std::make_unique<route_exchange>(ex, options_, *inner_);
    if (x->run()) (void)x.release(); // the answer comes later: it frees itself when over
}

} // namespace tarry::http

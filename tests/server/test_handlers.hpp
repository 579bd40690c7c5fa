#pragma once

// Handlers that answer later, for the tests of the handler seam: they run on the worker's loop
// (timers stand in for an upstream that answers on another socket).
#include <tarry/http/session.hpp>
#include <tarry/server/handlers.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

namespace tarry::test {

/// What the handlers saw, read by the test thread.
struct handler_counts {
    std::atomic<int> finished{0};
    std::atomic<int> aborted{0};
    std::atomic<int> paused{0};
    std::atomic<int> alive{0}; ///< answers in existence
};

/// After `delay`, answers 200 with a body of unknown length (chunked, or to the close for
/// HTTP/1.0): `pieces` pieces of `piece_size` bytes ('a', 'b', ...), one per `gap`, and when
/// the output is full it waits for the client to drain it.
class slow_stream final : public http::handler {
public:
    struct shape {
        int pieces = 4;
        std::size_t piece_size = 1000;
        std::chrono::milliseconds delay{50};
        std::chrono::milliseconds gap{10};
    };

    slow_stream(boost::asio::io_context& io, shape s, handler_counts& counts)
        : io_(io), shape_(s), counts_(counts) {}

    void on_request(http::exchange& ex) override {
        auto a = std::make_shared<answer>(io_, ex, shape_, counts_);
        a->self = a;
        ex.defer(*a);
        a->tick(shape_.delay);
    }

private:
    struct answer final : http::deferred {
        answer(boost::asio::io_context& io, http::exchange& e, shape s, handler_counts& c)
            : timer(io), ex(&e), sh(s), counts(c) {
            ++counts.alive;
        }
        answer(const answer&) = delete;
        answer& operator=(const answer&) = delete;
        ~answer() { --counts.alive; }

        void tick(std::chrono::milliseconds after) {
            timer.expires_after(after);
            timer.async_wait([keep = self](const boost::system::error_code& ec) {
                if (!ec && keep->ex != nullptr) keep->step();
            });
        }
        void step() {
            if (sent == 0 && !started) {
                started = true;
                http::response_head head;
                head.content_type = "text/plain";
                head.length_unknown = true;
                ex->respond(head);
            }
            if (ex->room() < sh.piece_size) {
                waiting_room = true; // on_writable() resumes
                ++counts.paused;
                return;
            }
            ex->write(std::string(sh.piece_size, static_cast<char>('a' + sent % 26)));
            if (++sent < sh.pieces) {
                tick(sh.gap);
                return;
            }
            http::exchange* e = ex;
            ex = nullptr;
            ++counts.finished;
            auto keep = std::move(self);
            e->finish();
        }
        void on_writable() noexcept override {
            if (!waiting_room || ex == nullptr) return;
            waiting_room = false;
            try {
                step();
            } catch (...) {
            }
        }
        void on_abort() noexcept override {
            ex = nullptr;
            ++counts.aborted;
            timer.cancel();
            self.reset(); // the pending wait still holds it until it runs
        }

        boost::asio::steady_timer timer;
        http::exchange* ex;
        shape sh;
        handler_counts& counts;
        std::shared_ptr<answer> self;
        int sent = 0;
        bool started = false;
        bool waiting_room = false;
    };

    boost::asio::io_context& io_;
    shape shape_;
    handler_counts& counts_;
};

/// Takes the request body a little at a time (at most `per_call` bytes per offer, then a pause
/// resumed from the loop a moment later) and answers 200 with the number of bytes read.
class upload_counter final : public http::handler {
public:
    upload_counter(boost::asio::io_context& io, std::size_t per_call, handler_counts& counts)
        : io_(io), per_call_(per_call), counts_(counts) {}

    void on_request(http::exchange& ex) override {
        auto a = std::make_shared<answer>(io_, ex, per_call_, counts_);
        a->self = a;
        ex.defer(*a);
        ex.read_body();
    }

private:
    struct answer final : http::deferred {
        answer(boost::asio::io_context& io, http::exchange& e, std::size_t per, handler_counts& c)
            : timer(io), ex(&e), per_call(per), counts(c) {
            ++counts.alive;
        }
        answer(const answer&) = delete;
        answer& operator=(const answer&) = delete;
        ~answer() { --counts.alive; }

        std::size_t on_body(std::string_view bytes) override {
            const std::size_t take = std::min(bytes.size(), per_call - taken_since_pause);
            total += take;
            taken_since_pause += take;
            if (take < bytes.size()) {
                ++counts.paused;
                timer.expires_after(std::chrono::milliseconds(1));
                timer.async_wait([keep = self](const boost::system::error_code& ec) {
                    if (ec || keep->ex == nullptr) return;
                    keep->taken_since_pause = 0;
                    keep->ex->resume_body();
                });
            }
            return take;
        }
        void on_body_end() override {
            http::exchange* e = ex;
            ex = nullptr;
            ++counts.finished;
            auto keep = std::move(self);
            e->respond_text(200, std::to_string(total));
        }
        void on_abort() noexcept override {
            ex = nullptr;
            ++counts.aborted;
            timer.cancel();
            self.reset();
        }

        boost::asio::steady_timer timer;
        http::exchange* ex;
        std::size_t per_call;
        handler_counts& counts;
        std::shared_ptr<answer> self;
        std::size_t total = 0;
        std::size_t taken_since_pause = 0;
    };

    boost::asio::io_context& io_;
    std::size_t per_call_;
    handler_counts& counts_;
};

} // namespace tarry::test

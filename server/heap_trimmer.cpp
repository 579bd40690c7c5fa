#include "heap_trimmer.hpp"

#include "connection.hpp"

#include <tarry/upstream/upstream_connection.hpp>

#include <boost/asio/post.hpp>

#include <malloc.h>

namespace tarry::server {
namespace {

/// A peak of connections worth giving memory back after (about 1 KiB of read buffer each).
constexpr std::size_t trim_threshold = 1024;
/// Buffer bytes closed connections let go of that are worth a trim on their own.
constexpr std::size_t trim_bytes = 8 << 20;

} // namespace

void heap_trimmer::closed(std::size_t connections, std::size_t freed) noexcept {
    ++closed_since_;
    freed_since_ += freed;
    const bool falling = peak_ == trimmed_at_;
    const bool heavy = freed_since_ >= trim_bytes;
    if ((connections * 4 < peak_ && (peak_ >= trim_threshold || falling || heavy)) ||
        (connections == 0 && (closed_since_ >= trim_threshold || heavy))) {
        peak_ = trimmed_at_ = connections;
        closed_since_ = freed_since_ = 0;
        request();
    }
}

void heap_trimmer::after_handshakes() noexcept {
    connection::release_kept();
    ::malloc_trim(0);
}

void heap_trimmer::request() noexcept {
    if (posted_) {
        again_ = true; // the queued trim comes before the frees of these closes
        return;
    }
    try {
        boost::asio::post(io_, [this] { trim(); });
        posted_ = true;
    } catch (...) {
        // No memory to queue it: the next qualifying close tries again.
    }
}

void heap_trimmer::trim() noexcept {
    posted_ = false;
    if (again_) {
        // More connections closed while this waited, and their frees are queued behind it:
        // go behind them (at most once per quarter of the fall).
        again_ = false;
        request();
        if (posted_) return;
    }
    connection::release_kept(); // kept objects from the peak would pin their pages
    net::poller::release_kept();
    upstream::upstream_connection::release_kept();
    // Every arena, not only the main one: the whole pages inside free chunks go back (madvise).
    // A worker arena's top chunk is left to free(), which shrinks it past 128 KiB.
    ::malloc_trim(0);
}

} // namespace tarry::server

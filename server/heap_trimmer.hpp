#pragma once

#include <boost/asio/io_context.hpp>

#include <cstddef>

namespace tarry::server {

/// Gives a worker's memory back after a flood of connections: glibc keeps freed heap at its
/// high-water mark, so an idle server would hold what thousands of connections once used.
///
/// A trim is decided on a close, rarely (a quarter of a large peak gone, the last connection of
/// a thousand or more gone, or closes that let go of many megabytes of buffers: a few hundred
/// slow clients of a proxy hold 64 KiB each), and cheap next to the closes that led there; then
/// down the rest of the flood's fall, at each further quarter, to the last connection: the
/// connections that close after a trim give their request states back to the free lists (up to
/// 256 a worker), and those, among the holes their neighbours left, pin pages the trim cannot
/// return (what that left after a flood: load/README.md, "Hostile clients and a million
/// requests"). The fall lasts as long as no newcomer lifts the count above that of the last
/// trim.
///
/// The trim itself is posted behind the frees of the connections just closed (each frees itself
/// through the loop), so that it finds their memory free. One thread: the worker's.
class heap_trimmer {
public:
    explicit heap_trimmer(boost::asio::io_context& io) noexcept : io_(io) {}
    heap_trimmer(const heap_trimmer&) = delete;
    heap_trimmer& operator=(const heap_trimmer&) = delete;

    /// A connection opened; `connections` are open now.
    void opened(std::size_t connections) noexcept {
        if (connections > peak_) peak_ = connections;
    }
    /// A connection closed, letting go of `freed` bytes of buffers; `connections` are open now.
    void closed(std::size_t connections, std::size_t freed = 0) noexcept;

    /// A burst of TLS handshakes is over (tls::stream::burst_over()): OpenSSL's objects are
    /// freed, but glibc keeps their heap resident under connections that may now idle for
    /// minutes, and no close comes to decide a trim. The connections' free lists and the free
    /// pages go back now, on the calling thread, as a trim would give them.
    static void after_handshakes() noexcept;

private:
    void request() noexcept;
    void trim() noexcept;

    boost::asio::io_context& io_;
    std::size_t peak_ = 0;       ///< connections at the high-water mark since the last trim
    std::size_t trimmed_at_ = 0; ///< connections when the last trim was decided
    std::size_t closed_since_ = 0;
    std::size_t freed_since_ = 0; ///< buffer bytes the closes since the last trim let go
    bool posted_ = false;
    bool again_ = false; ///< more trimming closes came while a trim was queued
};

} // namespace tarry::server

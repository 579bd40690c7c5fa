#pragma once

// HPACK decoding (RFC 7541): one decoder per connection, for the field blocks the peer sends.
//
// Memory: the decoder is its dynamic table (dynamic_table.hpp) and a few words; sizeof is what
// an idle connection pays for it when the table is empty. It keeps nothing between blocks but
// the table. A block is decoded whole: the session gathers a HEADERS frame's fragment and its
// CONTINUATION frames' first (they are usually one frame, decoded straight from the read
// buffer).
//
// Fields go to a callback, f(name, value), as string_views valid only while it runs: they point
// into the block, into the dynamic table (which the next field may change) or into `scratch`,
// a string the caller owns (one per worker) where Huffman-coded strings are decoded; it grows to
// the longest name and value seen and keeps that capacity, so decoding does not allocate once
// it has. An indexed field (a browser's repeated request fields) is copied nowhere.
//
// Names are given as sent. Whether they are valid (no upper case, RFC 9113 8.2.1; pseudo-fields
// first; no connection-specific fields) is for the session to check, with the other rules of
// RFC 9113 8.2 that make a request malformed: those are stream errors, not decoding errors.

#include "dynamic_table.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace tarry::h2 {

/// What one header list may hold: the caller sets these as it does HTTP/1.1's limits.
struct decoder_limits {
    /// The header list's size as SETTINGS_MAX_HEADER_LIST_SIZE measures it (RFC 9113, 6.5.2):
    /// each field's name and value plus 32.
    std::size_t max_list_size = 16 * std::size_t{1024};
    std::size_t max_fields = 100;
};

enum class decode_status : std::uint8_t {
    ok,
    /// The block is not valid HPACK: a connection error of type COMPRESSION_ERROR (the table
    /// can no longer be trusted).
    compression_error,
    /// The header list passed a limit. The block was still decoded to its end, so the table is
    /// in step with the peer's and the connection may go on: answer the stream 431 or reset
    /// it. The fields past the limit were not given to the callback.
    too_large,
};

class hpack_decoder {
public:
    using field_callback = void (*)(void* context, std::string_view name, std::string_view value);

    /// `max_table_size`: SETTINGS_HEADER_TABLE_SIZE as this endpoint advertised it (4096 until
    /// the peer acknowledges another value).
    explicit hpack_decoder(std::uint32_t max_table_size = 4096) noexcept
        : table_(max_table_size), limit_(table_.max_size()) {}

    /// Decodes one field block, calling f(name, value) for each field in order.
    template <class F>
    decode_status decode(std::span<const std::uint8_t> block, std::string& scratch,
                         const decoder_limits& limits, F&& f) {
        using fn = std::remove_reference_t<F>;
        return decode(
            block, scratch, limits,
            [](void* c, std::string_view n, std::string_view v) { (*static_cast<fn*>(c))(n, v); },
            const_cast<void*>(static_cast<const void*>(&f)));
    }
    decode_status decode(std::span<const std::uint8_t> block, std::string& scratch,
                         const decoder_limits& limits, field_callback f, void* context);

    /// A new SETTINGS_HEADER_TABLE_SIZE once the peer acknowledged it: no size update may ask
    /// for more. When it is below the table's current maximum, the table is cut to it now (the
    /// peer must open its next block with a size update at most this, 4.2, which would evict
    /// as much; a block that does not is a COMPRESSION_ERROR); 0 frees the table's storage.
    void set_max_table_size(std::uint32_t limit);

    [[nodiscard]] const dynamic_table& table() const noexcept { return table_; }

private:
    dynamic_table table_;
    std::uint32_t limit_; ///< the most a size update may ask for
    bool update_required_ = false;
};

} // namespace tarry::h2

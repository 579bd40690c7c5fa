#pragma once

// HPACK's dynamic table (RFC 7541, 2.3.2 and section 4) as a decoder keeps it.
//
// WHY it is shaped this way: the table is most of what an idle HTTP/2 connection costs (4,096
// bytes by the RFC's default, for every connection, in nghttp2), yet a browser's requests put
// a few hundred bytes in it. So it holds only what it holds: the field bytes in one buffer that
// grows by half when an insertion finds no room (never past the table's maximum size), the
// entries' offsets and lengths in a ring that doubles likewise; both are freed when the maximum
// size becomes 0 (SETTINGS_HEADER_TABLE_SIZE 0, acknowledged), which lets a connection give its
// table back while idle.
//
// HOW: the newest entry is appended at the end of the byte buffer and the oldest evicted from
// its start, so the live bytes are one contiguous run and every name and value is a plain
// string_view. When the run reaches the buffer's end with room left at its start, it is moved
// back to the start (at most the table's size, once per that many bytes inserted).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace tarry::h2 {

class dynamic_table {
public:
    /// The largest maximum size this table takes (its lengths are 16-bit); more is clamped.
    static constexpr std::uint32_t largest_max_size = 65535;
    /// An entry's size beyond its name and value (RFC 7541, 4.1).
    static constexpr std::uint32_t entry_overhead = 32;

    struct field {
        std::string_view name;
        std::string_view value;
    };

    explicit dynamic_table(std::uint32_t max_size = 4096) noexcept;
    dynamic_table(const dynamic_table&) = delete;
    dynamic_table& operator=(const dynamic_table&) = delete;
    dynamic_table(dynamic_table&&) noexcept = default;
    dynamic_table& operator=(dynamic_table&&) noexcept = default;
    ~dynamic_table() = default;

    [[nodiscard]] std::size_t count() const noexcept { return count_; }
    /// The table's size as the RFC counts it: each entry's name, value and 32.
    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }
    [[nodiscard]] std::uint32_t max_size() const noexcept { return max_size_; }
    /// The heap bytes the table holds now.
    [[nodiscard]] std::size_t allocated() const noexcept;

    /// Entry `i`, 0 the newest (HPACK index 62), i < count(). Valid until the next insert.
    [[nodiscard]] field at(std::size_t i) const noexcept;

    /// Adds a field, evicting the oldest entries to make room; a field larger than the maximum
    /// size empties the table (4.4). `name` and `value` must not point into this table.
    void insert(std::string_view name, std::string_view value);

    /// A new maximum size: evicts down to it, and gives back storage past it (all of it at 0).
    void set_max_size(std::uint32_t max_size);

private:
    struct entry {
        std::uint32_t offset; ///< of the name in bytes_; the value follows it
        std::uint16_t name_size;
        std::uint16_t value_size;
    };

    void evict_oldest() noexcept;
    void make_room(std::size_t bytes);
    void grow_entries();
    void move_bytes(std::size_t capacity);
    void move_entries(std::size_t capacity);
    entry& slot(std::size_t ring_index) const noexcept {
        return entries_[ring_index % entries_capacity_];
    }

    std::unique_ptr<char[]> bytes_;
    std::unique_ptr<entry[]> entries_;
    std::uint32_t bytes_capacity_ = 0;
    std::uint32_t begin_ = 0; ///< the oldest entry's first byte
    std::uint32_t end_ = 0;   ///< past the newest entry's last byte
    std::uint16_t entries_capacity_ = 0;
    std::uint16_t first_ = 0; ///< the oldest entry's place in the ring
    std::uint16_t count_ = 0;
    std::uint32_t size_ = 0;
    std::uint32_t max_size_;
};

} // namespace tarry::h2

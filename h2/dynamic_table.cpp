#include "dynamic_table.hpp"

#include <algorithm>
#include <cstring>

namespace tarry::h2 {

dynamic_table::dynamic_table(std::uint32_t max_size) noexcept
    : max_size_(std::min(max_size, largest_max_size)) {}

std::size_t dynamic_table::allocated() const noexcept {
    return bytes_capacity_ + std::size_t{entries_capacity_} * sizeof(entry);
}

dynamic_table::field dynamic_table::at(std::size_t i) const noexcept {
    const entry& e = slot(first_ + count_ - 1 - i);
    const char* p = bytes_.get() + e.offset;
    return {{p, e.name_size}, {p + e.name_size, e.value_size}};
}

void dynamic_table::evict_oldest() noexcept {
    const entry& e = slot(first_);
    const std::uint32_t bytes = std::uint32_t{e.name_size} + e.value_size;
    size_ -= bytes + entry_overhead;
    begin_ += bytes;
    first_ = static_cast<std::uint16_t>((first_ + 1) % entries_capacity_);
    if (--count_ == 0) begin_ = end_ = first_ = 0;
}

void dynamic_table::insert(std::string_view name, std::string_view value) {
    const std::size_t bytes = name.size() + value.size();
    if (bytes + entry_overhead > max_size_) {
        while (count_ != 0)
            evict_oldest();
        return;
    }
    while (size_ + bytes + entry_overhead > max_size_)
        evict_oldest();
    if (end_ + bytes > bytes_capacity_) make_room(bytes);
    if (count_ == entries_capacity_) grow_entries();

    char* p = bytes_.get() + end_;
    if (!name.empty()) std::memcpy(p, name.data(), name.size());
    if (!value.empty()) std::memcpy(p + name.size(), value.data(), value.size());
    slot(first_ + count_) = {end_, static_cast<std::uint16_t>(name.size()),
                             static_cast<std::uint16_t>(value.size())};
    ++count_;
    end_ += static_cast<std::uint32_t>(bytes);
    size_ += static_cast<std::uint32_t>(bytes + entry_overhead);
}

void dynamic_table::make_room(std::size_t bytes) {
    const std::uint32_t live = end_ - begin_;
    if (live + bytes <= bytes_capacity_) { // room enough once the live run is at the start
        std::memmove(bytes_.get(), bytes_.get() + begin_, live);
        for (std::size_t i = 0; i < count_; ++i)
            slot(first_ + i).offset -= begin_;
        begin_ = 0;
        end_ = live;
        return;
    }
    // Grows by half, at least to what is needed, at most to the maximum size (which the live
    // bytes and the new field fit in: each entry also counts 32 bytes it does not store).
    const std::size_t capacity = std::max<std::size_t>(bytes_capacity_ + bytes_capacity_ / 2, 128);
    move_bytes(std::min<std::size_t>(std::max(capacity, live + bytes), max_size_));
}

void dynamic_table::move_bytes(std::size_t capacity) {
    const std::uint32_t live = end_ - begin_;
    std::unique_ptr<char[]> moved;
    if (capacity != 0) moved = std::make_unique_for_overwrite<char[]>(capacity);
    if (live != 0) std::memcpy(moved.get(), bytes_.get() + begin_, live);
    for (std::size_t i = 0; i < count_; ++i)
        slot(first_ + i).offset -= begin_;
    bytes_ = std::move(moved);
    bytes_capacity_ = static_cast<std::uint32_t>(capacity);
    begin_ = 0;
    end_ = live;
}

void dynamic_table::grow_entries() {
    const std::size_t most = std::max<std::size_t>(max_size_ / entry_overhead, 1);
    move_entries(
        std::min<std::size_t>(std::max<std::size_t>(2 * std::size_t{entries_capacity_}, 4), most));
}

void dynamic_table::move_entries(std::size_t capacity) {
    std::unique_ptr<entry[]> moved;
    if (capacity != 0) moved = std::make_unique_for_overwrite<entry[]>(capacity);
    for (std::size_t i = 0; i < count_; ++i)
        moved[i] = slot(first_ + i);
    entries_ = std::move(moved);
    entries_capacity_ = static_cast<std::uint16_t>(capacity);
    first_ = 0;
}

void dynamic_table::set_max_size(std::uint32_t max_size) {
    max_size_ = std::min(max_size, largest_max_size);
    while (size_ > max_size_)
        evict_oldest();
    // Each entry counts 32 bytes: no more than max_size / 32 of them fit.
    if (bytes_capacity_ > max_size_) move_bytes(max_size_);
    if (entries_capacity_ > max_size_ / entry_overhead) move_entries(max_size_ / entry_overhead);
}

} // namespace tarry::h2

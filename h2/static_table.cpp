#include "static_table.hpp"

namespace tarry::h2 {

namespace {

/// For each name length, the entries with a name that long, in index order: a lookup compares
/// a handful of names, not sixty-one.
struct by_length {
    static constexpr std::size_t longest = 27; // access-control-allow-origin
    std::array<std::uint8_t, longest + 2> start{};
    std::array<std::uint8_t, static_table_size> order{};
};

constexpr by_length make_by_length() {
    by_length t;
    std::size_t at = 0;
    for (std::size_t length = 0; length <= by_length::longest; ++length) {
        t.start[length] = static_cast<std::uint8_t>(at);
        for (std::size_t i = 1; i <= static_table_size; ++i)
            if (static_table[i].name.size() == length) t.order[at++] = static_cast<std::uint8_t>(i);
    }
    t.start[by_length::longest + 1] = static_cast<std::uint8_t>(at);
    return t;
}

constexpr by_length names_by_length = make_by_length();
static_assert(names_by_length.start.back() == static_table_size);

} // namespace

static_match find_static(std::string_view name, std::string_view value) noexcept {
    static_match found;
    if (name.size() > by_length::longest) return found;
    for (std::size_t k = names_by_length.start[name.size()];
         k < names_by_length.start[name.size() + 1]; ++k) {
        const std::uint8_t i = names_by_length.order[k];
        if (static_table[i].name != name) continue;
        if (static_table[i].value == value) return {i, true};
        if (found.index == 0) found.index = i;
    }
    return found;
}

} // namespace tarry::h2

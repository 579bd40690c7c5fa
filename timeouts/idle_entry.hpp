#pragma once

#include <chrono>

namespace tarry::timeouts {

using clock = std::chrono::steady_clock;

class idle_list;

/// The intrusive hook an object embeds to take part in idle timeouts.
///
/// The node carries everything expiry needs (`idle_start`, `idle_timeout`, `prev`, `next`, the
/// owning list), so enrolling, touching and unenrolling never allocate. The list is hand-written
/// rather than a Boost.Intrusive hook because we need, together: a back-pointer to the owning list
/// (to move or unlink an entry without knowing its list), a constant-time size per list (metrics),
/// and unlink-on-destroy; Boost.Intrusive's `auto_unlink` mode forbids the constant-time size, and
/// the whole list is about forty lines.
///
/// An entry's address is its identity: it is neither copied nor moved. Destroying an enrolled
/// entry unlinks it.
class idle_entry {
public:
    /// Runs when the entry expires, after it has been unlinked. Must not throw, and must not
    /// destroy the registry synchronously.
    using callback = void (*)(void* context) noexcept;

    idle_entry(callback on_expire, void* context) noexcept
        : on_expire_(on_expire), context_(context) {}
    idle_entry(const idle_entry&) = delete;
    idle_entry& operator=(const idle_entry&) = delete;
    ~idle_entry();

    [[nodiscard]] bool enrolled() const noexcept { return list_ != nullptr; }
    [[nodiscard]] idle_list* list() const noexcept { return list_; }
    [[nodiscard]] clock::time_point idle_start() const noexcept { return idle_start_; }
    [[nodiscard]] clock::duration idle_timeout() const noexcept { return idle_timeout_; }
    [[nodiscard]] clock::time_point deadline() const noexcept {
        return idle_start_ + idle_timeout_;
    }
    /// What the callback receives: lets an owner walk a list back to its objects.
    [[nodiscard]] void* context() const noexcept { return context_; }

private:
    friend class idle_list;

    clock::time_point idle_start_{};
    clock::duration idle_timeout_{};
    idle_entry* prev_ = nullptr;
    idle_entry* next_ = nullptr;
    idle_list* list_ = nullptr;
    callback on_expire_;
    void* context_;
};

/// Adapts a `noexcept` member function to `idle_entry::callback`:
/// `idle_entry entry_{&member_callback<&connection::on_idle_timeout>, this};`
template <auto Method> struct member_callback_t;

template <class T, void (T::*Method)() noexcept> struct member_callback_t<Method> {
    static void call(void* self) noexcept { (static_cast<T*>(self)->*Method)(); }
};

template <auto Method>
constexpr idle_entry::callback member_callback = &member_callback_t<Method>::call;

} // namespace tarry::timeouts

#pragma once

/// @file
/// @brief idle_entry, the hook an object embeds to take part in idle timeouts.

#include <chrono>

namespace tarry::timeouts {

/// The clock of every deadline: monotonic, so a wall-clock change never expires anything.
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
/// entry unlinks it (O(1), and one timer `cancel` if its list becomes empty). An entry is in
/// at most one list at a time; it is used only on the thread of the registry it is enrolled
/// in. Its size is 56 bytes on a 64-bit target, and it never allocates.
class idle_entry {
public:
    /// @brief Runs when the entry expires, after it has been unlinked, on the thread that runs
    /// the registry's `io_context`, with the `context` given at construction.
    ///
    /// It may enroll, touch or unenroll this entry or any other, and destroy this object or
    /// any other enrolled object. It must not throw (the type is `noexcept`) and must not
    /// destroy the registry synchronously. It should be short: up to
    /// timeout_registry::expire_batch() callbacks run back to back in one handler.
    using callback = void (*)(void* context) noexcept;

    /// An unenrolled entry that will call `on_expire(context)` when it expires.
    idle_entry(callback on_expire, void* context) noexcept
        : on_expire_(on_expire), context_(context) {}
    idle_entry(const idle_entry&) = delete;
    idle_entry& operator=(const idle_entry&) = delete;
    /// Unlinks the entry if it is enrolled; its callback does not run.
    ~idle_entry();

    /// Whether the entry is in a list (and so will expire unless touched or unenrolled).
    [[nodiscard]] bool enrolled() const noexcept { return list_ != nullptr; }
    /// The list it is in, or nullptr.
    [[nodiscard]] idle_list* list() const noexcept { return list_; }
    /// When it was last enrolled or touched. Meaningful only while enrolled.
    [[nodiscard]] clock::time_point idle_start() const noexcept { return idle_start_; }
    /// The duration of the list it was last enrolled in.
    [[nodiscard]] clock::duration idle_timeout() const noexcept { return idle_timeout_; }
    /// idle_start() + idle_timeout(): it expires at the first timer wake at or after this.
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

/// Adapts a `noexcept` member function to idle_entry::callback; see member_callback.
template <auto Method> struct member_callback_t;

/// @cond
template <class T, void (T::*Method)() noexcept> struct member_callback_t<Method> {
    static void call(void* self) noexcept { (static_cast<T*>(self)->*Method)(); }
};
/// @endcond

/// @brief A `noexcept` member function as an idle_entry::callback, with the object as context:
/// @code
/// idle_entry entry_{member_callback<&connection::on_idle_timeout>, this};
/// @endcode
template <auto Method>
constexpr idle_entry::callback member_callback = &member_callback_t<Method>::call;

} // namespace tarry::timeouts

#pragma once

/// @file
/// @brief idle_entry, the hook an object embeds to take part in idle timeouts.

#include "timeout_kind.hpp"

#include <chrono>

namespace tarry::timeouts {

/// The clock of every deadline: monotonic, so a wall-clock change never expires anything.
using clock = std::chrono::steady_clock;

class idle_list;

/// The intrusive hook an object embeds to take part in idle timeouts.
///
/// The node carries everything expiry needs (`idle_start`, `prev`, `next`, the owning list, whose
/// duration is the entry's `idle_timeout`), so enrolling, touching and unenrolling never allocate.
/// The list is hand-written rather than a Boost.Intrusive hook because we need, together: a
/// back-pointer to the owning list (to move or unlink an entry without knowing its list), a
/// constant-time size per list (metrics), and unlink-on-destroy; Boost.Intrusive's `auto_unlink`
/// mode forbids the constant-time size, and the whole list is about forty lines.
///
/// An entry's address is its identity: it is neither copied nor moved. Destroying an enrolled
/// entry unlinks it (O(1), and one timer `cancel` if its list becomes empty). An entry is in
/// at most one list at a time; it is used only on the thread of the registry it is enrolled
/// in. Its size is 56 bytes on a 64-bit target, and it never allocates.
///
/// An entry made with a typed context (`idle_entry(callback, T*)`) remembers its owner's type,
/// so that a walk of a list can turn the entry back into its object with a checked owner<T>()
/// rather than a cast, and an enroll into a kind of another owner fails (timeout_kind).
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

    /// An unenrolled entry that will call `on_expire(context)` when it expires. Its owner is
    /// untyped: it may enroll only in kinds that name no owner, and owner<T>() refuses it.
    idle_entry(callback on_expire, void* context) noexcept
        : on_expire_(on_expire), context_(context) {}
    /// An unenrolled entry embedded in `*owner`, which will call `on_expire(owner)` when it
    /// expires, and which walks may turn back into `*owner` with owner<Owner>().
    template <class Owner>
    idle_entry(callback on_expire, Owner* owner) noexcept
        : on_expire_(on_expire), context_(owner), owner_(&owner_tag<Owner>) {}
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
    /// The duration of its list; zero while unenrolled.
    [[nodiscard]] clock::duration idle_timeout() const noexcept;
    /// The kind of its list, or nullptr while unenrolled.
    [[nodiscard]] const timeout_kind* kind() const noexcept;
    /// idle_start() + idle_timeout(): it expires at the first timer wake at or after this.
    /// Meaningful only while enrolled.
    [[nodiscard]] clock::time_point deadline() const noexcept {
        return idle_start_ + idle_timeout();
    }
    /// What the callback receives.
    [[nodiscard]] void* context() const noexcept { return context_; }
    /// The tag of the type it is embedded in (`&owner_tag<T>`), or null if made untyped.
    [[nodiscard]] const void* owner_type() const noexcept { return owner_; }

    /// @brief The object this entry is embedded in, for code that walks a list back to its
    /// objects. Checked: an entry not made with an `Owner*` context aborts the program with a
    /// message, rather than let a cast read a foreign object. One compare, never on the touch
    /// path (walks are for metrics, pressure and reloads).
    template <class Owner> [[nodiscard]] Owner& owner() const noexcept {
        if (owner_ != &owner_tag<Owner>)
            detail::refuse("an idle_entry was taken for an object of another type");
        return *static_cast<Owner*>(context_);
    }

private:
    friend class idle_list;

    clock::time_point idle_start_{};
    idle_entry* prev_ = nullptr;
    idle_entry* next_ = nullptr;
    idle_list* list_ = nullptr; ///< its duration and kind are the entry's
    callback on_expire_;
    void* context_;
    const void* owner_ = nullptr;
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

// idle_timeout() and kind() read the list, which needs this entry's definition first.
#include "idle_list.hpp"

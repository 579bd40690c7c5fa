#pragma once

/// @file
/// @brief idle_list, the entries of one kind and one timeout duration in activity order.

#include "expiry_stats.hpp"
#include "idle_entry.hpp"
#include "timeout_kind.hpp"

#include <cstddef>

namespace tarry::timeouts {

/// The entries of one kind that share one timeout duration, oldest activity first.
///
/// Every entry is appended with `idle_start = now` and `now` never goes backwards, so the list is
/// sorted by deadline without ever comparing: the head is always the next to expire. The list
/// never reads a clock and owns no timer; `timeout_registry` supplies both. That keeps it
/// deterministic to test with a manual clock, and usable on its own by a program that drives
/// expiry itself.
///
/// Within a timeout_registry, lists are created and owned by the registry and reached through
/// timeout_registry::find(), timeout_registry::oldest() or timeout_registry::for_each_list(); use
/// the registry's enroll,
/// touch and unenroll rather than the list's own members, which do not manage the timer.
///
/// Every member is O(1) except expire() (O(expired)), merge() (O(both sizes)) and detach_all()
/// (O(size)). Nothing allocates, reads a clock or throws. Not thread-safe: one thread uses a list
/// and its entries.
class idle_list {
public:
    /// An empty list of `kind` whose entries expire `timeout` after their last activity. The
    /// kind must outlive the list.
    idle_list(const timeout_kind& kind, clock::duration timeout) noexcept
        : kind_(&kind), timeout_(timeout) {}
    /// An empty list of the untyped kind.
    explicit idle_list(clock::duration timeout) noexcept
        : idle_list(timeout_kind::untyped(), timeout) {}
    idle_list(const idle_list&) = delete;
    idle_list& operator=(const idle_list&) = delete;
    /// Detaches every entry (they become unenrolled; none expires).
    virtual ~idle_list();

    /// The duration every entry of this list has.
    [[nodiscard]] clock::duration timeout() const noexcept { return timeout_; }
    /// What every entry of this list is.
    [[nodiscard]] const timeout_kind& kind() const noexcept { return *kind_; }
    /// Whether no entry is enrolled here.
    [[nodiscard]] bool empty() const noexcept { return head_ == nullptr; }
    /// How many entries are enrolled here. O(1).
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    /// The oldest entry (the next to expire), or nullptr.
    [[nodiscard]] idle_entry* front() const noexcept { return head_; }
    /// The newest entry, or nullptr.
    [[nodiscard]] idle_entry* back() const noexcept { return tail_; }
    /// The entry after `e` (enrolled here) towards the tail, or nullptr: walks the list oldest
    /// first, e.g. to reclaim the longest-idle objects. Do not unlink `e` while holding it.
    [[nodiscard]] static idle_entry* next(const idle_entry& e) noexcept { return e.next_; }

    /// Whether the head's deadline has passed at `now`.
    [[nodiscard]] bool due(clock::time_point now) const noexcept {
        return head_ != nullptr && head_->idle_start_ + timeout_ <= now;
    }

    /// Appends `e`, which must not be enrolled anywhere, as active at `now`. `now` must not be
    /// earlier than any time already given to this list: that is what keeps it sorted. The
    /// kind must admit `e`'s owner (timeout_kind::admits); the registry checks it.
    void push_back(idle_entry& e, clock::time_point now) noexcept;

    /// Marks `e` (enrolled here) active at `now`: O(1), a relink at the tail.
    void touch(idle_entry& e, clock::time_point now) noexcept {
        e.idle_start_ = now;
        if (&e == tail_) return;
        unlink(e);
        link_back(e);
    }

    /// Unlinks `e`, which is enrolled here; its callback does not run.
    void remove(idle_entry& e) noexcept;

    /// Expires, oldest first, at most `budget` entries whose deadline is at or before `now`.
    /// Each is unlinked before its callback runs, and the head is re-read every round, so a
    /// callback may re-enroll its own entry or destroy any other. Records each expiry's
    /// lateness (`now` minus its deadline) in `stats` if given. Returns how many expired.
    std::size_t expire(clock::time_point now, std::size_t budget,
                       expiry_stats* stats = nullptr) noexcept;

    /// Moves every entry of `from` (of the same kind) here, each keeping its idle_start and
    /// taking this list's timeout, merged by idle_start so this list stays sorted (entries
    /// already here go first among equals). O(size() + from.size()), no allocation. `from` ends
    /// empty.
    void merge(idle_list& from) noexcept;

    /// Unlinks every entry without running callbacks.
    void detach_all() noexcept;

protected:
    /// Called when the last entry leaves, however it left (remove, expire, merge, detach).
    virtual void on_emptied() noexcept {}

private:
    void unlink(idle_entry& e) noexcept {
        (e.prev_ != nullptr ? e.prev_->next_ : head_) = e.next_;
        (e.next_ != nullptr ? e.next_->prev_ : tail_) = e.prev_;
    }
    void link_back(idle_entry& e) noexcept {
        e.prev_ = tail_;
        e.next_ = nullptr;
        (tail_ != nullptr ? tail_->next_ : head_) = &e;
        tail_ = &e;
    }
    void pop(idle_entry& e) noexcept;

    const timeout_kind* kind_;
    clock::duration timeout_;
    idle_entry* head_ = nullptr;
    idle_entry* tail_ = nullptr;
    std::size_t size_ = 0;
};

inline clock::duration idle_entry::idle_timeout() const noexcept {
    return list_ != nullptr ? list_->timeout() : clock::duration::zero();
}

inline const timeout_kind* idle_entry::kind() const noexcept {
    return list_ != nullptr ? &list_->kind() : nullptr;
}

} // namespace tarry::timeouts

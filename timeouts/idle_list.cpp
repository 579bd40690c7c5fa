#include "idle_list.hpp"

#include <cstdio>
#include <cstdlib>

namespace tarry::timeouts {

idle_entry::~idle_entry() {
    if (list_ != nullptr) list_->remove(*this);
}

void detail::refuse(const char* what) noexcept {
    std::fprintf(stderr, "tarry::timeouts: %s\n", what);
    std::abort();
}

const timeout_kind& timeout_kind::untyped() noexcept {
    static const timeout_kind kind{"untyped"};
    return kind;
}

idle_list::~idle_list() {
    detach_all();
}

void idle_list::push_back(idle_entry& e, clock::time_point now) noexcept {
    e.idle_start_ = now;
    e.list_ = this;
    link_back(e);
    ++size_;
}

void idle_list::remove(idle_entry& e) noexcept {
    pop(e);
    if (head_ == nullptr) on_emptied();
}

void idle_list::pop(idle_entry& e) noexcept {
    unlink(e);
    e.prev_ = e.next_ = nullptr;
    e.list_ = nullptr;
    --size_;
}

std::size_t idle_list::expire(clock::time_point now, std::size_t budget,
                              expiry_stats* stats) noexcept {
    std::size_t n = 0;
    while (n < budget && due(now)) {
        idle_entry& e = *head_;
        if (stats != nullptr) stats->record(now - (e.idle_start_ + timeout_));
        pop(e);
        ++n;
        // The callback may touch this list in any way, so nothing is cached across it.
        e.on_expire_(e.context_);
    }
    if (n != 0 && head_ == nullptr) on_emptied();
    return n;
}

void idle_list::merge(idle_list& from) noexcept {
    if (&from == this || from.head_ == nullptr) return;
    // Both lists are sorted by idle_start, so one forward walk of this list places every entry
    // of `from`: `pos` only ever moves towards the tail.
    idle_entry* pos = head_;
    while (from.head_ != nullptr) {
        idle_entry& e = *from.head_;
        from.pop(e);
        while (pos != nullptr && pos->idle_start_ <= e.idle_start_)
            pos = pos->next_;
        e.list_ = this;
        if (pos == nullptr) {
            link_back(e);
        } else {
            e.next_ = pos;
            e.prev_ = pos->prev_;
            (pos->prev_ != nullptr ? pos->prev_->next_ : head_) = &e;
            pos->prev_ = &e;
        }
        ++size_;
    }
    from.on_emptied();
}

void idle_list::detach_all() noexcept {
    while (head_ != nullptr)
        pop(*head_);
}

} // namespace tarry::timeouts

#include "idle_list.hpp"

namespace tarry::timeouts {

idle_entry::~idle_entry() {
    if (list_ != nullptr) list_->remove(*this);
}

idle_list::~idle_list() {
    detach_all();
}

void idle_list::push_back(idle_entry& e, clock::time_point now) noexcept {
    e.idle_start_ = now;
    e.idle_timeout_ = timeout_;
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
        if (stats != nullptr) stats->record(now - e.deadline());
        pop(e);
        ++n;
        // The callback may touch this list in any way, so nothing is cached across it.
        e.on_expire_(e.context_);
    }
    if (n != 0 && head_ == nullptr) on_emptied();
    return n;
}

std::size_t idle_list::expire_oldest(std::size_t count) noexcept {
    std::size_t n = 0;
    while (n < count && head_ != nullptr) {
        idle_entry& e = *head_;
        pop(e);
        ++n;
        e.on_expire_(e.context_);
    }
    if (n != 0 && head_ == nullptr) on_emptied();
    return n;
}

void idle_list::detach_all() noexcept {
    while (head_ != nullptr)
        pop(*head_);
}

} // namespace tarry::timeouts

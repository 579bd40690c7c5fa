#include "timeout_registry.hpp"

#include "timer_list.hpp"

namespace tarry::timeouts {

timeout_registry::timeout_registry(boost::asio::io_context& io, std::size_t expire_batch)
    : io_(io), expire_batch_(expire_batch == 0 ? 1 : expire_batch) {}

timeout_registry::~timeout_registry() {
    for (lane& l : lanes_) {
        for (auto& list : l.lists) {
            list->detach_all();
            list->detach();
        }
    }
}

idle_list& timeout_registry::as_idle_list(timer_list& l) noexcept {
    return l;
}

timer_list* timeout_registry::lookup(const timeout_kind& kind,
                                     clock::duration timeout) const noexcept {
    for (const auto& list : lanes_[kind.id()].lists)
        if (list->timeout() == timeout) return list.get();
    return nullptr;
}

timer_list& timeout_registry::list_for(const timeout_kind& kind, clock::duration timeout) {
    if (timer_list* found = lookup(kind, timeout)) return *found;
    lane& l = lanes_[kind.id()];
    l.kind = &kind; // ids come from one counter: a lane only ever sees one kind
    prune_empty_lists();
    l.lists.reserve(l.lists.size() + 1); // so that the push_back below cannot throw
    l.lists.push_back(std::make_shared<timer_list>(*this, io_, kind, timeout));
    return *l.lists.back();
}

void timeout_registry::enroll(idle_entry& e, const timeout_kind& kind, clock::duration timeout,
                              clock::time_point now) {
    // A list holds one kind of owner: this is what makes a walk's owner<T>() safe.
    if (!kind.admits(e.owner_type()))
        detail::refuse("an entry was enrolled in a kind of another owner");
    timer_list& target = list_for(kind, timeout);
    if (e.list() == &target) {
        target.touch(e, now);
        return;
    }
    // Queue the wait before moving anything: if that throws, `e` is still where it was.
    target.ensure_armed_for(now + timeout);
    unenroll(e);
    target.push_back(e, now);
}

void timeout_registry::retime(const timeout_kind& kind, clock::duration from, clock::duration to) {
    if (from == to) return;
    timer_list* source = lookup(kind, from);
    if (source == nullptr || source->empty()) return;
    timer_list& target = list_for(kind, to); // may prune lists, never a non-empty one
    // Both lists are sorted by idle_start; so is their merge, which keeps the target sorted by
    // deadline since every entry in it gets the same duration. The source, emptied, disarms.
    target.merge(*source);
    target.rearm(); // its head may be earlier than the deadline it was armed for
}

idle_list* timeout_registry::find(const timeout_kind& kind,
                                  clock::duration timeout) const noexcept {
    timer_list* l = lookup(kind, timeout);
    return l != nullptr ? &as_idle_list(*l) : nullptr;
}

idle_entry* timeout_registry::oldest(const timeout_kind& kind) const noexcept {
    idle_entry* best = nullptr;
    for (const auto& list : lanes_[kind.id()].lists) {
        idle_entry* head = list->front();
        if (head != nullptr && (best == nullptr || head->idle_start() < best->idle_start()))
            best = head;
    }
    return best;
}

std::size_t timeout_registry::list_count() const noexcept {
    std::size_t n = 0;
    for (const lane& l : lanes_)
        n += l.lists.size();
    return n;
}

expiry_stats timeout_registry::stats() const noexcept {
    expiry_stats all;
    for (const lane& l : lanes_)
        all += l.stats;
    return all;
}

std::size_t timeout_registry::expire_due(clock::time_point now) {
    // Callbacks may enroll into new kinds or durations, which adds lists: walk a snapshot.
    std::vector<std::shared_ptr<timer_list>> snapshot;
    snapshot.reserve(list_count());
    for (lane& l : lanes_)
        for (auto& list : l.lists)
            snapshot.push_back(list);
    std::size_t n = 0;
    for (auto& list : snapshot) {
        // Only the entries present now: a callback that re-enrolls with a zero timeout must
        // not keep this loop going.
        n += list->run_expiry(now, list->size());
        list->ensure_armed();
    }
    return n;
}

void timeout_registry::prune_empty_lists() {
    // Durations that are no longer used (a reload changed them) would otherwise pile up. A list
    // whose callbacks are running is kept: its batch loop still holds it.
    for (lane& l : lanes_)
        std::erase_if(l.lists, [](const auto& list) { return list->empty() && !list->expiring(); });
}

} // namespace tarry::timeouts

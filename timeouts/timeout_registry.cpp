#include "timeout_registry.hpp"

#include "timer_list.hpp"

#include <vector>

namespace tarry::timeouts {

timeout_registry::timeout_registry(boost::asio::io_context& io, std::size_t expire_batch)
    : io_(io), expire_batch_(expire_batch == 0 ? 1 : expire_batch) {}

timeout_registry::~timeout_registry() {
    for (auto& [rep, list] : lists_) {
        list->detach_all();
        list->detach();
    }
}

idle_list& timeout_registry::as_idle_list(timer_list& l) noexcept {
    return l;
}

timer_list& timeout_registry::list_for(clock::duration timeout) {
    auto it = lists_.find(timeout.count());
    if (it == lists_.end()) {
        prune_empty_lists();
        it = lists_.emplace(timeout.count(), std::make_shared<timer_list>(*this, io_, timeout))
                 .first;
    }
    return *it->second;
}

void timeout_registry::enroll(idle_entry& e, clock::duration timeout, clock::time_point now) {
    timer_list& target = list_for(timeout);
    if (e.list() == &target) {
        target.touch(e, now);
        return;
    }
    // Queue the wait before moving anything: if that throws, `e` is still where it was.
    target.ensure_armed_for(now + timeout);
    unenroll(e);
    target.push_back(e, now);
}

void timeout_registry::retime(clock::duration from, clock::duration to) {
    auto it = lists_.find(from.count());
    if (from == to || it == lists_.end() || it->second->empty()) return;
    const std::shared_ptr<timer_list> source = it->second;
    timer_list& target = list_for(to);
    // Both lists are sorted by idle_start; so is their merge, which keeps the target sorted by
    // deadline since every entry in it gets the same duration. The source, emptied, disarms.
    target.merge(*source);
    target.rearm(); // its head may be earlier than the deadline it was armed for
}

idle_list* timeout_registry::find(clock::duration timeout) const noexcept {
    auto it = lists_.find(timeout.count());
    return it == lists_.end() ? nullptr : it->second.get();
}

std::size_t timeout_registry::expire_due(clock::time_point now) {
    // Callbacks may enroll into new durations, which rehashes lists_: walk a snapshot.
    std::vector<std::shared_ptr<timer_list>> snapshot;
    snapshot.reserve(lists_.size());
    for (auto& [rep, list] : lists_)
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
    boost::unordered::erase_if(
        lists_, [](const auto& kv) { return kv.second->empty() && !kv.second->expiring(); });
}

} // namespace tarry::timeouts

#include "open_file_cache.hpp"

#include <iterator>

namespace tarry::http {

open_file* open_file_cache::find(std::string_view path, clock::time_point now) {
    const auto it = entries_.find(path);
    if (it == entries_.end()) return nullptr;
    if (now - it->second.opened >= valid_for_) {
        entries_.erase(it);
        return nullptr;
    }
    return &it->second;
}

open_file& open_file_cache::insert(std::string_view path, open_file&& entry) {
    if (const auto it = entries_.find(path); it != entries_.end()) {
        it->second = std::move(entry);
        return it->second;
    }
    if (entries_.size() >= max_entries_) {
        const clock::time_point now = entry.opened;
        std::erase_if(entries_, [&](const auto& e) { return now - e.second.opened >= valid_for_; });
        if (entries_.size() >= max_entries_) entries_.erase(entries_.begin());
    }
    return entries_.emplace(std::string(path), std::move(entry)).first->second;
}

} // namespace tarry::http

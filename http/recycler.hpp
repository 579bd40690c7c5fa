#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tarry::http {

/// A per-thread free list of T, so that per-request state (parsers, buffers) costs no heap
/// operation on the hot path, and idle connections hold none of it: they give it back between
/// requests and take it again when bytes arrive. Each worker is one thread, so no locks.
template <class T, std::size_t MaxKept> class recycler {
public:
    using pointer = std::unique_ptr<T>;

    static pointer take() {
        auto& pool = free_list();
        if (pool.empty()) return std::make_unique<T>();
        pointer p = std::move(pool.back());
        pool.pop_back();
        return p;
    }

    /// `p` must already be reset to a reusable state by the caller.
    static void give(pointer p) {
        if (!p) return;
        auto& pool = free_list();
        if (pool.size() < MaxKept) pool.push_back(std::move(p));
    }

    /// Frees what this thread keeps: after a flood, kept objects scattered over the heap would
    /// pin its pages, so that malloc_trim could give little back.
    static void release() noexcept {
        auto& pool = free_list();
        pool.clear();
        pool.shrink_to_fit();
    }

private:
    static std::vector<pointer>& free_list() {
        thread_local std::vector<pointer> pool;
        return pool;
    }
};

} // namespace tarry::http

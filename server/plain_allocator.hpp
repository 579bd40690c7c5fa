#pragma once

#include <cstddef>
#include <new>

namespace tarry::server {

/// Allocates handler operations with plain operator new, bypassing Asio's per-thread handler
/// cache. That cache hands any freed block that is big enough to the next operation: a 192-byte
/// accept operation's block would end up holding a 88-byte wait that an idle connection keeps
/// for minutes. Bound to the accept and wait handlers, each operation gets a block of its size.
template <class T> struct plain_allocator {
    using value_type = T;
    plain_allocator() noexcept = default;
    template <class U> plain_allocator(const plain_allocator<U>&) noexcept {} // NOLINT
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
    friend bool operator==(plain_allocator, plain_allocator) noexcept { return true; }
};

} // namespace tarry::server

// What the test process holds in memory, for the tests that bound what the server keeps.
//
// heap_in_use() is the measure to bound: the bytes the allocator has handed out and not had
// back, from every thread. Under AddressSanitizer it asks the sanitizer's allocator, whose
// quarantine keeps freed blocks resident (a resident size there grows with the traffic, not with
// what is held); glibc's books mean nothing there. rss_kib() is what the system sees, for the
// tests about giving memory back to it.
#pragma once

#include <malloc.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#if defined(__SANITIZE_ADDRESS__)
// The sanitizer's public allocator interface (clang ships its header, GCC only the library).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace tarry::test {

inline std::int64_t heap_in_use() {
#if defined(__SANITIZE_ADDRESS__)
    return static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes());
#else
    const struct mallinfo2 m = ::mallinfo2();
    return static_cast<std::int64_t>(m.uordblks + m.hblkhd);
#endif
}

/// True where rss_kib() follows heap_in_use() (not under the sanitizer's quarantine).
inline constexpr bool resident_follows_heap =
#if defined(__SANITIZE_ADDRESS__)
    false;
#else
    true;
#endif

inline std::int64_t rss_kib() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.starts_with("VmRSS:")) return std::stoll(line.substr(6));
    return 0;
}

} // namespace tarry::test

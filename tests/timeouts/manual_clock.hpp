#pragma once

#include <tarry/timeouts/idle_entry.hpp>

#include <chrono>
#include <vector>

namespace tarry::timeouts::test {

using namespace std::chrono_literals;

/// Time that moves only when a test says so.
struct manual_clock {
    clock::time_point now{clock::time_point{} + 1h};
    void advance(clock::duration d) { now += d; }
};

/// An entry that records, in a shared log, the order in which entries expired.
struct probe {
    explicit probe(std::vector<int>& l, int i) : log(&l), id(i) {}
    std::vector<int>* log;
    int id;
    idle_entry entry{&on_expire, this};
    static void on_expire(void* self) noexcept {
        auto* p = static_cast<probe*>(self);
        p->log->push_back(p->id);
    }
};

} // namespace tarry::timeouts::test

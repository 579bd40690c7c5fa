// What one activity bump costs: the per-duration list (this project) against a steady_timer per
// connection re-armed on every activity (what Boost.Beast's tcp_stream does), and what expiring
// due entries costs. Run:  build/load/timeouts_bench --benchmark_min_time=0.5
//
// N live entries. Activity is round-robin, the steady state of N equally busy connections: the
// entry touched is always the list's head, which then moves to the tail.
#include <tarry/timeouts/timeout_registry.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <vector>

namespace {

using namespace std::chrono_literals;
using tarry::timeouts::clock;
using tarry::timeouts::idle_entry;
using tarry::timeouts::idle_list;
using tarry::timeouts::timeout_registry;

std::uint64_t expired_count = 0;
void count_expiry(void*) noexcept {
    ++expired_count;
}

// Entries laid out contiguously, as connections allocated one after another would be.
struct slot {
    idle_entry entry{&count_expiry, nullptr};
};

void BM_ListTouch(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    boost::asio::io_context io;
    timeout_registry reg(io);
    auto entries = std::make_unique<slot[]>(n);
    for (std::size_t i = 0; i < n; ++i)
        reg.enroll(entries[i].entry, 65s);
    std::size_t i = 0;
    for (auto _ : state) {
        timeout_registry::touch(entries[i].entry); // clock read + unlink + append
        if (++i == n) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_TimerRearm(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    boost::asio::io_context io;
    std::vector<std::unique_ptr<boost::asio::steady_timer>> timers;
    timers.reserve(n);
    auto on_wait = [](boost::system::error_code) {};
    for (std::size_t i = 0; i < n; ++i) {
        timers.push_back(std::make_unique<boost::asio::steady_timer>(io));
        timers.back()->expires_after(65s);
        timers.back()->async_wait(on_wait);
    }
    std::size_t i = 0;
    for (auto _ : state) {
        auto& t = *timers[i];
        t.expires_after(65s); // cancels the pending wait: O(log n) in the heap
        t.async_wait(on_wait);
        io.poll_one(); // the cancelled handler runs
        if (++i == n) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
    for (auto& t : timers)
        t->cancel();
    io.poll();
}

void BM_ListExpire(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    auto entries = std::make_unique<slot[]>(n);
    idle_list list(65s);
    for (auto _ : state) {
        state.PauseTiming();
        const auto start = clock::now();
        for (std::size_t i = 0; i < n; ++i)
            list.push_back(entries[i].entry, start);
        state.ResumeTiming();
        list.expire(start + 65s, n);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void sizes(benchmark::internal::Benchmark* b) {
    for (std::int64_t n : {1'000, 10'000, 100'000, 1'000'000})
        b->Arg(n);
}

BENCHMARK(BM_ListTouch)->Apply(sizes);
BENCHMARK(BM_TimerRearm)->Apply(sizes);
BENCHMARK(BM_ListExpire)->Apply(sizes);

} // namespace

BENCHMARK_MAIN();

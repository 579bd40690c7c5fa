#include "manual_clock.hpp"

#include <tarry/timeouts/idle_list.hpp>

#include <gtest/gtest.h>

#include <deque>
#include <memory>

namespace tarry::timeouts::test {
namespace {

constexpr std::size_t all = static_cast<std::size_t>(-1);

class IdleListTest : public ::testing::Test {
protected:
    manual_clock clk;
    std::vector<int> log;
    idle_list list{100ms};
    std::deque<probe> probes;

    probe& make(int id) { return probes.emplace_back(log, id); }
    probe& enroll(int id) {
        probe& p = make(id);
        list.push_back(p.entry, clk.now);
        return p;
    }
};

TEST_F(IdleListTest, ExpiresInDeadlineOrder) {
    enroll(1);
    clk.advance(10ms);
    enroll(2);
    clk.advance(10ms);
    enroll(3);
    EXPECT_EQ(list.size(), 3U);
    clk.advance(200ms);
    EXPECT_EQ(list.expire(clk.now, all), 3U);
    EXPECT_EQ(log, (std::vector<int>{1, 2, 3}));
    EXPECT_TRUE(list.empty());
}

TEST_F(IdleListTest, EqualDeadlinesExpireFirstInFirstOut) {
    for (int i = 0; i < 5; ++i)
        enroll(i);
    clk.advance(100ms);
    list.expire(clk.now, all);
    EXPECT_EQ(log, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_F(IdleListTest, NeverExpiresBeforeDeadline) {
    probe& p = enroll(1);
    clk.advance(100ms - 1ns);
    EXPECT_FALSE(list.due(clk.now));
    EXPECT_EQ(list.expire(clk.now, all), 0U);
    EXPECT_TRUE(p.entry.enrolled());
    clk.advance(1ns);
    EXPECT_EQ(list.expire(clk.now, all), 1U);
    EXPECT_FALSE(p.entry.enrolled());
}

TEST_F(IdleListTest, TouchMovesBehindLaterEntries) {
    probe& a = enroll(1);
    clk.advance(10ms);
    enroll(2);
    clk.advance(10ms);
    list.touch(a.entry, clk.now);
    EXPECT_EQ(list.front()->idle_start(), clk.now - 10ms);
    EXPECT_EQ(list.back(), &a.entry);
    EXPECT_EQ(a.entry.deadline(), clk.now + 100ms);
    clk.advance(90ms); // entry 2 is due, entry 1 is 10ms short
    list.expire(clk.now, all);
    EXPECT_EQ(log, (std::vector<int>{2}));
    clk.advance(10ms);
    list.expire(clk.now, all);
    EXPECT_EQ(log, (std::vector<int>{2, 1}));
}

TEST_F(IdleListTest, TouchOfTailOnlyMovesItsStart) {
    enroll(1);
    probe& b = enroll(2);
    clk.advance(50ms);
    list.touch(b.entry, clk.now);
    EXPECT_EQ(list.back(), &b.entry);
    EXPECT_EQ(b.entry.idle_start(), clk.now);
}

TEST_F(IdleListTest, RemoveUnlinksWithoutCallback) {
    enroll(1);
    probe& b = enroll(2);
    enroll(3);
    list.remove(b.entry);
    EXPECT_FALSE(b.entry.enrolled());
    EXPECT_EQ(list.size(), 2U);
    clk.advance(1s);
    list.expire(clk.now, all);
    EXPECT_EQ(log, (std::vector<int>{1, 3}));
}

TEST_F(IdleListTest, DestroyingAnEnrolledEntryUnlinksIt) {
    enroll(1);
    {
        probe p(log, 2);
        list.push_back(p.entry, clk.now);
        EXPECT_EQ(list.size(), 2U);
    }
    enroll(3);
    EXPECT_EQ(list.size(), 2U);
    clk.advance(1s);
    list.expire(clk.now, all);
    EXPECT_EQ(log, (std::vector<int>{1, 3}));
}

TEST_F(IdleListTest, DestroyingTheListDetachesEntries) {
    probe p(log, 1);
    {
        idle_list short_lived{10ms};
        short_lived.push_back(p.entry, clk.now);
        EXPECT_TRUE(p.entry.enrolled());
    }
    EXPECT_FALSE(p.entry.enrolled());
    EXPECT_TRUE(log.empty());
}

// A callback that puts its own entry back, as a connection that answers a timeout with one
// more phase would.
struct reenroller {
    idle_list* list;
    manual_clock* clk;
    int fired = 0;
    idle_entry entry{&on_expire, this};
    static void on_expire(void* self) noexcept {
        auto* r = static_cast<reenroller*>(self);
        if (++r->fired < 3) r->list->push_back(r->entry, r->clk->now);
    }
};

TEST_F(IdleListTest, CallbackMayReenrollItsOwnEntry) {
    reenroller r{&list, &clk};
    list.push_back(r.entry, clk.now);
    clk.advance(100ms);
    EXPECT_EQ(list.expire(clk.now, all), 1U); // re-enrolled as active now: not due again yet
    EXPECT_TRUE(r.entry.enrolled());
    EXPECT_EQ(r.entry.deadline(), clk.now + 100ms);
    clk.advance(100ms);
    list.expire(clk.now, all);
    clk.advance(100ms);
    list.expire(clk.now, all);
    EXPECT_EQ(r.fired, 3);
    EXPECT_FALSE(r.entry.enrolled());
}

// A callback that destroys the entry right behind it, e.g. a connection closing its peer.
struct killer {
    std::vector<int>* log;
    std::unique_ptr<probe>* victim;
    idle_entry entry{&on_expire, this};
    static void on_expire(void* self) noexcept {
        auto* k = static_cast<killer*>(self);
        k->log->push_back(0);
        k->victim->reset();
    }
};

TEST_F(IdleListTest, CallbackMayDestroyTheNextEntry) {
    auto victim = std::make_unique<probe>(log, 1);
    killer k{&log, &victim};
    list.push_back(k.entry, clk.now);
    list.push_back(victim->entry, clk.now);
    enroll(2);
    clk.advance(100ms);
    EXPECT_EQ(list.expire(clk.now, all), 2U);
    EXPECT_EQ(log, (std::vector<int>{0, 2}));
    EXPECT_EQ(victim, nullptr);
    EXPECT_TRUE(list.empty());
}

TEST_F(IdleListTest, MassExpiryIsSplitIntoBatches) {
    constexpr int n = 100'000;
    for (int i = 0; i < n; ++i)
        enroll(i);
    clk.advance(100ms);
    std::size_t rounds = 0;
    std::size_t expired = 0;
    while (list.due(clk.now)) {
        const std::size_t k = list.expire(clk.now, 256);
        EXPECT_LE(k, 256U);
        expired += k;
        ++rounds;
    }
    EXPECT_EQ(expired, static_cast<std::size_t>(n));
    EXPECT_EQ(rounds, (n + 255) / 256U);
    ASSERT_EQ(log.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(log[i], i);
}

TEST_F(IdleListTest, MergeInterleavesByIdleStart) {
    idle_list other{500ms};
    std::vector<probe*> from;
    for (int i = 0; i < 6; ++i) {
        if (i % 2 == 0) {
            enroll(i);
        } else {
            probe& p = make(i);
            other.push_back(p.entry, clk.now);
            from.push_back(&p);
        }
        clk.advance(10ms);
    }
    probe& tie_here = enroll(10); // same idle_start as tie_there: the entry already here leads
    probe& tie_there = make(11);
    other.push_back(tie_there.entry, clk.now);
    list.merge(other);
    EXPECT_TRUE(other.empty());
    EXPECT_EQ(other.size(), 0U);
    EXPECT_EQ(list.size(), 8U);
    for (probe* p : from) {
        EXPECT_EQ(p->entry.list(), &list);
        EXPECT_EQ(p->entry.idle_timeout(), 100ms); // the new duration, the old start
    }
    EXPECT_EQ(idle_list::next(tie_here.entry), &tie_there.entry);
    EXPECT_EQ(list.back(), &tie_there.entry);
    clk.advance(1s);
    list.expire(clk.now, all);
    EXPECT_EQ(log, (std::vector<int>{0, 1, 2, 3, 4, 5, 10, 11}));
}

TEST_F(IdleListTest, MergeIntoAnEmptyListAndFromAnEmptyList) {
    idle_list other{500ms};
    probe& p = make(1);
    other.push_back(p.entry, clk.now);
    list.merge(other);
    EXPECT_EQ(list.front(), &p.entry);
    EXPECT_EQ(list.back(), &p.entry);
    list.merge(other); // nothing to move
    list.merge(list);  // itself: nothing to do
    EXPECT_EQ(list.size(), 1U);
}

TEST_F(IdleListTest, StatsRecordLateness) {
    enroll(1);
    clk.advance(100ms + 3ms);
    expiry_stats stats;
    list.expire(clk.now, all, &stats);
    EXPECT_EQ(stats.expired, 1U);
    EXPECT_EQ(stats.late_sum_us, 3000U);
    EXPECT_EQ(stats.late_buckets[4], 1U); // (2ms, 5ms]
}

} // namespace
} // namespace tarry::timeouts::test

// Kinds in the registry, on a manual clock: a list is (kind, duration), a walk sees one kind,
// retime moves one kind, and an entry is turned back into its object only through a checked
// owner<T>().
#include "manual_clock.hpp"

#include <tarry/timeouts/timeout_registry.hpp>

#include <gtest/gtest.h>

#include <deque>

namespace tarry::timeouts::test {
namespace {

/// Two owners, as a server has client connections and upstream connections.
struct client {
    client(std::vector<int>* l, int i) : log(l), id(i) {}
    std::vector<int>* log;
    int id;
    idle_entry entry{&on_expire, this};
    static void on_expire(void* self) noexcept {
        auto* c = static_cast<client*>(self);
        c->log->push_back(c->id);
    }
};
struct pooled {
    explicit pooled(int i) : id(i) {}
    int id;
    idle_entry entry{&on_expire, this};
    static void on_expire(void*) noexcept {}
};

const timeout_kind keep_alive{"keep_alive", owner_tag<client>};
const timeout_kind header{"header", owner_tag<client>};
const timeout_kind pool_idle{"pool_idle", owner_tag<pooled>};

static_assert(sizeof(idle_entry) == 7 * sizeof(void*), "an entry stays seven words");

class TimeoutKindTest : public ::testing::Test {
protected:
    boost::asio::io_context io;
    manual_clock clk;
    std::vector<int> log;
    std::deque<client> clients;
    std::deque<pooled> pool;
    timeout_registry reg{io};

    client& add_client(int id, const timeout_kind& k, clock::duration d) {
        client& c = clients.emplace_back(&log, id);
        reg.enroll(c.entry, k, d, clk.now);
        return c;
    }
    pooled& add_pooled(int id, clock::duration d) {
        pooled& p = pool.emplace_back(id);
        reg.enroll(p.entry, pool_idle, d, clk.now);
        return p;
    }
};

TEST_F(TimeoutKindTest, TwoKindsWithOneDurationAreTwoLists) {
    client& c = add_client(1, header, 60s);
    pooled& p = add_pooled(2, 60s);
    idle_list* clients_60 = reg.find(header, 60s);
    idle_list* pool_60 = reg.find(pool_idle, 60s);
    ASSERT_NE(clients_60, nullptr);
    ASSERT_NE(pool_60, nullptr);
    EXPECT_NE(clients_60, pool_60);
    EXPECT_EQ(reg.list_count(), 2U);
    EXPECT_EQ(c.entry.list(), clients_60);
    EXPECT_EQ(p.entry.list(), pool_60);
    EXPECT_EQ(c.entry.kind(), &header);
    EXPECT_EQ(&pool_60->kind(), &pool_idle);
    EXPECT_EQ(reg.find(keep_alive, 60s), nullptr);
    EXPECT_EQ(reg.find(60s), nullptr); // the untyped kind has no such list either
}

TEST_F(TimeoutKindTest, AWalkOfAKindSeesThatKindOnly) {
    add_pooled(10, 60s); // older than every client, same duration
    clk.advance(1s);
    add_client(1, keep_alive, 60s);
    clk.advance(1s);
    add_client(2, header, 60s);
    add_client(3, keep_alive, 60s);
    idle_entry* oldest = reg.oldest(keep_alive);
    ASSERT_NE(oldest, nullptr);
    EXPECT_EQ(oldest->owner<client>().id, 1);
    int seen = 0;
    for (idle_entry* e = reg.find(keep_alive, 60s)->front(); e != nullptr;
         e = idle_list::next(*e)) {
        EXPECT_EQ(e->kind(), &keep_alive);
        EXPECT_NE(e->owner<client>().id, 2);
        ++seen;
    }
    EXPECT_EQ(seen, 2);
    EXPECT_EQ(reg.oldest(pool_idle)->owner<pooled>().id, 10);
    EXPECT_EQ(reg.oldest(timeout_kind::untyped()), nullptr);
}

TEST_F(TimeoutKindTest, OldestLooksAcrossTheDurationsOfAKind) {
    add_client(1, keep_alive, 65s);
    clk.advance(1s);
    add_client(2, keep_alive, 10s); // expires first, but idle for less time
    EXPECT_EQ(reg.oldest(keep_alive)->owner<client>().id, 1);
    clk.advance(10s);
    EXPECT_EQ(reg.expire_due(clk.now), 1U);
    EXPECT_EQ(log, (std::vector<int>{2}));
    EXPECT_EQ(reg.oldest(keep_alive)->owner<client>().id, 1);
}

TEST_F(TimeoutKindTest, RetimeMovesOneKindOnly) {
    add_client(1, keep_alive, 65s);
    add_pooled(2, 65s);         // another kind, the same old duration
    add_client(3, header, 65s); // another kind of the same owner
    clk.advance(5s);
    reg.retime(keep_alive, 65s, 10s);
    EXPECT_EQ(reg.find(keep_alive, 10s)->size(), 1U);
    EXPECT_EQ(reg.find(keep_alive, 65s)->size(), 0U);
    EXPECT_EQ(reg.find(pool_idle, 65s)->size(), 1U);
    EXPECT_EQ(reg.find(header, 65s)->size(), 1U);
    EXPECT_EQ(pool.front().entry.idle_timeout(), 65s);
    clk.advance(5s); // client 1 has waited 10 s: it goes, nothing else does
    EXPECT_EQ(reg.expire_due(clk.now), 1U);
    EXPECT_EQ(log, (std::vector<int>{1}));
}

TEST_F(TimeoutKindTest, EnrollMovesAnEntryBetweenKindsOfOneDuration) {
    client& c = add_client(1, header, 60s);
    clk.advance(30s);
    reg.enroll(c.entry, keep_alive, 60s, clk.now); // a new list, not a touch of the old one
    EXPECT_EQ(c.entry.kind(), &keep_alive);
    EXPECT_EQ(reg.find(header, 60s)->size(), 0U);
    EXPECT_EQ(c.entry.idle_start(), clk.now);
    reg.enroll(c.entry, keep_alive, 60s, clk.now); // the same list: a touch
    EXPECT_EQ(reg.find(keep_alive, 60s)->size(), 1U);
}

TEST_F(TimeoutKindTest, StatsAreKeptPerKind) {
    add_client(1, keep_alive, 1s);
    add_client(2, keep_alive, 1s);
    add_pooled(3, 1s);
    clk.advance(1500ms);
    EXPECT_EQ(reg.expire_due(clk.now), 3U);
    EXPECT_EQ(reg.stats(keep_alive).expired, 2U);
    EXPECT_EQ(reg.stats(pool_idle).expired, 1U);
    EXPECT_EQ(reg.stats(header).expired, 0U);
    EXPECT_EQ(reg.stats().expired, 3U);
    std::vector<std::string_view> kinds;
    reg.for_each_kind(
        [&](const timeout_kind& k, const expiry_stats&) { kinds.push_back(k.name()); });
    EXPECT_EQ(kinds.size(), 2U);
}

TEST_F(TimeoutKindTest, KindsHaveDistinctSmallIds) {
    EXPECT_NE(keep_alive.id(), header.id());
    EXPECT_NE(header.id(), pool_idle.id());
    EXPECT_NE(keep_alive.id(), timeout_kind::untyped().id());
    EXPECT_LT(pool_idle.id(), timeout_kind::max);
}

using TimeoutKindDeathTest = TimeoutKindTest;

TEST_F(TimeoutKindDeathTest, TakingAnEntryForAnotherOwnerAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    pooled& p = add_pooled(1, 60s);
    idle_entry* e = reg.oldest(pool_idle);
    ASSERT_EQ(e, &p.entry);
    EXPECT_DEATH((void)e->owner<client>(), "taken for an object of another type");
    EXPECT_EQ(&e->owner<pooled>(), &p);
}

TEST_F(TimeoutKindDeathTest, EnrollingIntoAKindOfAnotherOwnerAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    pooled p{1};
    EXPECT_DEATH(reg.enroll(p.entry, keep_alive, 60s, clk.now), "a kind of another owner");
    // An entry made with an untyped context cannot be taken for anything, and stays out of
    // typed kinds; the untyped kind takes entries of any owner.
    std::vector<int> l;
    client c(&l, 2);
    idle_entry untyped{&client::on_expire, static_cast<void*>(&c)};
    EXPECT_DEATH(reg.enroll(untyped, header, 60s, clk.now), "a kind of another owner");
    reg.enroll(untyped, 60s, clk.now);
    EXPECT_DEATH((void)reg.find(60s)->front()->owner<client>(), "another type");
    reg.enroll(p.entry, 60s, clk.now);
    EXPECT_EQ(reg.find(60s)->size(), 2U);
}

} // namespace
} // namespace tarry::timeouts::test

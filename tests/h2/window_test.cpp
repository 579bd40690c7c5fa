#include <tarry/h2/frame.hpp>
#include <tarry/h2/window.hpp>

#include <gtest/gtest.h>

namespace h2 = tarry::h2;
using h2::error_code;

TEST(WindowTest, ConsumeWithinTheWindowOnly) {
    h2::window w;
    EXPECT_EQ(w.size(), 65535);
    EXPECT_EQ(w.consume(65535), error_code::no_error);
    EXPECT_EQ(w.size(), 0);
    EXPECT_EQ(w.consume(1), error_code::flow_control_error);
    EXPECT_EQ(w.consume(0), error_code::no_error);
    EXPECT_EQ(w.size(), 0);
}

TEST(WindowTest, UpdatesStopAtTwoToTheThirtyFirstMinusOne) {
    h2::window w;
    EXPECT_EQ(w.increase(h2::max_window - 65535), error_code::no_error);
    EXPECT_EQ(w.size(), static_cast<std::int32_t>(h2::max_window));
    EXPECT_EQ(w.increase(1), error_code::flow_control_error);
    EXPECT_EQ(w.size(), static_cast<std::int32_t>(h2::max_window)); // left as it was
    h2::window big(0);
    EXPECT_EQ(big.increase(h2::max_window), error_code::no_error);
    h2::window over(1);
    EXPECT_EQ(over.increase(h2::max_window), error_code::flow_control_error);
}

TEST(WindowTest, ASmallerInitialWindowSizeMakesItNegative) {
    // 6.9.2's example: the peer sent 60,000 of 65,535 bytes, then SETTINGS lower the initial
    // size to 16,384: the window is -43,151 until updates come.
    h2::window w;
    ASSERT_EQ(w.consume(60000), error_code::no_error);
    EXPECT_EQ(w.adjust(16384 - 65535), error_code::no_error);
    EXPECT_EQ(w.size(), 16384 - 60000);
    EXPECT_EQ(w.consume(1), error_code::flow_control_error);
    EXPECT_EQ(w.increase(50000), error_code::no_error);
    EXPECT_EQ(w.size(), 16384 - 60000 + 50000);
    // And a larger one past 2^31-1 is a connection error.
    h2::window full(h2::window::initial);
    EXPECT_EQ(full.adjust(std::int64_t{h2::max_window} - 65535 + 1),
              error_code::flow_control_error);
    EXPECT_EQ(full.adjust(std::int64_t{h2::max_window} - 65535), error_code::no_error);
}

TEST(WindowTest, ReplenishWhenHalfIsUsed) {
    h2::window w;
    EXPECT_EQ(w.replenish(65535), 0U);
    ASSERT_EQ(w.consume(30000), error_code::no_error);
    EXPECT_EQ(w.replenish(65535), 0U);
    ASSERT_EQ(w.consume(10000), error_code::no_error);
    const auto increment = w.replenish(65535);
    EXPECT_EQ(increment, 40000U);
    EXPECT_EQ(w.increase(increment), error_code::no_error);
    EXPECT_EQ(w.size(), 65535);
}

TEST(WindowTest, SettingsWrittenAreOnlyTheChangedOnes) {
    h2::settings ours;
    ours.max_concurrent_streams = 100;
    ours.initial_window_size = 1 << 20;
    ours.enable_push = 0;
    std::string out;
    h2::write_settings(out, ours);
    ASSERT_EQ(out.size(), 9U + 3 * 6);
    h2::settings peer_view;
    EXPECT_EQ(h2::apply_settings(peer_view, h2::as_bytes(out).subspan(9)), error_code::no_error);
    EXPECT_EQ(peer_view, ours);

    // Later: the table given back while idle, only that setting sent.
    h2::settings idle = ours;
    idle.header_table_size = 0;
    out.clear();
    h2::write_settings(out, idle, ours);
    ASSERT_EQ(out.size(), 9U + 6);
    EXPECT_EQ(h2::apply_settings(peer_view, h2::as_bytes(out).subspan(9)), error_code::no_error);
    EXPECT_EQ(peer_view, idle);

    out.clear();
    h2::write_settings(out, h2::settings{});
    EXPECT_EQ(out.size(), 9U); // the empty SETTINGS of a preface
}

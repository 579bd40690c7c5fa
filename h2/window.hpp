#pragma once

// A flow-control window (RFC 9113, 6.9): one for the connection and one per stream, on each side.
// 31 bits: a window may go negative (a smaller SETTINGS_INITIAL_WINDOW_SIZE applies to open
// streams at once, 6.9.2) but never above 2^31-1, and every way past that is the RFC's
// FLOW_CONTROL_ERROR: the caller knows whether it is the stream's (RST_STREAM) or the
// connection's (GOAWAY) window.

#include "frame_types.hpp"

#include <cstdint>

namespace tarry::h2 {

class window {
public:
    /// 65,535: every window's size until SETTINGS say otherwise (6.9.2).
    static constexpr std::int32_t initial = 65535;

    constexpr explicit window(std::int32_t size = initial) noexcept : size_(size) {}

    /// May be negative: nothing may be sent until updates bring it above zero.
    [[nodiscard]] constexpr std::int32_t size() const noexcept { return size_; }

    /// Takes `n` bytes of DATA (the whole payload, padding included): FLOW_CONTROL_ERROR if the
    /// window does not hold them (a receiver's check of its peer), no_error otherwise.
    [[nodiscard]] constexpr error_code consume(std::uint32_t n) noexcept {
        if (size_ < 0 || n > static_cast<std::uint32_t>(size_))
            return error_code::flow_control_error;
        size_ -= static_cast<std::int32_t>(n);
        return error_code::no_error;
    }

    /// A WINDOW_UPDATE's increment (1 to 2^31-1; 0 the frame reader refuses): FLOW_CONTROL_ERROR
    /// if the window would pass 2^31-1 (6.9.1), and then it is left as it was.
    [[nodiscard]] constexpr error_code increase(std::uint32_t increment) noexcept {
        return adjust(static_cast<std::int64_t>(increment));
    }

    /// A change of SETTINGS_INITIAL_WINDOW_SIZE (new - old) applied to an open stream's window:
    /// FLOW_CONTROL_ERROR past 2^31-1, a connection error then (6.9.2).
    [[nodiscard]] constexpr error_code adjust(std::int64_t delta) noexcept {
        const std::int64_t next = std::int64_t{size_} + delta;
        if (next > std::int64_t{max_window}) return error_code::flow_control_error;
        // A settings change can lower a window at most by 2^31-1 from a non-negative size.
        if (next < -std::int64_t{max_window}) return error_code::flow_control_error;
        size_ = static_cast<std::int32_t>(next);
        return error_code::no_error;
    }

    /// For a receiver: the increment to send in a WINDOW_UPDATE to bring the window back to
    /// `target` once it fell to half of it or below (fewer, larger updates), else 0. The caller
    /// sends it and calls increase() with it.
    [[nodiscard]] constexpr std::uint32_t replenish(std::int32_t target) const noexcept {
        if (size_ > target / 2) return 0;
        return static_cast<std::uint32_t>(std::int64_t{target} - size_);
    }

private:
    std::int32_t size_;
};

} // namespace tarry::h2

#pragma once

/// @file
/// @brief timeout_kind, what a timeout list holds; owner_tag, which type embeds an entry.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

namespace tarry::timeouts {

namespace detail {
/// A broken kind rule (an entry taken for another type, or enrolled in another owner's kind):
/// prints `what` and aborts, rather than let a cast read a foreign object.
[[noreturn]] void refuse(const char* what) noexcept;
} // namespace detail

/// @brief The identity of a type whose objects embed idle entries: `&owner_tag<T>`.
///
/// An entry made with a typed context (`idle_entry(callback, T*)`) remembers `&owner_tag<T>`, so
/// code that walks a list and turns an entry back into its object (idle_entry::owner<T>()) can
/// check the type first instead of trusting a cast.
template <class Owner> inline constexpr char owner_tag = 0;

/// @brief What a timeout list holds: one kind of timed thing, such as a client connection idle
/// between requests, an upstream connection waiting in a pool, or a TLS handshake.
///
/// A registry keeps one list per (kind, duration), so two kinds that happen to share a duration
/// never share a list, and a walk of a list sees one kind only. A kind may name the type of
/// object whose entries it holds (its owner): enrolling an entry of another type into it fails
/// the kind check, so every entry a walk finds can be turned back into that owner safely.
///
/// Declare each kind once, as a namespace-scope constant beside the code that owns those
/// things; adding a kind is one line:
/// @code
/// inline const timeouts::timeout_kind keep_alive_kind{"keep_alive", timeouts::owner_tag<conn>};
/// @endcode
/// Each kind takes the next small id at construction (at most timeout_kind::max in a program),
/// which indexes the registry's per-kind lanes: finding a kind's lists costs an array index, not
/// a hash. Kinds are never copied; lists and registries refer to them by address.
class timeout_kind {
public:
    /// How many kinds a program may declare (the default one included).
    static constexpr std::size_t max = 32;

    /// A new kind named `name` (for metrics: a Prometheus label value), whose entries must be
    /// embedded in objects of the type `owner` is the tag of (`owner_tag<T>`), or of any type
    /// if `owner` is null. Throws std::length_error past timeout_kind::max kinds.
    explicit timeout_kind(std::string_view name, const char& owner) : timeout_kind(name, &owner) {}
    /// A kind of untyped entries (any owner; walks cannot check a cast).
    explicit timeout_kind(std::string_view name) : timeout_kind(name, nullptr) {}
    timeout_kind(const timeout_kind&) = delete;
    timeout_kind& operator=(const timeout_kind&) = delete;

    /// Its index among the program's kinds, below max.
    [[nodiscard]] std::uint8_t id() const noexcept { return id_; }
    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    /// The tag of the type its entries are embedded in, or null for any.
    [[nodiscard]] const void* owner() const noexcept { return owner_; }
    /// Whether an entry embedded in an object tagged `owner` may enroll in this kind.
    [[nodiscard]] bool admits(const void* owner) const noexcept {
        return owner_ == nullptr || owner_ == owner;
    }

    /// The kind of timeout_registry::enroll(entry, duration): for programs with one kind of
    /// timed thing, which need not declare any.
    static const timeout_kind& untyped() noexcept;

private:
    timeout_kind(std::string_view name, const void* owner)
        : id_(next_id()), name_(name), owner_(owner) {}
    static std::uint8_t next_id() {
        static std::atomic<unsigned> next{0};
        const unsigned id = next.fetch_add(1, std::memory_order_relaxed);
        if (id >= max) throw std::length_error("tarry::timeouts: more than 32 timeout kinds");
        return static_cast<std::uint8_t>(id);
    }

    std::uint8_t id_;
    std::string_view name_;
    const void* owner_;
};

} // namespace tarry::timeouts

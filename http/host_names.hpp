#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tarry::http {

/// The name a Host field (or an HTTP/2 :authority) gives, as sites are matched by it: the port
/// and a trailing dot taken off ("Example.COM.:8080" gives "Example.COM"); an IPv6 literal keeps
/// its brackets. Case is left alone: name_table compares without it.
[[nodiscard]] std::string_view host_name(std::string_view host) noexcept;

/// Server names, each with a number (a site's index): exact names ("example.com") and wildcards
/// ("*.example.com", one label more, as a certificate's wildcard and [[tls]] match), compared
/// without case. An exact name wins over a wildcard.
///
/// A lookup is one or two hash probes on a lower-cased copy in a stack buffer: no allocation
/// per request, and the cost does not grow with the number of sites.
class name_table {
public:
    /// Adds `name` (exact, or "*." and a suffix) for `value`. A name given twice keeps the first.
    void add(std::string_view name, std::size_t value);
    /// The value of the name `host` matches (host_name() applied first), or none.
    [[nodiscard]] std::optional<std::size_t> find(std::string_view host) const noexcept;
    [[nodiscard]] bool empty() const noexcept { return names_.empty(); }

    /// Whether `name` is a valid server name for a site or certificate ("*." first at most).
    [[nodiscard]] static bool valid(std::string_view name) noexcept;

private:
    struct hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    /// Lower case; wildcards kept as "*.suffix".
    std::unordered_map<std::string, std::size_t, hash, std::equal_to<>> names_;
    bool wildcards_ = false;
};

} // namespace tarry::http

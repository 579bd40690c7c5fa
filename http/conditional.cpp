#include "conditional.hpp"

#include "field_writer.hpp"
#include "ows.hpp"

#include "request_parser.hpp"

#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <boost/beast/core/string.hpp>

#include <array>
#include <charconv>
#include <ctime>

namespace tarry::http {
namespace {

constexpr std::array<std::string_view, 7> day_names{"Sun", "Mon", "Tue", "Wed",
                                                    "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 12> month_names{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

/// A small cursor over a date string.
struct scanner {
    std::string_view s;
    bool ok = true;

    bool lit(std::string_view l) noexcept {
        if (!ok || s.substr(0, l.size()) != l) return ok = false;
        s.remove_prefix(l.size());
        return true;
    }
    unsigned digits(std::size_t n) noexcept {
        unsigned v = 0;
        if (!ok || s.size() < n) {
            ok = false;
            return 0;
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (s[i] < '0' || s[i] > '9') {
                ok = false;
                return 0;
            }
            v = v * 10 + static_cast<unsigned>(s[i] - '0');
        }
        s.remove_prefix(n);
        return v;
    }
    unsigned month() noexcept {
        for (unsigned i = 0; i < month_names.size(); ++i)
            if (ok && s.substr(0, 3) == month_names[i]) {
                s.remove_prefix(3);
                return i + 1;
            }
        ok = false;
        return 0;
    }
    /// A day name: the short one, or (RFC 850) the long one.
    bool day(bool long_form) noexcept {
        static constexpr std::array<std::string_view, 7> long_names{
            "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
        const auto& names = long_form ? long_names : day_names;
        for (const auto n : names)
            if (ok && s.substr(0, n.size()) == n) {
                s.remove_prefix(n.size());
                return true;
            }
        return ok = false;
    }
    void time(unsigned& h, unsigned& m, unsigned& sec) noexcept {
        h = digits(2);
        lit(":");
        m = digits(2);
        lit(":");
        sec = digits(2);
    }
};

std::optional<std::int64_t> to_epoch(std::int64_t y, unsigned mon, unsigned d, unsigned h,
                                     unsigned m, unsigned s) noexcept {
    // Seconds up to 60 admit a leap second, read as the next second's start.
    if (mon < 1 || mon > 12 || d < 1 || d > 31 || h > 23 || m > 59 || s > 60) return std::nullopt;
    return days_from_civil(y, mon, d) * 86400 + std::int64_t{h} * 3600 + std::int64_t{m} * 60 + s;
}

/// The opaque part of an entity tag (quotes included) and whether it is weak; false if `tag` is
/// not one.
bool split_etag(std::string_view tag, std::string_view& opaque, bool& weak) noexcept {
    weak = tag.size() >= 2 && tag[0] == 'W' && tag[1] == '/';
    if (weak) tag.remove_prefix(2);
    if (tag.size() < 2 || tag.front() != '"' || tag.back() != '"') return false;
    if (tag.substr(1, tag.size() - 2).find('"') != std::string_view::npos) return false;
    opaque = tag;
    return true;
}

void keep(std::optional<std::string>& list, std::string_view value) {
    if (!list) {
        list.emplace(value);
        return;
    }
    list->append(", ");
    list->append(value);
}

} // namespace

void append_http_date(std::string& out, std::int64_t t) {
    const auto tt = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    const auto two = [&](int v) {
        out.push_back(static_cast<char>('0' + v / 10));
        out.push_back(static_cast<char>('0' + v % 10));
    };
    out.append(day_names[static_cast<std::size_t>(tm.tm_wday)]);
    out.append(", ");
    two(tm.tm_mday);
    out.push_back(' ');
    out.append(month_names[static_cast<std::size_t>(tm.tm_mon)]);
    out.push_back(' ');
    char year[8];
    const auto r = std::to_chars(year, year + sizeof year, tm.tm_year + 1900);
    out.append(year, r.ptr);
    out.push_back(' ');
    two(tm.tm_hour);
    out.push_back(':');
    two(tm.tm_min);
    out.push_back(':');
    two(tm.tm_sec);
    out.append(" GMT");
}

std::optional<std::int64_t> parse_http_date(std::string_view s) noexcept {
    unsigned d = 0;
    unsigned mon = 0;
    unsigned h = 0;
    unsigned m = 0;
    unsigned sec = 0;
    const auto comma = s.find(',');
    if (comma == 3) { // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        scanner p{s};
        p.day(false);
        p.lit(", ");
        d = p.digits(2);
        p.lit(" ");
        mon = p.month();
        p.lit(" ");
        const unsigned y = p.digits(4);
        p.lit(" ");
        p.time(h, m, sec);
        p.lit(" GMT");
        if (!p.ok || !p.s.empty()) return std::nullopt;
        return to_epoch(y, mon, d, h, m, sec);
    }
    if (comma != std::string_view::npos) { // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        scanner p{s};
        p.day(true);
        p.lit(", ");
        d = p.digits(2);
        p.lit("-");
        mon = p.month();
        p.lit("-");
        const unsigned yy = p.digits(2);
        p.lit(" ");
        p.time(h, m, sec);
        p.lit(" GMT");
        if (!p.ok || !p.s.empty()) return std::nullopt;
        // Two-digit years (RFC 9110 §5.6.7): read as the century in which they are closest to
        // now; a fixed pivot at 70 does the same for every date this server can meet.
        return to_epoch(yy < 70 ? 2000 + yy : 1900 + yy, mon, d, h, m, sec);
    }
    // asctime: Sun Nov  6 08:49:37 1994
    scanner p{s};
    p.day(false);
    p.lit(" ");
    mon = p.month();
    p.lit(" ");
    if (p.ok && !p.s.empty() && p.s.front() == ' ') {
        p.s.remove_prefix(1);
        d = p.digits(1);
    } else {
        d = p.digits(2);
    }
    p.lit(" ");
    p.time(h, m, sec);
    p.lit(" ");
    const unsigned y = p.digits(4);
    if (!p.ok || !p.s.empty()) return std::nullopt;
    return to_epoch(y, mon, d, h, m, sec);
}

std::string make_etag(std::int64_t mtime, std::uint64_t size, std::uint64_t inode) {
    std::string tag;
    tag.reserve(52);
    const auto hex = [&](std::uint64_t v) { append_number(tag, v, 16); };
    tag.push_back('"');
    hex(static_cast<std::uint64_t>(mtime));
    tag.push_back('-');
    hex(size);
    tag.push_back('-');
    hex(inode);
    tag.push_back('"');
    return tag;
}

bool etag_list_matches(std::string_view list, std::string_view etag, bool weak) noexcept {
    std::string_view ours;
    bool ours_weak = false;
    if (!split_etag(etag, ours, ours_weak)) return false;
    if (trim_ows(list) == "*") return true;
    if (ours_weak && !weak) return false;
    while (!list.empty()) {
        // Entity tags cannot hold commas outside quotes, and ours never hold any inside.
        auto comma = list.find(',');
        const std::string_view item = trim_ows(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        std::string_view theirs;
        bool theirs_weak = false;
        if (!split_etag(item, theirs, theirs_weak)) continue;
        if (theirs_weak && !weak) continue;
        if (theirs == ours) return true;
    }
    return false;
}

request_conditions request_conditions::from_header(std::string_view header) {
    request_conditions c;
    for_each_field(header, [&](std::string_view name, std::string_view value) {
        using boost::beast::iequals;
        if (name.size() < 5) return;
        const char first = static_cast<char>(name[0] | 0x20);
        if (first == 'i') {
            if (iequals(name, "If-None-Match")) {
                keep(c.if_none_match, value);
            } else if (iequals(name, "If-Match")) {
                keep(c.if_match, value);
            } else if (iequals(name, "If-Modified-Since")) {
                if (c.if_modified_since.empty()) c.if_modified_since = value;
            } else if (iequals(name, "If-Unmodified-Since")) {
                if (c.if_unmodified_since.empty()) c.if_unmodified_since = value;
            } else if (iequals(name, "If-Range")) {
                if (c.if_range.empty()) c.if_range = value;
            }
        } else if (first == 'r' && iequals(name, "Range")) {
            // Two Range fields make no single range: treat as malformed, so ignored.
            c.range = c.range.empty() ? value : std::string_view{"invalid"};
        } else if (first == 'a' && iequals(name, "Accept-Encoding")) {
            if (c.accept_encoding.empty()) c.accept_encoding = value;
        }
    });
    return c;
}

precondition_result evaluate_preconditions(const request_conditions& c, bool get_or_head,
                                           std::string_view etag,
                                           std::int64_t last_modified) noexcept {
    if (c.if_match) {
        if (!etag_list_matches(*c.if_match, etag, false)) return precondition_result::failed;
    } else if (!c.if_unmodified_since.empty()) {
        if (const auto t = parse_http_date(c.if_unmodified_since); t && last_modified > *t)
            return precondition_result::failed;
    }
    if (c.if_none_match) {
        if (etag_list_matches(*c.if_none_match, etag, true))
            return get_or_head ? precondition_result::not_modified : precondition_result::failed;
    } else if (get_or_head && !c.if_modified_since.empty()) {
        if (const auto t = parse_http_date(c.if_modified_since); t && last_modified <= *t)
            return precondition_result::not_modified;
    }
    return precondition_result::proceed;
}

bool if_range_allows(std::string_view if_range, std::string_view etag,
                     std::int64_t last_modified) noexcept {
    if (if_range.empty()) return true;
    if (if_range.front() == '"' || if_range.substr(0, 2) == "W/") {
        std::string_view theirs;
        std::string_view ours;
        bool theirs_weak = false;
        bool ours_weak = false;
        return split_etag(if_range, theirs, theirs_weak) && !theirs_weak &&
               split_etag(etag, ours, ours_weak) && !ours_weak && theirs == ours;
    }
    const auto t = parse_http_date(if_range);
    return t && *t == last_modified;
}

} // namespace tarry::http

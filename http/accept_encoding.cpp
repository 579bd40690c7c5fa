#include "accept_encoding.hpp"

#include "ows.hpp"

#include <ostream> // boost/core/detail/string_view.hpp (1.81) needs it complete

#include <boost/beast/core/string.hpp>

#include <algorithm>

namespace tarry::http {
namespace {

/// A qvalue ("1", "1.000", "0.5", "0") as thousandths; 1001 when malformed (the item is ignored).
unsigned qvalue(std::string_view q) noexcept {
    if (q.empty() || (q[0] != '0' && q[0] != '1')) return 1001;
    unsigned v = static_cast<unsigned>(q[0] - '0') * 1000;
    if (q.size() == 1) return v;
    if (q[1] != '.' || q.size() > 5) return 1001;
    unsigned scale = 100;
    for (std::size_t i = 2; i < q.size(); ++i, scale /= 10) {
        if (q[i] < '0' || q[i] > '9') return 1001;
        v += static_cast<unsigned>(q[i] - '0') * scale;
    }
    return v > 1000 ? 1001 : v;
}

} // namespace

accepted_codings parse_accept_encoding(std::string_view value) noexcept {
    using boost::beast::iequals;
    accepted_codings a;
    int br = -1;   // -1: not named
    int gzip = -1; // likewise
    int any = -1;  // the `*` item
    while (!value.empty()) {
        const auto comma = value.find(',');
        std::string_view item = value.substr(0, comma);
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
        unsigned q = 1000;
        if (const auto semi = item.find(';'); semi != std::string_view::npos) {
            const std::string_view param = trim_ows(item.substr(semi + 1));
            item = item.substr(0, semi);
            if (param.size() < 2 || (param[0] | 0x20) != 'q' || param[1] != '=') continue;
            q = qvalue(trim_ows(param.substr(2)));
            if (q > 1000) continue;
        }
        item = trim_ows(item);
        const auto qi = static_cast<int>(q);
        if (iequals(item, "br")) {
            br = qi;
        } else if (iequals(item, "gzip") || iequals(item, "x-gzip")) {
            gzip = std::max(gzip, qi);
        } else if (item == "*") {
            any = qi;
        }
    }
    a.br = static_cast<unsigned>(std::max(0, br >= 0 ? br : any));
    a.gzip = static_cast<unsigned>(std::max(0, gzip >= 0 ? gzip : any));
    return a;
}

coding choose_coding(const accepted_codings& a, bool have_br, bool have_gzip) noexcept {
    const unsigned br = have_br ? a.br : 0;
    const unsigned gzip = have_gzip ? a.gzip : 0;
    if (br == 0 && gzip == 0) return coding::identity;
    return br >= gzip ? coding::br : coding::gzip;
}

} // namespace tarry::http

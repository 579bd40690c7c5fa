#include "man_page.hpp"

#include "config.hpp"
#include "exit_status.hpp"

#include <span>
#include <string>

namespace tarry::server {
namespace {

// Text as roff shows it: a backslash is \e, a hyphen-minus is \- (so that flags survive
// copy-and-paste and searching), and a line may not start with a control character.
std::string roff(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-') {
            out += "\\-";
        } else {
            out += c;
        }
    }
    if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
    return out;
}

std::string plain_default(std::string_view toml_text) {
    std::string out;
    for (const char c : toml_text) {
        if (c != '"' && c != '[' && c != ']') out += c;
    }
    return out;
}

template <typename Target>
void describe_keys(std::string& out, std::span<const basic_setting<Target>> rows) {
    for (const auto& row : rows) {
        if (row.key.empty()) continue;
        out += ".TP\n\\fB" + roff(row.key) + "\\fR = \\fI" + roff(row.type) + "\\fR";
        if (!row.default_text.empty()) out += " (default \\fB" + roff(row.default_text) + "\\fR)";
        out += "\n" + roff(row.help);
        if (!row.flag.empty()) out += " Flag: \\fB" + roff(row.flag) + "\\fR.";
        out += "\n";
    }
}

} // namespace

std::string man_page(std::string_view version) {
    std::string out;
    out += ".TH TARRY 8 \"\" \"tarry " + roff(version) + "\" \"System Manager's Manual\"\n";
    out += ".SH NAME\ntarry \\- HTTP/1.1 keep\\-alive server with cheap idle timeouts\n";
    out += ".SH SYNOPSIS\n.B tarry\n[\\fIOPTION\\fR]...\n";
    out += ".SH DESCRIPTION\n"
           "\\fBtarry\\fR accepts HTTP/1.1 connections and keeps them alive between requests. It "
           "answers each request from the route with the longest matching path prefix: files "
           "from a directory, a proxy to an upstream pool, or \\(lqHello, World!\\(rq. Every "
           "phase of a connection is guarded by a timeout kept in one list per duration, so an "
           "idle connection costs a few hundred bytes and no timer.\n"
           ".PP\n"
           "Settings come from built\\-in defaults, then the file given with \\fB\\-\\-config\\fR, "
           "then the flags: a flag always wins over the file.\n";

    out += ".SH OPTIONS\n";
    for (const setting& s : settings()) {
        if (s.flag.empty()) continue;
        out += ".TP\n\\fB" + roff(s.flag) + "\\fR";
        const bool takes_value = !s.type.empty() && s.type != "BOOL";
        if (takes_value) out += " \\fI" + roff(s.type) + "\\fR";
        out += "\n" + roff(s.help);
        if (!s.key.empty()) out += " Key: \\fB" + roff(s.key) + "\\fR.";
        if (takes_value && !s.default_text.empty()) {
            out += " Default: " + roff(plain_default(s.default_text)) + ".";
        }
        if (s.repeatable) out += " May be given more than once.";
        out += "\n";
    }

    out += ".SH CONFIGURATION FILE\n"
           "The file is TOML. An unknown key, a wrong type or a bad value stops tarry with one "
           "line naming the file, the line and the key. Durations are strings with a unit "
           "(\\(lq1500us\\(rq, \\(lq250ms\\(rq, \\(lq65s\\(rq, \\(lq2m\\(rq, \\(lq1h\\(rq, "
           "\\(lq1.5s\\(rq); a timeout is at most \\(lq24h\\(rq. Sizes are a number of bytes or "
           "a string with a 1024\\-based unit (\\(lq16k\\(rq, \\(lq1MiB\\(rq).\n";
    describe_keys(out, settings());
    out += ".SS ROUTES\n"
           "Each \\fB[[route]]\\fR table sends the requests whose path starts with its prefix to "
           "exactly one of \\fBupstream\\fR, \\fBdocroot\\fR, \\fBrespond\\fR or \\fBredirect\\fR. "
           "The top\\-level "
           "\\fBdocroot\\fR is shorthand for a route \\(lq/\\(rq; without either, \\(lq/\\(rq "
           "answers Hello, World!\n";
    describe_keys(out, route_settings());
    out += ".SS UPSTREAMS\n"
           "Each \\fB[upstream.\\fINAME\\fB]\\fR table (NAME is letters, digits, _ and \\-) is a "
           "pool of servers that routes name.\n";
    describe_keys(out, upstream_settings());
    out += ".SS TLS\n"
           "Each \\fB[[tls]]\\fR table is a certificate for the server names it lists, chosen by "
           "the name a client sends (SNI); a client that sends none, or one no table lists, gets "
           "\\fBtls_certificate\\fR (or the first table's).\n";
    describe_keys(out, tls_settings());
    out += ".SS SITES\n"
           "Each \\fB[[site]]\\fR table answers the requests whose Host (HTTP/2's :authority) is "
           "one of its server names, with its \\fB[[site.route]]\\fR tables (the keys of "
           "\\fB[[route]]\\fR); a Host no site names goes to the default site, or gets "
           "\\fBunknown_host\\fR.\n";
    describe_keys(out, site_settings());

    out += ".SH SIGNALS\n"
           ".TP\n.BR SIGTERM \", \" SIGINT\n"
           "Stop gracefully: listeners close, idle connections close (spread over "
           "\\fBclose_spread_time\\fR, none sooner than \\fBkeep_alive_min_timeout\\fR after its "
           "last response), in\\-flight requests finish with \\fBConnection: close\\fR within "
           "\\fBdrain_timeout\\fR, then tarry exits 0. A second signal stops at once.\n"
           ".TP\n.B SIGHUP\n"
           "Reload: read the file again and apply the flags over it again. An invalid file is "
           "reported in one log line and the running settings stay.\n";
    out += ".SH EXIT STATUS\n";
    for (const exit_status_meaning& m : exit_status_meanings)
        out += ".TP\n.B " + std::to_string(code(m.status)) + "\n" + roff(m.text) + "\n";
    out += ".SH FILES\n.TP\n.I /etc/tarry/tarry.toml\n"
           "The configuration file the systemd unit passes with \\fB\\-\\-config\\fR.\n";
    out += ".SH SEE ALSO\n.BR systemctl (1),\n.BR systemd.service (5),\n.BR signal (7)\n";
    return out;
}

} // namespace tarry::server

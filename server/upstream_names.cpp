#include "upstream_names.hpp"

#include <algorithm>
#include <stdexcept>

namespace tarry::server {

resolve::dns_resolver::options resolver_options(const config& cfg) {
    resolve::dns_resolver::options o;
    o.servers = cfg.resolver;
    return o;
}

resolve::refresh_bounds refresh_bounds_of(const config& cfg) {
    return {cfg.resolve_interval_min, cfg.resolve_interval_max};
}

namespace {

/// "upstream.app.servers", for the message about `host`.
std::string key_naming(const config& cfg, const std::string& host) {
    for (const upstream_config& u : cfg.upstreams)
        for (const upstream_server& s : u.servers)
            if (s.host == host) return "upstream." + u.name + ".servers";
    return "upstream";
}

std::string servers_text(const config& cfg) {
    if (cfg.resolver.empty()) return "the system's DNS servers";
    std::string out = "resolver ";
    for (const std::string& s : cfg.resolver)
        out += (&s == &cfg.resolver.front() ? "" : ", ") + s;
    return out;
}

} // namespace

resolved_names resolve_upstream_names(const config& cfg, const upstream::name_table* last_good) {
    resolved_names out;
    const std::vector<std::string> hosts = upstream_dns_names(cfg);
    if (hosts.empty()) return out;
    std::map<std::string, resolve::answer> answers;
    try {
        answers = resolve::resolve_now(resolver_options(cfg), hosts);
    } catch (const std::exception& e) {
        throw config_error(std::string("resolver: ") + e.what());
    }
    for (const std::string& host : hosts) { // in the configuration's order: the first is named
        resolve::answer& a = answers[host];
        if (!a.ok()) {
            const auto last = last_good ? last_good->get(host) : std::nullopt;
            if (!last || last->empty())
                throw config_error(key_naming(cfg, host) + ": cannot resolve \"" + host +
                                   "\": " + (a.error.empty() ? "no address" : a.error) + " (" +
                                   servers_text(cfg) + ")");
            a.addresses = *last;
            a.ttl = std::chrono::seconds(0);
            if (a.error.empty()) a.error = "no address";
            out.kept.push_back(host);
        }
        out.answers.emplace(host, std::move(a));
    }
    return out;
}

} // namespace tarry::server

#include "tls_setup.hpp"

#include <algorithm>

namespace tarry::server {

bool wants_tls(const config& cfg) {
    return std::any_of(cfg.listen.begin(), cfg.listen.end(),
                       [](const listen_address& a) { return a.tls; });
}

std::shared_ptr<const tls::context> make_tls_context(const config& cfg,
                                                     std::shared_ptr<tls::ticket_keys> keys) {
    if (!wants_tls(cfg)) return nullptr;
    tls::context_settings s;
    s.http2 = cfg.http2;
    if (cfg.tls_certificate && cfg.tls_certificate_key)
        s.certificates.push_back({{},
                                  *cfg.tls_certificate,
                                  *cfg.tls_certificate_key,
                                  "tls_certificate",
                                  "tls_certificate_key"});
    for (std::size_t i = 0; i < cfg.tls.size(); ++i) {
        const tls_config& t = cfg.tls[i];
        const std::string table = "tls[" + std::to_string(i + 1) + "]";
        s.certificates.push_back({t.server_names, t.certificate, t.certificate_key,
                                  table + ".certificate", table + ".certificate_key"});
    }
    try {
        return std::make_shared<const tls::context>(s, std::move(keys));
    } catch (const tls::error& e) {
        throw config_error(e.what());
    }
}

} // namespace tarry::server

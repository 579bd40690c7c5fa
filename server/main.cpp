#include "build_info.hpp"
#include "config.hpp"
#include "exit_status.hpp"
#include "man_page.hpp"
#include "preflight.hpp"
#include "server.hpp"
#include "upstream_names.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    using namespace tarry::server;

    command_line cl;
    try {
        cl = parse_command_line(argc, argv);
    } catch (const config_error& e) {
        std::fprintf(stderr, "tarry: %s\n", e.what());
        return code(exit_status::config);
    }
    switch (cl.what) {
    case command_line::action::help:
        std::fputs(cl.help_text.c_str(), stdout);
        return code(exit_status::ok);
    case command_line::action::version:
        std::fputs(version_text().c_str(), stdout);
        return code(exit_status::ok);
    case command_line::action::man:
        std::fputs(man_page(TARRY_VERSION).c_str(), stdout);
        return code(exit_status::ok);
    case command_line::action::check_config:
        try {
            for (const std::string& w : preflight(cl.cfg))
                std::fprintf(stderr, "tarry: warning: %s\n", w.c_str());
            (void)resolve_upstream_names(cl.cfg); // each name once, as a start would
        } catch (const config_error& e) {
            std::fprintf(stderr, "tarry: %s\n", e.what());
            return code(exit_status::config);
        }
        std::puts("tarry: configuration OK");
        return code(exit_status::ok);
    case command_line::action::run:
        break;
    }

    spdlog::set_level(spdlog::level::from_str(cl.cfg.log_level));
    try {
        server s(cl.cfg, std::vector<std::string>(argv, argv + argc));
        s.run();
    } catch (const config_error& e) {
        std::fprintf(stderr, "tarry: %s\n", e.what());
        return code(exit_status::config);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tarry: %s\n", e.what());
        return code(exit_status::failure);
    }
    return code(exit_status::ok);
}

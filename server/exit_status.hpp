#pragma once

// tarry's exit statuses: main returns them, and the manual's EXIT STATUS section is generated
// from this table, so that the page says what the binary does.

#include <array>
#include <string_view>

namespace tarry::server {

enum class exit_status : int {
    ok = 0,
    failure = 1, ///< something the configuration does not explain
    config = 2,  ///< the configuration, or what a start refuses
};

constexpr int code(exit_status s) {
    return static_cast<int>(s);
}

struct exit_status_meaning {
    exit_status status;
    std::string_view text; ///< plain text, for the manual
};

inline constexpr std::array exit_status_meanings{
    exit_status_meaning{
        exit_status::ok,
        "Stopped normally (on SIGTERM or SIGINT, after the drain or at a second signal), or "
        "--help, --version or --man printed, or --check-config found nothing to refuse."},
    exit_status_meaning{
        exit_status::failure,
        "A failure the configuration does not explain, on one line: an address that cannot be "
        "bound for another reason than being in use (a port below 1024 without the privilege), "
        "the admin_listen address in use, or any other error that stops it."},
    exit_status_meaning{
        exit_status::config,
        "A configuration error, on one line naming the flag or key (and the file and line): a "
        "bad flag, key or value, or what a start refuses: a listen address already in use by "
        "another process, a docroot that is missing or cannot be read, an access log that "
        "cannot be written, an address this machine does not have, a certificate or key that "
        "cannot be loaded. --check-config refuses the same, but for an address in use, which "
        "it does not try."},
};

} // namespace tarry::server

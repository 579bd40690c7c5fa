#pragma once

// The protocol both servers speak, without I/O: a connection must first send `LOGIN <name>`,
// then every line it sends is echoed back.

#include <string>
#include <string_view>

namespace idle_echo {

struct reply {
    std::string text;       // what to send back
    bool logged_in = false; // this line logged the connection in
    bool close = false;     // close after sending `text`
};

/// The answer to one line (without its '\n') from a connection that is `logged_in` or not.
inline reply answer(bool logged_in, std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (logged_in) return {std::string(line) + '\n', false, false};
    constexpr std::string_view login = "LOGIN ";
    if (line.size() > login.size() && line.substr(0, login.size()) == login)
        return {"HELLO " + std::string(line.substr(login.size())) + '\n', true, false};
    return {"ERROR expected LOGIN <name>\n", false, true};
}

} // namespace idle_echo

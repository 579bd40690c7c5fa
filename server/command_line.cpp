// The command line: one CLI11 option per flag of the settings table, --help from the same rows,
// and the order in which --config, the flags and the whole-configuration checks apply.

#include "config_file.hpp"
#include "config_values.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace tarry::server {

using namespace config_detail;

namespace {

bool is_switch(const setting& s) {
    return s.type.empty() || s.type == "BOOL";
}

// CLI11 records a switch given as --flag=VALUE with that value; only "true" means the switch.
bool given(const CLI::Option* flag) {
    for (const std::string& result : flag->results()) {
        if (result != "true") fail(flag->get_name(), "takes no value, got " + quote(result));
    }
    return flag->count() > 0;
}

std::vector<std::string_view> flag_names() {
    std::vector<std::string_view> names;
    for (const setting& s : settings()) {
        if (!s.flag.empty()) names.push_back(s.flag);
    }
    return names;
}

// Everything CLI11 could not match: the first unknown flag or positional argument is reported.
void reject_leftovers(const std::vector<std::string>& leftovers) {
    const std::span<const setting> rows = settings();
    bool positional_only = false;
    for (const std::string& arg : leftovers) {
        if (!positional_only && arg == "--") {
            positional_only = true;
            continue;
        }
        if (positional_only || arg.empty() || arg.front() != '-' || arg == "-") {
            throw config_error("unexpected argument " + quote(arg) +
                               " (tarry takes no positional arguments)");
        }
        const std::string name = arg.substr(0, arg.find('='));
        std::string message = name + ": unknown flag";
        const std::size_t bare = name.find_first_not_of('-');
        const std::string key = bare == std::string::npos ? "" : normalize_name(name.substr(bare));
        const bool file_only = std::any_of(rows.begin(), rows.end(), [&](const setting& s) {
            return s.key == key && s.flag.empty();
        });
        if (file_only) {
            message += " (" + key + " can only be set in the config file)";
        } else if (const auto suggestion = closest(name, flag_names())) {
            message += " (did you mean " + std::string(*suggestion) + "?)";
        }
        throw config_error(message);
    }
}

// "65s" rather than "\"65s\"", "127.0.0.1:8080" rather than "[\"127.0.0.1:8080\"]".
std::string plain(std::string_view toml_text) {
    std::string out;
    for (const char c : toml_text) {
        if (c != '"' && c != '[' && c != ']') out += c;
    }
    return out;
}

// CLI11 prints descriptions unwrapped but indents after each newline, so wrapping here keeps
// --help within 100 columns beside its 30-column flag column.
std::string wrapped(std::string_view text, std::size_t width) {
    std::string out;
    std::size_t line = 0;
    while (!text.empty()) {
        const std::size_t space = text.find(' ');
        const std::string_view word = text.substr(0, space);
        if (line > 0 && line + 1 + word.size() > width) {
            out += '\n';
            line = 0;
        } else if (line > 0) {
            out += ' ';
            ++line;
        }
        out += word;
        line += word.size();
        text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    }
    return out;
}

std::string help_footer() {
    return "Precedence: built-in defaults < --config FILE < flags; --listen replaces the file's\n"
           "listen list. Durations need a unit: 250ms, 65s, 1.5s, 2m, 1h, 1500us.\n"
           "See tarry.example.toml for every setting and its default.\n";
}

// One CLI11 option per flag of the table, in the table's order (null for rows without a flag).
// A value flag takes at most one value per occurrence: CLI11 hands a missing one on as "", which
// is reported below in our words, and it refuses a second occurrence of a flag that is not
// repeatable (MultiOptionPolicy::Throw).
std::vector<CLI::Option*> add_flags(CLI::App& app, std::span<const setting> rows) {
    std::vector<CLI::Option*> options(rows.size(), nullptr);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const setting& s = rows[i];
        if (s.flag.empty() || s.flag == "--help") continue; // CLI11 provides -h, --help
        std::string description(s.help);
        if (!s.default_text.empty() && !is_switch(s)) {
            description += " Default " + plain(s.default_text) + ".";
        }
        description = wrapped(description, 68);
        CLI::Option* option = nullptr;
        if (is_switch(s)) {
            // A non-const string as add_flag's second argument would be the flag's variable.
            option = app.add_flag(std::string(s.flag), std::as_const(description))
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        } else {
            option = app.add_option(std::string(s.flag), CLI::callback_t{}, description)
                         ->type_name(std::string(s.type))
                         ->expected(0, 1)
                         ->allow_extra_args(false)
                         ->multi_option_policy(s.repeatable ? CLI::MultiOptionPolicy::TakeAll
                                                            : CLI::MultiOptionPolicy::Throw);
        }
        if (s.hidden) option->group("");
        options[i] = option;
    }
    return options;
}

} // namespace

command_line parse_command_line(int argc, const char* const* argv) {
    CLI::App app{"tarry: an HTTP/1.1 keep-alive server.", "tarry"};
    app.allow_extras();
    app.footer(help_footer());
    const std::span<const setting> rows = settings();
    const std::vector<CLI::Option*> option_of = add_flags(app, rows);

    command_line result;
    const auto help = [&] {
        // Help never fails on a bad config file: it is what people run when things are wrong.
        result.what = command_line::action::help;
        result.help_text = app.help();
        return result;
    };
    // The flag CLI11 refused for being given more than once. It is reported at its turn among
    // the checks of each flag below, so that when several flags are wrong the first of them in
    // the table is the one reported, whichever check catches it.
    std::optional<std::size_t> given_twice;
    try {
        if (argc > 0 && argv != nullptr) app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        return help();
    } catch (const CLI::ArgumentMismatch& e) {
        // CLI11 runs each given option's callback in the order the options were added and stops
        // at the one it refuses, before it looks at --help.
        for (std::size_t i = 0; i < rows.size() && !given_twice; ++i) {
            const CLI::Option* option = option_of[i];
            if (option != nullptr && option->count() > 0 && !option->get_callback_run()) {
                given_twice = i;
            }
        }
        if (!given_twice) throw config_error(one_line(e.what()));
        if (app.get_help_ptr()->count() > 0) return help();
    } catch (const CLI::ParseError& e) {
        throw config_error(one_line(e.what()));
    }
    reject_leftovers(app.remaining());

    std::vector<bool> switched(rows.size(), false);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (option_of[i] != nullptr && is_switch(rows[i])) switched[i] = given(option_of[i]);
    }
    const auto action_given = [&](std::string_view flag) {
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (rows[i].flag == flag) return static_cast<bool>(switched[i]);
        }
        return false;
    };
    if (action_given("--version")) {
        result.what = command_line::action::version;
        return result;
    }
    if (action_given("--man")) {
        result.what = command_line::action::man;
        return result;
    }

    // The texts a value flag was given; empty when it was not given.
    const auto texts_of = [&](std::size_t i) -> const std::vector<std::string>& {
        static const std::vector<std::string> none;
        if (option_of[i] == nullptr || is_switch(rows[i])) return none;
        return option_of[i]->results();
    };
    const auto check_single = [&](std::size_t i) {
        if (given_twice == i) fail(rows[i].flag, "given more than once");
        if (texts_of(i).front().empty()) fail(rows[i].flag, "expected a value");
    };
    config& cfg = result.cfg;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].flag != "--config" || texts_of(i).empty()) continue;
        check_single(i);
        cfg = load_config_file(path_value(texts_of(i).front(), "--config", "a file path"));
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const setting& s = rows[i];
        const std::vector<std::string>& texts = texts_of(i);
        if (s.apply == nullptr || (texts.empty() && !switched[i])) continue;
        if (!texts.empty() && !s.repeatable) check_single(i);
        s.apply(cfg, setting_value(texts, std::string(s.flag)));
    }
    check_whole(cfg, nullptr);

    result.what = action_given("--check-config") ? command_line::action::check_config
                                                 : command_line::action::run;
    return result;
}

config reload_config(const config&, int argc, const char* const* argv) {
    command_line again = parse_command_line(argc, argv);
    // Help, version and the manual never read the file, so their cfg is all defaults: applying
    // it would silently undo the whole configuration of a running server.
    if (again.what == command_line::action::help || again.what == command_line::action::version) {
        throw config_error("reload: the command line asks for --help or --version, not a server");
    }
    if (again.what == command_line::action::man) {
        throw config_error("reload: the command line asks for --man, not a server");
    }
    return std::move(again.cfg);
}

} // namespace tarry::server

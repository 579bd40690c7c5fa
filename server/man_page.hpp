#pragma once

#include <string>
#include <string_view>

namespace tarry::server {

/// The tarry(8) manual page in roff (man macros), generated from the settings table so that it
/// names every flag and key there is. `version` goes in the page's footer.
std::string man_page(std::string_view version);

} // namespace tarry::server

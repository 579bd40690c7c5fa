#include "mime_types.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace tarry::http {
namespace {

using entry = std::pair<std::string_view, std::string_view>;

// Sorted by extension (lower case) for a binary search. JavaScript is text/javascript (RFC 9239;
// nginx still says application/javascript).
constexpr std::array types{
    entry{"3gp", "video/3gpp"},
    entry{"7z", "application/x-7z-compressed"},
    entry{"aac", "audio/aac"},
    entry{"apng", "image/apng"},
    entry{"atom", "application/atom+xml"},
    entry{"avi", "video/x-msvideo"},
    entry{"avif", "image/avif"},
    entry{"bin", "application/octet-stream"},
    entry{"bmp", "image/bmp"},
    entry{"css", "text/css; charset=utf-8"},
    entry{"csv", "text/csv; charset=utf-8"},
    entry{"doc", "application/msword"},
    entry{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    entry{"eot", "application/vnd.ms-fontobject"},
    entry{"epub", "application/epub+zip"},
    entry{"flac", "audio/flac"},
    entry{"gif", "image/gif"},
    entry{"gz", "application/gzip"},
    entry{"htm", "text/html; charset=utf-8"},
    entry{"html", "text/html; charset=utf-8"},
    entry{"ico", "image/x-icon"},
    entry{"ics", "text/calendar; charset=utf-8"},
    entry{"jar", "application/java-archive"},
    entry{"jpeg", "image/jpeg"},
    entry{"jpg", "image/jpeg"},
    entry{"js", "text/javascript; charset=utf-8"},
    entry{"json", "application/json"},
    entry{"jsonld", "application/ld+json"},
    entry{"jxl", "image/jxl"},
    entry{"m3u8", "application/vnd.apple.mpegurl"},
    entry{"m4a", "audio/x-m4a"},
    entry{"m4v", "video/x-m4v"},
    entry{"map", "application/json"},
    entry{"md", "text/markdown; charset=utf-8"},
    entry{"mid", "audio/midi"},
    entry{"midi", "audio/midi"},
    entry{"mjs", "text/javascript; charset=utf-8"},
    entry{"mov", "video/quicktime"},
    entry{"mp3", "audio/mpeg"},
    entry{"mp4", "video/mp4"},
    entry{"mpeg", "video/mpeg"},
    entry{"mpg", "video/mpeg"},
    entry{"oga", "audio/ogg"},
    entry{"ogg", "audio/ogg"},
    entry{"ogv", "video/ogg"},
    entry{"opus", "audio/opus"},
    entry{"otf", "font/otf"},
    entry{"pdf", "application/pdf"},
    entry{"png", "image/png"},
    entry{"ppt", "application/vnd.ms-powerpoint"},
    entry{"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    entry{"rss", "application/rss+xml"},
    entry{"rtf", "application/rtf"},
    entry{"svg", "image/svg+xml"},
    entry{"svgz", "image/svg+xml"},
    entry{"tar", "application/x-tar"},
    entry{"tif", "image/tiff"},
    entry{"tiff", "image/tiff"},
    entry{"ts", "video/mp2t"},
    entry{"ttf", "font/ttf"},
    entry{"txt", "text/plain; charset=utf-8"},
    entry{"vtt", "text/vtt; charset=utf-8"},
    entry{"wasm", "application/wasm"},
    entry{"wav", "audio/wav"},
    entry{"weba", "audio/webm"},
    entry{"webm", "video/webm"},
    entry{"webmanifest", "application/manifest+json"},
    entry{"webp", "image/webp"},
    entry{"woff", "font/woff"},
    entry{"woff2", "font/woff2"},
    entry{"xhtml", "application/xhtml+xml"},
    entry{"xls", "application/vnd.ms-excel"},
    entry{"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    entry{"xml", "application/xml"},
    entry{"yaml", "application/yaml"},
    entry{"yml", "application/yaml"},
    entry{"zip", "application/zip"},
};

constexpr bool sorted() {
    for (std::size_t i = 1; i < types.size(); ++i)
        if (!(types[i - 1].first < types[i].first)) return false;
    return true;
}
static_assert(sorted(), "mime types must stay sorted by extension");

constexpr std::size_t longest_extension = 11; // "webmanifest"

} // namespace

std::string_view mime_type(std::string_view name) noexcept {
    constexpr std::string_view fallback = "application/octet-stream";
    const auto dot = name.rfind('.');
    if (dot == std::string_view::npos) return fallback;
    const auto slash = name.rfind('/');
    if (slash != std::string_view::npos && slash > dot) return fallback;
    const std::string_view ext = name.substr(dot + 1);
    if (ext.empty() || ext.size() > longest_extension) return fallback;
    char lower[longest_extension];
    for (std::size_t i = 0; i < ext.size(); ++i) {
        const char c = ext[i];
        lower[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
    }
    const std::string_view key(lower, ext.size());
    const auto it =
        std::lower_bound(types.begin(), types.end(), key,
                         [](const entry& e, std::string_view k) { return e.first < k; });
    return it != types.end() && it->first == key ? it->second : fallback;
}

} // namespace tarry::http

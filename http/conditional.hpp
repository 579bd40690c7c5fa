#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tarry::http {

// Validators and conditional requests (RFC 9110 §8.8 and §13). A file's validators are its
// Last-Modified (the mtime, whole seconds) and a strong ETag built from its mtime, size and inode
// the way nginx builds its own: "<mtime hex>-<size hex>-<inode hex>". The inode makes a file
// replaced by rename (the usual way to deploy) change its ETag even when size and mtime match.

/// Appends `t` (seconds since the epoch) as an IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT".
void append_http_date(std::string& out, std::int64_t t);

/// Parses an HTTP-date in any of the three forms a recipient must accept (RFC 9110 §5.6.7):
/// IMF-fixdate, RFC 850 and asctime. nullopt if it is none of them.
std::optional<std::int64_t> parse_http_date(std::string_view s) noexcept;

/// The strong entity tag of a file, quotes included.
std::string make_etag(std::int64_t mtime, std::uint64_t size, std::uint64_t inode);

/// Whether `list` (an If-Match or If-None-Match value: "*" or comma-separated entity tags)
/// names `etag`. `weak`: the weak comparison (W/ prefixes ignored, If-None-Match); otherwise the
/// strong one (a weak tag never matches, If-Match).
bool etag_list_matches(std::string_view list, std::string_view etag, bool weak) noexcept;

/// The precondition fields of a request. A list field sent on several lines is kept joined.
struct request_conditions {
    std::optional<std::string> if_match;
    std::optional<std::string> if_none_match;
    std::string_view if_modified_since;
    std::string_view if_unmodified_since;
    std::string_view if_range;
    std::string_view range;
    std::string_view accept_encoding;

    /// Reads the fields above out of a validated header block.
    static request_conditions from_header(std::string_view header);
};

enum class precondition_result {
    proceed,      ///< answer as if unconditional
    not_modified, ///< 304
    failed,       ///< 412
};

/// RFC 9110 §13.2.2, in its order: If-Match, else If-Unmodified-Since (412 when false); then
/// If-None-Match (304 for GET and HEAD, else 412), else If-Modified-Since (GET and HEAD only;
/// an invalid date is ignored). `last_modified` is the representation's, in seconds.
precondition_result evaluate_preconditions(const request_conditions& c, bool get_or_head,
                                           std::string_view etag,
                                           std::int64_t last_modified) noexcept;

/// If-Range (RFC 9110 §13.1.5): whether the Range may be honoured. An entity tag must match
/// strongly; a date must equal Last-Modified exactly. An absent If-Range allows the range.
bool if_range_allows(std::string_view if_range, std::string_view etag,
                     std::int64_t last_modified) noexcept;

} // namespace tarry::http

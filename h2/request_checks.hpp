#pragma once

// The rules that make an HTTP/2 request malformed (RFC 9113, 8.2 and 8.3; RFC 8441 for the
// extended CONNECT), checked field by field as the HPACK decoder gives them: a malformed
// request is a stream error of type PROTOCOL_ERROR (8.1.1), never a connection error, so the
// decoder's table goes on in step with the peer's whatever this says.
//
// The checker keeps views of the pseudo-fields' values and of Host, which the caller keeps
// alive until finish() (the connection copies every field into its workspace first).

#include <cstdint>
#include <string_view>

namespace tarry::h2 {

class request_checks {
public:
    /// `trailers`: a trailer section (no pseudo-fields at all); `connect_protocol`: this
    /// endpoint sent SETTINGS_ENABLE_CONNECT_PROTOCOL 1, so :protocol is known (RFC 8441, 4).
    explicit request_checks(bool trailers = false, bool connect_protocol = false) noexcept
        : trailers_(trailers), connect_protocol_(connect_protocol) {}

    /// One field, in order; false once the request is malformed (and from then on).
    bool field(std::string_view name, std::string_view value) noexcept;

    /// After the last field: the pseudo-fields a request needs are there (8.3.1), :authority
    /// and Host agree. False if malformed.
    bool finish() noexcept;

    /// Whether the field is regular (not a pseudo-field), for a caller that keeps only those.
    [[nodiscard]] static bool pseudo(std::string_view name) noexcept {
        return !name.empty() && name.front() == ':';
    }

    [[nodiscard]] bool malformed() const noexcept { return malformed_; }
    std::string_view method, scheme, authority, path, protocol;
    std::string_view host; ///< the Host field, if any (the authority when :authority is absent)
    std::int64_t content_length = -1;

private:
    bool fail() noexcept {
        malformed_ = true;
        return false;
    }

    std::uint8_t seen_ = 0; ///< the pseudo-fields seen, one bit each
    bool regular_ = false;  ///< a regular field came: no pseudo-field may follow
    bool trailers_;
    bool connect_protocol_;
    bool malformed_ = false;
};

/// A connection-specific field (8.2.2): Connection, Keep-Alive, Proxy-Connection,
/// Transfer-Encoding, Upgrade, in lower case.
bool connection_specific(std::string_view name) noexcept;

/// RFC 9113 8.2.1's rule for a name: not empty, no upper case, no control bytes, space,
/// DEL or bytes past 0x7f, no colon past the first byte.
bool valid_field_name(std::string_view name) noexcept;
/// 8.2.1 for a value: no NUL, CR or LF, no space or tab at either end.
bool valid_field_value(std::string_view value) noexcept;

} // namespace tarry::h2

#pragma once

#include <string_view>

namespace tarry::server {

/// The answer to a plain HTTP connection over max_connections_per_client, the cheapest one a
/// client can still read: what it has sent already is read and dropped (so that the close
/// that follows is a FIN, not a reset that could destroy the answer), then a 503 with
/// Connection: close is written without waiting. The caller closes the descriptor. A client
/// that sends its request only after this gets the reset, as from nginx's `limit_conn` when
/// it lingers no more. `date` is the Date field's value.
void answer_over_client_limit(int fd, std::string_view date) noexcept;

} // namespace tarry::server

#pragma once
/// What an error code tells a client about retrying, the same over HTTP and WebSocket
/// (docs/protocol.md, "Errors"): one code list for both transports.

#include <cstdint>
#include <string_view>

namespace fulltime::errors {

/// The wait a `busy` answer suggests before the retry: its causes (a row lock, a full queue, no
/// free connection, too many requests in flight) clear in tens of milliseconds.
inline constexpr std::int64_t busy_retry_after_ms = 100;
/// The wait an `unavailable` or `shutting_down` answer suggests: the database or the process
/// needs longer to come back (or a load balancer to move the client elsewhere).
inline constexpr std::int64_t unavailable_retry_after_ms = 1000;

/// Returns the wait in milliseconds a client should leave before it retries a request answered
/// with `code` (sent as `retry_after_ms` on WebSocket, rounded up to whole seconds in HTTP's
/// Retry-After), or 0 when retrying the same request cannot help.
constexpr std::int64_t retry_after_ms(std::string_view code) noexcept {
    if (code == "busy") {
        return busy_retry_after_ms;
    }
    if (code == "unavailable" || code == "shutting_down" || code == "timeout") {
        return unavailable_retry_after_ms;
    }
    return 0;
}

}  // namespace fulltime::errors

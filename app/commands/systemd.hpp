#pragma once
/// Running under systemd (packaging/fulltime.service): readiness and stopping notices on
/// $NOTIFY_SOCKET (the sd_notify protocol, without libsystemd), and what the engine refuses to do
/// as a service.

#include "fulltime/config/config.hpp"

#include <string_view>

namespace fulltime::app::systemd {

/// Returns whether this process runs as a systemd unit ($INVOCATION_ID is set).
bool managed() noexcept;

/// Takes $NOTIFY_SOCKET out of the environment, keeping it for notify(): the private cluster's
/// pg_ctl and postgres would otherwise inherit it, and Debian's postgres, built with systemd
/// support, sends its own READY=1 (which NotifyAccess=main drops with a warning). Call before
/// starting any child process.
void take_notify_socket();

/// Sends `state` (e.g. "READY=1", "STOPPING=1", "STATUS=...") to the socket take_notify_socket()
/// took, or else to $NOTIFY_SOCKET; does nothing without one. Failures are logged at debug level
/// and otherwise ignored: a notice that does not arrive makes systemd time the start out, which
/// says more than a failed engine would.
void notify(std::string_view state) noexcept;

/// Throws std::invalid_argument when the engine runs as a systemd unit with a relative
/// state_dir: it would resolve against the unit's working directory (/ by default), and a
/// `fulltime token` run from a shell would then read or create another secret.
void require_absolute_state_dir(const config& cfg);

}  // namespace fulltime::app::systemd

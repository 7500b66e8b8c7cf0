#include "app/commands/exit_status.hpp"

namespace fulltime::app {

bool is_unreachable(db::errc code) noexcept {
    // A command's pool holds one connection and waits at most connect_timeout_ms for it, so a
    // pool timeout there is a connect that did not finish in time.
    return code == db::errc::connect_failed || code == db::errc::connection_lost ||
           code == db::errc::deadline_exceeded || code == db::errc::pool_timeout;
}

int exit_status_of(const db::failure& f) noexcept {
    return is_unreachable(f.code) ? exit_unreachable : exit_failed;
}

void throw_failure(const std::string& what, const db::failure& f) {
    const std::string message = what + ": " + db::describe(f);
    if (is_unreachable(f.code)) {
        throw unreachable(message);
    }
    throw std::runtime_error(message);
}

}  // namespace fulltime::app

#pragma once
/// The accept loop's pause after a failed accept (EMFILE, ENFILE): the connection stays in the
/// listen backlog meanwhile, and the loop must neither spin on a persistent error nor sleep long
/// after it has cleared.

#include <algorithm>
#include <chrono>

namespace fulltime::net::detail {

/// Holds the accept loop's pause after a failed accept: it starts short, doubles after each
/// failure in a row up to a cap, and starts short again after a success. Used by one coroutine.
class accept_backoff {
public:
    /// Pauses from `first` doubling to `last`.
    accept_backoff(std::chrono::milliseconds first, std::chrono::milliseconds last) noexcept
        : first_(first), last_(last), next_(first) {}

    /// Returns the pause after this failure, and doubles the next one (up to the cap).
    std::chrono::milliseconds failed() noexcept {
        const auto pause = next_;
        next_ = std::min(next_ * 2, last_);
        return pause;
    }

    /// Starts over after a successful accept.
    void succeeded() noexcept { next_ = first_; }

private:
    std::chrono::milliseconds first_;
    std::chrono::milliseconds last_;
    std::chrono::milliseconds next_;
};

}  // namespace fulltime::net::detail

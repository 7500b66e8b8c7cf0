#pragma once
/// When the read model's projector leaves the database to settlement (read.projector_yield_ms).
/// Pure logic with no clock of its own: the projector asks before each page, with whether a
/// settlement holds a slot and the time. docs/architecture.md, "Reads".

#include <chrono>
#include <optional>

namespace fulltime::reads {

/// Decides whether the projector leaves its next round of pages for later. While settlement
/// holds a slot it does, for at most `limit` at a time. Then it catches up in full and only
/// then may it wait again, so the read model is never further behind the outbox than `limit` and
/// one catch-up. A limit of 0 never waits.
class projector_yield {
public:
    using clock = std::chrono::steady_clock;

    explicit projector_yield(std::chrono::milliseconds limit) noexcept : limit_(limit) {}

    /// Returns whether the projector leaves its next page for later: `settling` (a
    /// settlement holds a slot) and within `limit` of the first page it left since it last
    /// caught up.
    bool yields(bool settling, clock::time_point now) noexcept {
        if (limit_.count() <= 0 || !settling) {
            return false;
        }
        if (!since_) {
            since_ = now;
        }
        return now - *since_ < limit_;
    }

    /// Notes a round that caught up with the outbox: the next wait may last `limit` again.
    void caught_up() noexcept { since_.reset(); }

private:
    std::chrono::milliseconds limit_;
    std::optional<clock::time_point> since_;  ///< the first page left since the last catch-up
};

}  // namespace fulltime::reads

#pragma once
/// Decides when an event that can repeat thousands of times a second (a refused connection, a
/// failed accept) is worth a log line: the first at once, then at most one per interval, each
/// counting the events since the line before. The metrics count every event; the log says that
/// it happens without being flooded by it.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

namespace fulltime::net::detail {

/// Counts events and says when to report them. Thread-safe.
class report_throttle {
public:
    using clock = std::chrono::steady_clock;

    /// Reports at most once per `interval`.
    explicit report_throttle(std::chrono::milliseconds interval) noexcept : interval_(interval) {}

    /// Counts one event at `now`. Returns the events to report (this one and those not reported
    /// yet) when a line is due, nullopt when the last line is younger than the interval.
    std::optional<std::uint64_t> note(clock::time_point now);

private:
    const std::chrono::milliseconds interval_;
    std::mutex mutex_;
    std::optional<clock::time_point> reported_at_;
    std::uint64_t unreported_ = 0;
};

}  // namespace fulltime::net::detail

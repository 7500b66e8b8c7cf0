#pragma once
/// The placement p99 with nothing settling: the baseline that a budget given in percent
/// (settlement.placement_p99_budget_percent) is a share of. Pure logic (no clock, no threads):
/// the settlement coordinator feeds it the placement latencies of each control period in which
/// no batch ran, and reads back their p99 over the last span of such time.

#include "fulltime/core/latency_window.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>

namespace fulltime::metrics {

/// Accumulates latencies recorded over quiet time (no settlement batch) and answers their p99
/// over the most recent `span` of it, however long ago that was: during a long settlement the
/// baseline stays what it was before, since settling time never enters it. The span is kept in
/// `chunks` slices, so the oldest slice leaves whole as a new one fills.
class latency_baseline {
public:
    /// `span`: quiet time the p99 covers (at least one microsecond); `min_count`: latencies it
    /// needs before it answers (a p99 of a handful says nothing); `chunks`: slices of the span.
    latency_baseline(std::chrono::microseconds span, std::uint64_t min_count, int chunks = 60);

    /// Adds one quiet period of `length`: the latencies recorded between two snapshots. A period
    /// with none adds nothing, its length either: the span is quiet time with placements.
    void add_quiet(const latency_window::snapshot& before, const latency_window::snapshot& after,
                   std::chrono::microseconds length);

    /// Returns the p99 over the last span of quiet time (the slices filled so far), nullopt
    /// until it holds min_count latencies.
    std::optional<std::chrono::microseconds> p99() const noexcept { return p99_; }

    /// Returns how many latencies the p99 covers.
    std::uint64_t count() const noexcept { return count_; }

private:
    struct slice {
        latency_window::snapshot counts{};
        std::chrono::microseconds length{0};
    };
    void recompute();

    std::chrono::microseconds span_;
    std::chrono::microseconds slice_length_;
    std::uint64_t min_count_;
    std::deque<slice> full_;  ///< filled slices, oldest first, their lengths summing to <= span
    slice filling_;
    std::optional<std::chrono::microseconds> p99_;
    std::uint64_t count_ = 0;
};

}  // namespace fulltime::metrics

#pragma once
/// Fine-grained latency counts for a quantile over a short, sliding window: the settlement
/// governor reads the engine's own placement p99 of the last second from the difference of two
/// snapshots. The Prometheus histograms (latency_histogram) have 20 buckets, which is right for
/// dashboards but too coarse to steer by: between 5 and 10 ms they cannot tell 6 from 9.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace fulltime::metrics {

/// Counts durations in logarithmic buckets 5 % wide, from 10 µs to about 2.5 s (longer ones
/// share the last bucket). Recording is one relaxed atomic increment, from any thread.
class latency_window {
public:
    static constexpr std::size_t bucket_count = 256;
    using snapshot = std::array<std::uint64_t, bucket_count>;

    /// Records one duration.
    void record(std::chrono::microseconds duration) noexcept;

    /// Returns the counts so far.
    snapshot read() const noexcept;

    /// Returns the upper bound of bucket `i`, in microseconds.
    static std::int64_t upper_bound_us(std::size_t i) noexcept;

    /// Returns the bucket a duration falls in.
    static std::size_t bucket_of(std::chrono::microseconds duration) noexcept;

    /// Returns quantile `q` (0 < q <= 1) of the durations recorded between two snapshots of one
    /// window (`before` taken first): the upper bound of the bucket holding it, so at most 5 %
    /// above the true value. Also returns how many durations there were. nullopt when none.
    static std::optional<std::chrono::microseconds> quantile(const snapshot& before,
                                                             const snapshot& after, double q,
                                                             std::uint64_t* count = nullptr);

private:
    std::array<std::atomic<std::uint64_t>, bucket_count> buckets_{};
};

}  // namespace fulltime::metrics

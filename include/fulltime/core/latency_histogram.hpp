#pragma once
/// A fixed-bucket latency histogram, updated lock-free from any thread and rendered as a
/// Prometheus histogram in seconds. It renders no quantile gauges: a quantile over the whole
/// process lifetime says little about now; dashboards and alerts take one over a window from
/// the buckets (histogram_quantile over rate(..._bucket[5m])).

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace fulltime::metrics {

/// Counts durations into fixed buckets from 10 us to 10 s (and one overflow bucket): fine at the
/// low end, where one stage of a placement lives.
class latency_histogram {
public:
    /// Upper bounds of the buckets, in microseconds; the last bucket is +Inf.
    static constexpr std::array<std::int64_t, 20> bounds_us = {
        10,      25,        50,        100,       250,        500,      1'000,
        2'000,   5'000,     10'000,    20'000,    50'000,     100'000,  200'000,
        500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000, INT64_MAX};

    /// Records one duration.
    void record(std::chrono::microseconds duration) noexcept;

    /// Returns how many durations were recorded.
    std::uint64_t count() const noexcept;

    /// Appends the family's HELP/TYPE header and `name`_bucket/_sum/_count, in seconds.
    void render(std::string& out, std::string_view name, std::string_view help) const;

    /// Appends the series of one member of a labelled family, without HELP/TYPE headers:
    /// `name`_bucket/_sum/_count with `labels` (a label set without braces, e.g.
    /// `stage="queue"`). The caller writes the family's header once (append_header).
    void render_series(std::string& out, std::string_view name, std::string_view labels) const;

private:
    std::array<std::atomic<std::uint64_t>, bounds_us.size()> buckets_{};
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::int64_t> sum_us_{0};
};

}  // namespace fulltime::metrics

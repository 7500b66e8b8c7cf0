#include "fulltime/core/latency_baseline.hpp"

#include <algorithm>

namespace fulltime::metrics {

latency_baseline::latency_baseline(std::chrono::microseconds span, std::uint64_t min_count,
                                   int chunks)
    : span_(std::max(std::chrono::microseconds(1), span)),
      slice_length_(std::max(std::chrono::microseconds(1), span_ / std::max(1, chunks))),
      min_count_(std::max<std::uint64_t>(1, min_count)) {}

void latency_baseline::add_quiet(const latency_window::snapshot& before,
                                 const latency_window::snapshot& after,
                                 std::chrono::microseconds length) {
    std::uint64_t added = 0;
    for (std::size_t i = 0; i < latency_window::bucket_count; ++i) {
        const auto d = after[i] >= before[i] ? after[i] - before[i] : 0;
        filling_.counts[i] += d;
        added += d;
    }
    if (added == 0) {
        // Time without placements says nothing of their latency: a quiet night does not push
        // the evening's placements out of the baseline.
        return;
    }
    filling_.length += std::max(std::chrono::microseconds(0), length);
    if (filling_.length < slice_length_) {
        return;
    }
    full_.push_back(filling_);
    filling_ = slice{};
    std::chrono::microseconds total{0};
    for (const auto& s : full_) {
        total += s.length;
    }
    while (full_.size() > 1 && total - full_.front().length >= span_) {
        total -= full_.front().length;
        full_.pop_front();
    }
    recompute();
}

void latency_baseline::recompute() {
    latency_window::snapshot sum{};
    for (const auto& s : full_) {
        for (std::size_t i = 0; i < latency_window::bucket_count; ++i) {
            sum[i] += s.counts[i];
        }
    }
    const latency_window::snapshot zero{};
    std::uint64_t n = 0;
    const auto q = latency_window::quantile(zero, sum, 0.99, &n);
    count_ = n;
    if (n >= min_count_) {
        p99_ = q;
    } else {
        p99_.reset();
    }
}

}  // namespace fulltime::metrics

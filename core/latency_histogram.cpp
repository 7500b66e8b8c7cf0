#include "fulltime/core/latency_histogram.hpp"

#include "fulltime/core/metrics.hpp"

namespace fulltime::metrics {

namespace {

// The buckets count microseconds; the exposition is in seconds.
std::string seconds_text(std::int64_t us) { return scaled_text(us, 1'000'000); }

}  // namespace

void latency_histogram::record(std::chrono::microseconds duration) noexcept {
    const std::int64_t us = duration.count() < 0 ? 0 : duration.count();
    std::size_t i = 0;
    while (i + 1 < bounds_us.size() && us > bounds_us[i]) {
        ++i;
    }
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_us_.fetch_add(us, std::memory_order_relaxed);
}

std::uint64_t latency_histogram::count() const noexcept {
    return count_.load(std::memory_order_relaxed);
}

void latency_histogram::render_series(std::string& out, std::string_view name,
                                      std::string_view labels) const {
    const std::string base(name);
    const std::string prefix = labels.empty() ? std::string() : std::string(labels) + ",";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds_us.size(); ++i) {
        cumulative += buckets_[i].load(std::memory_order_relaxed);
        const bool last = i + 1 == bounds_us.size();
        append_sample(out, base + "_bucket",
                      prefix + label("le", last ? "+Inf" : seconds_text(bounds_us[i])),
                      std::to_string(cumulative));
    }
    append_sample(out, base + "_sum", labels,
                  seconds_text(sum_us_.load(std::memory_order_relaxed)));
    append_sample(out, base + "_count", labels, std::to_string(cumulative));
}

void latency_histogram::render(std::string& out, std::string_view name,
                               std::string_view help) const {
    const std::string base(name);
    append_header(out, base, help, "histogram");
    render_series(out, base, {});
}

}  // namespace fulltime::metrics

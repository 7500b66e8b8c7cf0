#include "fulltime/core/latency_histogram.hpp"

#include "fulltime/core/metrics.hpp"

#include <cmath>
#include <cstdio>

namespace fulltime::metrics {

namespace {

std::string seconds_text(std::int64_t us) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6f", static_cast<double>(us) / 1e6);
    return buffer;
}

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

std::int64_t latency_histogram::quantile_us(double q) const noexcept {
    std::uint64_t total = 0;
    std::array<std::uint64_t, bounds_us.size()> snapshot{};
    for (std::size_t i = 0; i < bounds_us.size(); ++i) {
        snapshot[i] = buckets_[i].load(std::memory_order_relaxed);
        total += snapshot[i];
    }
    if (total == 0) {
        return 0;
    }
    const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bounds_us.size(); ++i) {
        seen += snapshot[i];
        if (seen >= rank) {
            return i + 1 < bounds_us.size() ? bounds_us[i] : bounds_us[bounds_us.size() - 2];
        }
    }
    return bounds_us[bounds_us.size() - 2];
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
    for (auto [suffix, q] : {std::pair<const char*, double>{"_p50", 0.5}, {"_p99", 0.99}}) {
        const std::string gauge_name = base + suffix;
        append_header(out, gauge_name,
                      std::string(help) + " (estimate: upper bound of the bucket holding the rank)",
                      "gauge");
        append_sample(out, gauge_name, {}, seconds_text(quantile_us(q)));
    }
}

}  // namespace fulltime::metrics

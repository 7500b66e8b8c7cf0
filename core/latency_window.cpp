#include "fulltime/core/latency_window.hpp"

#include <algorithm>
#include <cmath>

namespace fulltime::metrics {

namespace {
constexpr double first_bound_us = 10.0;
constexpr double growth = 1.05;
}  // namespace

std::int64_t latency_window::upper_bound_us(std::size_t i) noexcept {
    return static_cast<std::int64_t>(
        std::ceil(first_bound_us * std::pow(growth, static_cast<double>(i))));
}

std::size_t latency_window::bucket_of(std::chrono::microseconds duration) noexcept {
    const auto us = static_cast<double>(duration.count());
    if (us <= first_bound_us) {
        return 0;
    }
    auto i = static_cast<std::size_t>(std::ceil(std::log(us / first_bound_us) / std::log(growth)));
    // The logarithm can land one bucket off either way at a bound: settle it on the integers.
    while (i > 0 && duration.count() <= upper_bound_us(i - 1)) {
        --i;
    }
    while (i + 1 < bucket_count && duration.count() > upper_bound_us(i)) {
        ++i;
    }
    return i < bucket_count ? i : bucket_count - 1;
}

void latency_window::record(std::chrono::microseconds duration) noexcept {
    buckets_[bucket_of(duration)].fetch_add(1, std::memory_order_relaxed);
}

latency_window::snapshot latency_window::read() const noexcept {
    snapshot out{};
    for (std::size_t i = 0; i < bucket_count; ++i) {
        out[i] = buckets_[i].load(std::memory_order_relaxed);
    }
    return out;
}

std::optional<std::chrono::microseconds> latency_window::quantile(const snapshot& before,
                                                                  const snapshot& after, double q,
                                                                  std::uint64_t* count) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        total += after[i] >= before[i] ? after[i] - before[i] : 0;
    }
    if (count != nullptr) {
        *count = total;
    }
    if (total == 0) {
        return std::nullopt;
    }
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        seen += after[i] >= before[i] ? after[i] - before[i] : 0;
        if (seen >= rank) {
            return std::chrono::microseconds(upper_bound_us(i));
        }
    }
    return std::chrono::microseconds(upper_bound_us(bucket_count - 1));
}

}  // namespace fulltime::metrics

#include "net/report_throttle.hpp"

namespace fulltime::net::detail {

std::optional<std::uint64_t> report_throttle::note(clock::time_point now) {
    std::lock_guard lock(mutex_);
    ++unreported_;
    if (reported_at_ && now - *reported_at_ < interval_) {
        return std::nullopt;
    }
    reported_at_ = now;
    const auto count = unreported_;
    unreported_ = 0;
    return count;
}

}  // namespace fulltime::net::detail

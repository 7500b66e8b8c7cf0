#include "fulltime/core/settlement_governor.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace fulltime::settlement {

namespace {
/// The share of the budget under which a window's p99 lets settlement speed up. A window's p99
/// is one noisy sample: a governor that sped up right to the budget would sit on it, half its
/// windows over, and the burst's p99 (all its windows together) would be over the budget. Between
/// this share and the budget it holds its speed.
constexpr double increase_below = 0.75;
}  // namespace

governor::governor(governor_settings settings) : settings_(settings) {
    settings_.batch_max = std::max<std::int64_t>(1, settings_.batch_max);
    settings_.batch_min = std::clamp<std::int64_t>(settings_.batch_min, 1, settings_.batch_max);
    batch_ = static_cast<double>(settings_.batch_max);
    settings_.budget_percent = std::max<std::int64_t>(0, settings_.budget_percent);
    budget_ = settings_.budget;
    if (enabled()) {
        start_slow();
    }
}

void governor::start_slow() noexcept {
    batch_ = static_cast<double>(settings_.batch_min);
    pause_ = std::chrono::microseconds(0);
    slow_start_ = true;
}

void governor::on_baseline(std::optional<std::chrono::microseconds> baseline_p99) noexcept {
    const bool was_enabled = enabled();
    budget_ = settings_.budget;
    if (settings_.budget_percent > 0 && baseline_p99 && baseline_p99->count() > 0) {
        const auto share =
            std::chrono::microseconds(baseline_p99->count() * settings_.budget_percent / 100);
        budget_ = budget_.count() > 0 ? std::min(budget_, share) : share;
    }
    if (enabled() && !was_enabled) {
        start_slow();
    }
}

void governor::on_batch(std::int64_t bets, std::chrono::microseconds elapsed) noexcept {
    if (bets <= 0 || elapsed.count() <= 0) {
        return;
    }
    costs_[costs_next_] = static_cast<double>(elapsed.count()) / static_cast<double>(bets);
    costs_next_ = (costs_next_ + 1) % costs_.size();
    costs_count_ = std::min(costs_count_ + 1, costs_.size());
    // The median of the last batches: one step that stalled (on a lock, a busy core, a commit
    // behind a checkpoint) does not move it, where a moving average took a fifth of the outlier
    // and could send a governor at the floor to full batches for one slow step of 25 bets.
    std::array<double, cost_batches> recent{};
    std::copy_n(costs_.begin(), costs_count_, recent.begin());
    const auto middle = recent.begin() + static_cast<std::ptrdiff_t>(costs_count_ / 2);
    std::nth_element(recent.begin(), middle,
                     recent.begin() + static_cast<std::ptrdiff_t>(costs_count_));
    cost_us_ = *middle;
    batched_ = true;
    apply_floor(std::nullopt);
}

std::chrono::microseconds governor::cost_per_bet() const noexcept {
    return std::chrono::microseconds(static_cast<std::int64_t>(std::llround(cost_us_)));
}

void governor::on_period(std::optional<std::chrono::microseconds> placement_p99,
                         std::chrono::microseconds now) noexcept {
    // The share of a window this period stands for (the first period: none).
    double slice = 0;
    if (last_period_ && now > *last_period_ && settings_.window.count() > 0) {
        slice = std::min(1.0, static_cast<double>((now - *last_period_).count()) /
                                  static_cast<double>(settings_.window.count()));
    }
    last_period_ = now;
    if (batched_) {
        last_batch_period_ = now;
        batched_ = false;
    }
    if (!enabled()) {
        batch_ = static_cast<double>(settings_.batch_max);
        pause_ = std::chrono::microseconds(0);
        floored_ = false;
        slow_start_ = false;
        return;
    }
    // The placements' p99 says what settling costs them only over a window in which batches
    // ran (a pause is in the window too): while settlement is idle it neither slows down nor
    // speeds up, and the next burst starts at the speed the last one ended at.
    const auto quiet_max = settings_.window + pause_;
    if (!last_batch_period_ || now - *last_batch_period_ > quiet_max) {
        return;
    }
    const bool over = placement_p99 && *placement_p99 > budget_;
    if (over) {
        // One decrease per window: the window measured before the last decrease still holds
        // placements from before it. Between decreases the floor's verdict stands.
        if (!last_decrease_ || now - *last_decrease_ >= settings_.window) {
            // Not below what the floor needs: when back to back is already too slow for it,
            // the floor's larger batches stand.
            if (!below_floor()) {
                batch_ = std::max(static_cast<double>(settings_.batch_min),
                                  std::floor(batch_ / 2 + whole_bet_slack));
            }
            pause_ = std::min(settings_.pause_max, std::max(settings_.pause_step, pause_ * 2));
            last_decrease_ = now;
            floored_ = false;
            slow_start_ = false;
        }
        apply_floor(now);
        return;
    }
    floored_ = false;
    // A speed-up needs the p99 with a margin under the budget.
    const bool margin = !placement_p99 || static_cast<double>(placement_p99->count()) <=
                                              increase_below * static_cast<double>(budget_.count());
    if (!margin) {
        apply_floor(now);
        return;
    }
    if (slow_start_) {
        // Until its first decrease: the batch doubles per window within the budget.
        batch_ = std::min(static_cast<double>(settings_.batch_max), batch_ * std::exp2(slice));
        slow_start_ = batch_ < static_cast<double>(settings_.batch_max);
    } else if (pause_.count() > 0) {
        const auto step = std::chrono::microseconds(static_cast<std::int64_t>(
            std::llround(static_cast<double>(settings_.pause_step.count()) * slice)));
        pause_ = std::max(std::chrono::microseconds(0), pause_ - step);
    } else {
        batch_ = std::min(static_cast<double>(settings_.batch_max),
                          batch_ + static_cast<double>(settings_.batch_max) / 10 * slice);
    }
    apply_floor(now);
}

bool governor::below_floor() const noexcept {
    // Judged on a few batches, not on the first step of a cold connection alone.
    return enabled() && settings_.min_bets_per_s > 0 && costs_count_ >= cost_batches_judged &&
           cost_us_ >= 1e6 / settings_.min_bets_per_s;
}

void governor::apply_floor(std::optional<std::chrono::microseconds> now) noexcept {
    // The floor clips the state itself (not only what is applied), so that a long stretch over
    // the budget does not wind the pause up far beyond the floor and slow the recovery.
    if (!enabled() || settings_.min_bets_per_s <= 0 || cost_us_ <= 0) {
        return;
    }
    if (below_floor()) {
        // Even back to back the batches are slower than the floor: no pause, and larger batches
        // (a step's fixed cost weighs less on them), doubled once per window, not full batches at
        // once: a batch of 500 where 25 ran cost placements a p99 of 50-120 ms.
        floored_ =
            floored_ || pause_.count() > 0 || batch_ < static_cast<double>(settings_.batch_max);
        pause_ = std::chrono::microseconds(0);
        if (now && (!last_floor_growth_ || *now - *last_floor_growth_ >= settings_.window)) {
            batch_ = std::min(static_cast<double>(settings_.batch_max), batch_ * 2);
            last_floor_growth_ = now;
        }
        return;
    }
    // A market settles batch_ bets per (batch_ * cost + pause): the pause may be at most
    // batch_ / floor - batch_ * cost.
    const double cap_us = std::floor(batch_) * (1e6 / settings_.min_bets_per_s - cost_us_);
    const auto cap = std::chrono::microseconds(static_cast<std::int64_t>(std::max(0.0, cap_us)));
    if (pause_ > cap) {
        pause_ = cap;
        floored_ = true;
    }
}

}  // namespace fulltime::settlement

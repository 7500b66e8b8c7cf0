#pragma once
/// The settlement governor: how fast settlement may go so that placements keep their latency.
/// Pure logic (no clock, no threads): the settlement coordinator feeds it the engine's own
/// placement p99 over a sliding window and the time of each batch, and reads back the batch size
/// and the pause after each batch. See docs/design.md, "Settlement".

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace fulltime::settlement {

/// Holds the governor's settings (settlement.placement_p99_budget_ms,
/// .placement_p99_budget_percent, .min_bets_per_s, .placement_window_ms, .batch_bets_max).
struct governor_settings {
    std::chrono::microseconds budget{0};  ///< the placement p99 to stay under; 0: none
    /// The budget as a share of the placement p99 with nothing settling (the baseline), in
    /// percent; 0: none. With both, the smaller budget holds; with neither, the governor is off.
    std::int64_t budget_percent = 0;
    std::int64_t batch_max = 500;  ///< the largest batch (settlement.batch_bets_max)
    std::int64_t batch_min = 25;   ///< the smallest batch it cuts to
    double min_bets_per_s = 0;     ///< the floor: never slower than this (0: no floor)
    std::chrono::microseconds window{std::chrono::seconds(1)};  ///< one measurement window
    std::chrono::microseconds pause_max{std::chrono::seconds(1)};
    /// The additive steps, per window: the pause shrinks by pause_step and then the batch grows
    /// by a tenth of batch_max over each window within the budget (spread over its periods).
    std::chrono::microseconds pause_step{std::chrono::milliseconds(5)};

    /// Returns whether a budget is set at all (in milliseconds or in percent).
    bool any_budget() const noexcept { return budget.count() > 0 || budget_percent > 0; }
};

/// Decides the batch size and the pause between a market's batches, additive increase and
/// multiplicative decrease (AIMD, as TCP's congestion window), after a slow start as TCP's. When
/// it starts steering (at start-up with a budget in milliseconds, or when the first baseline gives
/// a budget in percent) it knows nothing of what settling costs placements here: the first burst
/// starts at the smallest batch with no pause and doubles the batch per window within the budget,
/// until its first decrease or the largest batch. Then, while the placement p99 is over the
/// budget, once per window (a decrease needs a whole window to show), the batch is halved and the
/// pause doubled; while it is under three quarters of the budget the pause shrinks by one step per
/// window and, once it is zero, the batch grows by a tenth of its largest size per window. Each
/// increase is spread over the window's periods (as slow as what shows it). Between three
/// quarters of the budget and the budget it holds; and with no batch in the window (settlement
/// idle, when the p99 says nothing of settling's cost) it neither slows down nor speeds up, so the
/// next burst starts at the speed the last one ended at. The floor caps the pause so that one
/// market's batches still settle at least min_bets_per_s at the measured cost per bet (the median
/// of the last 8 batches): a budget that cannot be met costs backlog age, never a stuck market.
class governor {
public:
    explicit governor(governor_settings settings);

    /// Returns whether the governor steers now: a budget in milliseconds, or one in percent
    /// once there is a baseline to take it of.
    bool enabled() const noexcept { return budget_.count() > 0; }

    /// Returns the budget it steers by now (0: none, full speed).
    std::chrono::microseconds budget() const noexcept { return budget_; }

    /// Feeds the placement p99 with nothing settling (nullopt: not known yet), which a budget in
    /// percent is a share of.
    void on_baseline(std::optional<std::chrono::microseconds> baseline_p99) noexcept;

    /// Feeds one batch: the bets it looked at and its transaction's time.
    void on_batch(std::int64_t bets, std::chrono::microseconds elapsed) noexcept;

    /// Feeds one control period ending at `now` (any monotonic clock's time since its epoch):
    /// the placement p99 over the last window, nullopt when no placement was answered in it.
    void on_period(std::optional<std::chrono::microseconds> placement_p99,
                   std::chrono::microseconds now) noexcept;

    /// Returns the batch size for the next step.
    std::int64_t batch_bets() const noexcept {
        return static_cast<std::int64_t>(batch_ + whole_bet_slack);
    }

    /// Returns the pause after a batch, before the market's next step.
    std::chrono::microseconds pause() const noexcept { return pause_; }

    /// Returns the measured cost of one bet in a batch (the median of the last 8 batches), 0
    /// before any batch.
    std::chrono::microseconds cost_per_bet() const noexcept;

    /// Returns whether the floor holds the governor back: the budget asked for a longer pause
    /// (or smaller batch) than the floor allows, since the last period within the budget.
    bool floored() const noexcept { return floored_; }

    /// Returns the settings.
    const governor_settings& settings() const noexcept { return settings_; }

    /// Returns whether it is in its slow start (doubling the batch per window).
    bool slow_start() const noexcept { return slow_start_; }

private:
    static constexpr std::size_t cost_batches = 8;  ///< the batches the cost is the median of
    /// The batch is fractional (increases come in slices of a window); the slices of a doubling
    /// may land a hair under a whole bet, which counts as the whole bet.
    static constexpr double whole_bet_slack = 1e-6;

    /// The batches the cost must have seen before the floor judges back to back too slow.
    static constexpr std::size_t cost_batches_judged = 3;

    void start_slow() noexcept;
    /// Returns whether, at the measured cost per bet, even batches back to back settle slower
    /// than the floor.
    bool below_floor() const noexcept;
    /// Caps the pause so that the floor holds; below it, no pause and (with `now`, at most once
    /// per window) twice the batch.
    void apply_floor(std::optional<std::chrono::microseconds> now) noexcept;

    governor_settings settings_;
    std::chrono::microseconds budget_{0};  ///< the budget in force
    double batch_ = 0;  ///< fractional: additive steps come in slices of a window
    std::chrono::microseconds pause_{0};
    std::optional<std::chrono::microseconds> last_period_;
    double cost_us_ = 0;                        ///< median of the last batches' time per bet
    std::array<double, cost_batches> costs_{};  ///< the last batches' time per bet, a ring
    std::size_t costs_next_ = 0;
    std::size_t costs_count_ = 0;
    bool slow_start_ = false;
    std::optional<std::chrono::microseconds> last_decrease_;
    std::optional<std::chrono::microseconds> last_floor_growth_;
    std::optional<std::chrono::microseconds> last_batch_period_;  ///< the last period with a batch
    bool batched_ = false;                                        ///< a batch since the last period
    bool floored_ = false;
};

}  // namespace fulltime::settlement

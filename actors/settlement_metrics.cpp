// The series of the settlement path.

#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/codes.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace fulltime::actors {

namespace {
constexpr const char* steps_name = "fulltime_settlement_steps_total";
constexpr const char* steps_help = "Settlement steps (one transaction each), by status.";
}  // namespace

settlement_metrics::settlement_metrics(metrics::registry& registry)
    : steps_batch(registry.make_counter(steps_name, steps_help, R"(status="batch")")),
      steps_started(registry.make_counter(steps_name, steps_help, R"(status="started")")),
      steps_finished(registry.make_counter(steps_name, steps_help, R"(status="finished")")),
      steps_fenced(registry.make_counter(steps_name, steps_help, R"(status="fenced")")),
      steps_failed(registry.make_counter(steps_name, steps_help, R"(status="failed")")),
      bets(registry.make_counter("fulltime_settlement_bets_total",
                                 "Bets looked at by settlement batches.")),
      effects(registry.make_counter(
          "fulltime_settlement_effects_total",
          "Settlement rows written: settlements, cancels and their reversals.")),
      lock_timeouts(registry.make_counter(
          "fulltime_settlement_lock_timeouts_total",
          "Settlement steps that hit their lock_timeout (SQLSTATE 55P03); each is retried.")),
      markets_active(registry.make_gauge("fulltime_settlement_markets_active",
                                         "Market actors alive (markets being settled).")),
      batches_running(registry.make_gauge(
          "fulltime_settlement_batches_running",
          "Markets holding a settlement step slot right now: stepping, or resting "
          "between two batches.")),
      backlog_events(
          registry.make_gauge("fulltime_settlement_backlog_events",
                              "Result events stored but not yet applied, at the last scan.")),
      backlog_markets(
          registry.make_gauge("fulltime_settlement_backlog_markets",
                              "Markets with result events not yet applied, at the last scan.")),
      backlog_age_ms(registry.make_gauge(
          "fulltime_settlement_backlog_age_seconds",
          "Age of the oldest result event not yet applied, at the last scan (0: none).", {},
          1'000)),
      governor_budget_us(registry.make_gauge(
          "fulltime_settlement_governor_budget_seconds",
          "The placement p99 the settlement governor keeps settlement under (0: governor off).", {},
          1'000'000)),
      governor_baseline_p99_us(registry.make_gauge(
          "fulltime_settlement_governor_baseline_p99_seconds",
          "The engine's placement p99 over its last settlement.placement_baseline_ms of "
          "placement with no settlement batch running, which a budget in percent is a share of "
          "(-1: not enough such placements yet).",
          {}, 1'000'000)),
      // Windowed, not lifetime: the p99 the governor steers by, over its own last window
      // (settlement.placement_window_ms), so it says what placement is like now.
      governor_placement_p99_us(registry.make_gauge(
          "fulltime_settlement_governor_placement_p99_seconds",
          "The engine's placement p99 over the governor's last window (-1: no placement in it).",
          {}, 1'000'000)),
      governor_batch_bets(
          registry.make_gauge("fulltime_settlement_governor_batch_bets",
                              "Bets a settlement step settles at most, as the governor decides.")),
      governor_pause_us(registry.make_gauge(
          "fulltime_settlement_governor_pause_seconds",
          "Pause the governor puts after a market's batch, before its next step.", {}, 1'000'000)),
      governor_settled_bets_per_s(registry.make_gauge(
          "fulltime_settlement_governor_settled_bets_per_second",
          "Bets settlement batches looked at per second over the governor's last window.")),
      governor_floored(registry.make_gauge(
          "fulltime_settlement_governor_floored",
          "1 while the floor (settlement.min_bets_per_s) holds the governor back from the "
          "budget.")),
      governor_slow_start(registry.make_gauge(
          "fulltime_settlement_governor_slow_start",
          "1 while the governor is in its slow start: the batch doubles per window within the "
          "budget, until the first decrease.")) {
    registry.add_collector([this](std::string& out) {
        step_latency.render(out, "fulltime_settlement_step_latency_seconds",
                            "Time of one settlement step's transaction.");
    });
    // Every code the settle step can record has its series from the start, so a rate over it
    // never begins with a missing series (the codes: fulltime_codes, db/codes.hpp).
    for (std::string_view code : db::codes::bet_skip) {
        bet_refusals[std::string(code)] = &registry.make_counter(
            "fulltime_settlement_refusals_total",
            "Bets an applied result event skipped because of their terminal state (no money "
            "moved), by code.",
            metrics::label("code", code));
    }
    for (std::string_view code : db::codes::event_refusal) {
        event_refusals[std::string(code)] = &registry.make_counter(
            "fulltime_settlement_events_refused_total",
            "Result events that moved no money at all because of the bets' terminal states, by "
            "code.",
            metrics::label("code", code));
    }
}

std::string settlement_metrics::governor_json() const {
    const auto ms = [](std::int64_t us) { return static_cast<double>(us) / 1000.0; };
    const auto p99 = governor_placement_p99_us.value();
    const auto baseline = governor_baseline_p99_us.value();
    nlohmann::json j{{"enabled", governor_budget_us.value() > 0},
                     {"budget_ms", ms(governor_budget_us.value())},
                     {"baseline_p99_ms", nullptr},
                     {"placement_p99_ms", nullptr},
                     {"batch_bets", governor_batch_bets.value()},
                     {"pause_ms", ms(governor_pause_us.value())},
                     {"settled_bets_per_s", governor_settled_bets_per_s.value()},
                     {"floored", governor_floored.value() != 0},
                     {"slow_start", governor_slow_start.value() != 0}};
    if (p99 >= 0) {
        j["placement_p99_ms"] = ms(p99);
    }
    if (baseline >= 0) {
        j["baseline_p99_ms"] = ms(baseline);
    }
    return j.dump();
}

}  // namespace fulltime::actors

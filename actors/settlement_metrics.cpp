// The series of the settlement path.

#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/codes.hpp"

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
      batches_running(registry.make_gauge("fulltime_settlement_batches_running",
                                          "Settlement steps holding a slot right now.")),
      backlog_events(
          registry.make_gauge("fulltime_settlement_backlog_events",
                              "Result events stored but not yet applied, at the last scan.")),
      backlog_markets(
          registry.make_gauge("fulltime_settlement_backlog_markets",
                              "Markets with result events not yet applied, at the last scan.")),
      backlog_age_ms(registry.make_gauge(
          "fulltime_settlement_backlog_age_milliseconds",
          "Age of the oldest result event not yet applied, at the last scan (0: none).")) {
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

}  // namespace fulltime::actors

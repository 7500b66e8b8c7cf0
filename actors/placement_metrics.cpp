#include "fulltime/actors/placement.hpp"

#include "fulltime/core/metrics.hpp"

namespace fulltime::actors {

namespace {

constexpr const char* outcomes_name = "fulltime_placements_total";
constexpr const char* outcomes_help =
    "Place requests answered, by outcome (placed and rejected count first executions only).";
constexpr const char* busy_name = "fulltime_placement_busy_total";
constexpr const char* busy_help = "Place requests answered busy, by reason.";

constexpr placement_stage all_stages[] = {placement_stage::parse,    placement_stage::handoff,
                                          placement_stage::queue,    placement_stage::group,
                                          placement_stage::database, placement_stage::reply,
                                          placement_stage::write,    placement_stage::total};

}  // namespace

std::string_view stage_name(placement_stage s) noexcept {
    switch (s) {
        case placement_stage::parse:
            return "parse";
        case placement_stage::handoff:
            return "handoff";
        case placement_stage::queue:
            return "queue";
        case placement_stage::group:
            return "group";
        case placement_stage::database:
            return "database";
        case placement_stage::reply:
            return "reply";
        case placement_stage::write:
            return "write";
        case placement_stage::total:
            return "total";
    }
    return "unknown";
}

placement_metrics::placement_metrics(metrics::registry& registry)
    : placed(registry.make_counter(outcomes_name, outcomes_help, R"(outcome="placed")")),
      rejected(registry.make_counter(outcomes_name, outcomes_help, R"(outcome="rejected")")),
      replayed(registry.make_counter(outcomes_name, outcomes_help, R"(outcome="replayed")")),
      key_reused(registry.make_counter(outcomes_name, outcomes_help, R"(outcome="key_reused")")),
      busy(registry.make_counter(outcomes_name, outcomes_help, R"(outcome="busy")")),
      failed(registry.make_counter(outcomes_name, outcomes_help, R"(outcome="failed")")),
      invalid(registry.make_counter(outcomes_name, outcomes_help, R"(outcome="invalid")")),
      lock_timeouts(registry.make_counter(
          "fulltime_placement_lock_timeouts_total",
          "Placements that hit SET LOCAL lock_timeout (SQLSTATE 55P03), retried or not.")),
      retries(registry.make_counter(
          "fulltime_placement_retries_total",
          "Placements executed again with the same key after a lock timeout or deadlock.")),
      reconnects(registry.make_counter(
          "fulltime_placement_reconnects_total",
          "Placements executed again on a fresh connection after theirs broke.")),
      busy_queue_full(registry.make_counter(busy_name, busy_help, R"(reason="queue_full")")),
      busy_deadline(registry.make_counter(busy_name, busy_help, R"(reason="deadline")")),
      busy_locked(registry.make_counter(busy_name, busy_help, R"(reason="lock_retries")")),
      busy_unavailable(registry.make_counter(busy_name, busy_help, R"(reason="unavailable")")),
      purged_keys(registry.make_counter("fulltime_idempotency_keys_purged_total",
                                        "Expired idempotency keys deleted by the purge actor.")),
      purge_batches(registry.make_counter("fulltime_idempotency_purge_batches_total",
                                          "Purge transactions committed.")),
      purge_failures(registry.make_counter("fulltime_idempotency_purge_failures_total",
                                           "Purge rounds that stopped on an error.")),
      queued(registry.make_gauge(
          "fulltime_placement_queued",
          "Placements waiting in the placement actors' queues for their actor's connection.")) {
    // The collector reads this object at scrape time: the engine keeps it alive as long as the
    // gateway serves /metrics.
    registry.add_collector([this](std::string& out) {
        latency.render(out, "fulltime_placement_latency_seconds",
                       "Time from a place request reaching the placement service to its answer.");
        constexpr const char* stage_family = "fulltime_placement_stage_seconds";
        metrics::append_header(out, stage_family,
                               "Time a placement spends in each hop: parse, handoff, queue, group, "
                               "database, reply, write, and total (frame read to reply written).",
                               "histogram");
        for (placement_stage s : all_stages) {
            stages_[static_cast<std::size_t>(s)].render_series(
                out, stage_family, metrics::label("stage", stage_name(s)));
        }
    });
}

void placement_metrics::record(const bets::place_result& result,
                               std::chrono::microseconds elapsed) noexcept {
    using status = bets::place_result::status;
    switch (result.kind) {
        case status::placed:
            (result.replayed ? replayed : placed).inc();
            break;
        case status::rejected:
            if (!result.stored) {
                key_reused.inc();
            } else {
                (result.replayed ? replayed : rejected).inc();
            }
            break;
        case status::invalid:
            // Refused by the placement function for its currency's decimals: the same refusal
            // as validation's before any actor, stored nowhere.
            invalid.inc();
            break;
        case status::busy:
            busy.inc();
            break;
        case status::failed:
            failed.inc();
            break;
    }
    latency.record(elapsed);
    recent.record(elapsed);
}

}  // namespace fulltime::actors

#pragma once
/// What a rehearsal measured, over time, and what it makes of it: placement latency per second,
/// the settlement backlog's age, the marks (the burst, each fault), the exit criteria's verdicts
/// and the latency-over-time plot (SVG). Pure: no I/O, so it is tested with made-up runs.

#include "app/rehearsal/scenario.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::app::rehearsal {

/// Holds one answered placement: when it was scheduled (seconds on the rehearsal's clock) and
/// how long from then until its final reply (retries included).
struct answered {
    double scheduled_s = 0;
    double latency_ms = 0;
};

/// Holds one reading of the settlement backlog's age (GET /metrics).
struct backlog_reading {
    double at_s = 0;
    double age_ms = 0;
};

/// Holds a moment to mark on the plot and in the report.
struct mark {
    double at_s = 0;
    std::string label;   ///< "burst", "kill_engine", ...
    std::string detail;  ///< what happened ("engine listening again after 1.2 s")
};

/// Holds one second's placements: those scheduled in [at_s, at_s + 1).
struct second {
    double at_s = 0;
    std::size_t count = 0;
    double p50_ms = 0;
    double p99_ms = 0;
    double max_ms = 0;
};

/// Returns `v` with `decimals` decimals ("12.35"), for the report's sentences and the plot.
std::string fixed(double v, int decimals);

/// Returns the p-quantile (0..1) of `values` by nearest rank; 0 when empty. Sorts `values`.
double quantile(std::vector<double>& values, double p);

/// Returns the per-second placement figures over [0, duration_s).
std::vector<second> per_second(const std::vector<answered>& replies, double duration_s);

/// Holds one exit criterion's verdict.
struct verdict {
    std::string name;
    double measured = 0;
    double limit = 0;
    bool passed = false;
    std::string detail;  ///< how it was measured, in a sentence
};

/// Holds what the criteria are judged on, besides the replies and backlog readings.
struct run_facts {
    double burst_at_s = 0;
    /// When every burst market's result was seen applied (its producer's view, GET
    /// /v1/feed/markets/{id}/events); nullopt: not by the end of the run.
    std::optional<double> burst_applied_s;
    double duration_s = 0;
    std::int64_t invariant_failures = 0;  ///< `fulltime audit`'s broken invariants (or -1: not run)
    std::int64_t lost_acknowledgements = 0;     ///< requests never answered, or answered placed
                                                ///< with no bet stored
    std::int64_t doubled_acknowledgements = 0;  ///< keys answered with two bets, or two bet ids
    std::int64_t unsettled_bets = 0;  ///< bets of resulted markets without a settlement in force
};

/// Judges the scenario's criteria: the placement p99 over requests scheduled while the burst
/// settled (from its posting until its results were all applied, at least one second; to the
/// run's end when they never were); the time from the burst until its results were applied and
/// the backlog's age was under its limit (the gauge comes from the engine's periodic scan, so it
/// alone could miss a burst shorter than a scan), with the backlog under the limit again at the
/// run's end whatever later events raised it; zero invariant failures;
/// zero lost or doubled acknowledgements; zero unsettled bets on resulted markets.
std::vector<verdict> judge(const exit_criteria& c, const run_facts& facts,
                           const std::vector<answered>& replies,
                           const std::vector<backlog_reading>& backlog);

/// Returns the plot: placement p50 and p99 per second (log scale), the backlog's age, the burst
/// and every fault marked. A standalone SVG document.
std::string render_svg(const std::string& title, const std::vector<second>& seconds,
                       const std::vector<backlog_reading>& backlog, const std::vector<mark>& marks,
                       double duration_s);

/// Returns the verdicts as a JSON array.
nlohmann::json to_json(const std::vector<verdict>& verdicts);

}  // namespace fulltime::app::rehearsal

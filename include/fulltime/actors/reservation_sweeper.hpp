#pragma once
/// The reservation-deadline sweeper (docs/design.md: "A reservation whose settlement never comes
/// has an owner and a deadline"). A reservation is an open bet: a bet with no settlement effect in
/// force. Its owner is its market, its deadline the market's (fulltime_reservation_deadline in
/// db/migrations/0008_terminal_states.sql: settle_deadline_at + reservations.grace_s, or
/// created_at + reservations.default_deadline_s).
///
/// Every `reservations.sweep_interval_ms` one actor runs a sweep on the `background` pool:
/// markets in id order, a page at a time; for each market past its deadline, its bets in
/// chunks of `reservations.sweep_batch_bets_max`, each chunk one short read-only statement (no row
/// locks, no balance row read); then one statement that opens, updates or resolves the
/// market's overdue_reservation incident (subject market:<id>). It never moves money:
/// releasing the reservations is the operator's decision (`fulltime void-overdue`).
///
/// A market found with no open bet is remembered with its newest bet and its applied seq, and
/// skipped while both stay the same (a bet can only become open again through a new bet or a
/// settlement event), so the sweep does not re-read every settled market's history each time.
/// Threading as for settlement: the actor never calls libpq; the sweep runs on the io_context.

#include "fulltime/config/config.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace caf {
class actor_system;
}  // namespace caf

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::metrics {
class counter;
class gauge;
class registry;
}  // namespace fulltime::metrics

namespace fulltime::actors {

/// Holds the sweeper's series, registered once in the engine's registry.
struct reservation_metrics {
    /// Registers every series in `registry`, which must outlive this object.
    explicit reservation_metrics(metrics::registry& registry);

    metrics::gauge& overdue_bets;     ///< open bets past their deadline (last sweep)
    metrics::gauge& overdue_markets;  ///< markets holding them (last sweep)
    metrics::gauge& sweep_ms;         ///< duration of the last sweep
    metrics::counter& sweeps;         ///< sweeps finished
    metrics::counter& failures;       ///< sweeps that ended on a database error
};

/// Holds what one sweep found and did.
struct sweep_report {
    bool ok = false;
    std::string error;                 ///< why a failed sweep stopped
    std::int64_t markets_scanned = 0;  ///< markets whose bets were read
    std::int64_t overdue_markets = 0;  ///< markets past their deadline with open bets
    std::int64_t overdue_bets = 0;     ///< their open bets
    std::int64_t opened = 0;           ///< incidents opened
    std::int64_t updated = 0;          ///< incidents seen again
    std::int64_t resolved = 0;         ///< incidents resolved
    std::chrono::milliseconds elapsed{0};
};

/// Remembers markets found without open bets, keyed by market, with (newest bet, applied seq).
/// Touched on the io_context only.
class sweep_memory {
public:
    /// Returns whether `market` was clean at exactly this newest bet and applied seq.
    bool clean(std::int64_t market, std::int64_t bet_id_max, std::int64_t applied_seq) const;
    /// Records the market as clean at this state, or forgets it.
    void remember(std::int64_t market, std::int64_t bet_id_max, std::int64_t applied_seq,
                  bool is_clean);

    bool stopped = false;  ///< set by reservation_sweeper::stop(): a sweep ends at once

private:
    std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> clean_;
};

/// Runs one sweep on connections of `pool` (see above). Never throws; a database error ends
/// the sweep early with ok = false (what it recorded so far stays recorded).
boost::asio::awaitable<sweep_report> sweep_reservations(db::pool& pool,
                                                        reservation_settings settings,
                                                        std::shared_ptr<sweep_memory> memory);

/// Starts and owns the sweeper actor.
class reservation_sweeper {
public:
    /// Spawns the actor; its first sweep runs after one interval. The pool, system and metrics
    /// must outlive this object.
    reservation_sweeper(caf::actor_system& system, boost::asio::any_io_executor io,
                        db::pool& background, const config& cfg, reservation_metrics& metrics);
    ~reservation_sweeper();
    reservation_sweeper(const reservation_sweeper&) = delete;
    reservation_sweeper& operator=(const reservation_sweeper&) = delete;

    /// Stops the actor; a sweep in progress ends after its current statement. Call on the
    /// io_context before the pools close.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fulltime::actors

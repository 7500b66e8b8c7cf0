#pragma once
// The io side of the settlement actors: one settlement step, and the backlog scan. Every
// function here runs on the engine's io_context, never on a CAF thread.

#include "fulltime/actors/settlement.hpp"
#include "fulltime/db/pool.hpp"

#include <boost/asio/awaitable.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fulltime::actors::detail {

/// Holds the governor's current decision (core/settlement_governor.hpp): written by the
/// coordinator, read by every step and market actor, on any thread.
struct settlement_pacing {
    std::atomic<std::int64_t> batch_bets{0};  ///< bets the next step settles at most
    std::atomic<std::int64_t> pause_us{0};    ///< rest after a batch, before the next step
};

/// Holds what a step needs: pools and settings. Touched on the io_context only (but pacing,
/// markets_waiting and closed).
struct settlement_worker {
    db::pool* settlement = nullptr;   ///< steps
    db::pool* background = nullptr;   ///< backlog scans
    std::int64_t batch_bets_max = 0;  ///< bets one step settles at most (settlement.batch_bets_max)
    /// Lanes an event it starts is settled in, on a market with more than this many batches of
    /// bets (settlement.lanes; 1 while the governor steers).
    std::int64_t lanes = 1;
    std::int64_t lock_timeout_ms = 0;
    std::chrono::milliseconds query_timeout{0};
    settlement_metrics* metrics = nullptr;
    std::shared_ptr<settlement_pacing> pacing;  ///< the governor's batch size (when it steers)
    /// Markets waiting for a step slot: written by the coordinator, read by the steps (a market
    /// holds its slot for batch after batch only while this is 0, or for settlement_slot_hold_ms).
    std::atomic<std::int64_t> markets_waiting{0};
    /// Set by stop(), on its caller's thread: no further steps, and a rest between batches ends.
    std::atomic<bool> closed{false};
};

/// Names how one step ended. The first seven are fulltime_settle_step's own statuses; a lane's
/// batch (fulltime_settle_lane) ends batch, finished (the lane is done) or idle.
enum class step_status { idle = 0, gap, started, fenced, batch, finished, lanes, locked, failed };

/// Holds one step's outcome; or, for the steps a market ran back to back in one slot, the last
/// step's status, event and error, and the sums of the others.
struct step_result {
    step_status status = step_status::failed;
    /// Steps run, per status (one step: 1 at its status; steps in a slot: each one's).
    std::array<std::uint32_t, 9> steps{};
    std::int64_t seq = 0;
    std::string kind;                      ///< the event's kind, when the step worked on one
    std::int64_t lanes = 1;                ///< the lanes of the event in progress (1: none)
    std::int64_t bets = 0;                 ///< bets the batches looked at
    std::int64_t effects = 0;              ///< settlement rows they wrote
    std::chrono::microseconds elapsed{0};  ///< the steps' transactions, as the engine saw them
    std::string error;                     ///< why a failed step failed
    /// For a finished event: the bets it skipped per terminal-state code, and its refusal
    /// code when it moved nothing because of them (result_events.skipped, .refusal;
    /// db/functions/fulltime_settle_finish.sql).
    std::vector<std::pair<std::string, std::int64_t>> skipped;
    std::string refusal;
    /// The rest the pacing asks after the last batch, before the market's next step
    /// (steps_in_slot; zero after any other status).
    std::chrono::microseconds rest{0};
};

/// Runs one step of `market_id` on a settlement connection, in one transaction. A lock timeout,
/// deadlock or serialization failure is `locked` (the step wrote nothing and is retried); any
/// other error is `failed`. Never throws.
boost::asio::awaitable<step_result> run_step(std::shared_ptr<settlement_worker> worker,
                                             std::int64_t market_id);

/// Runs one batch of lane `lane` of `market_id`'s event in progress (fulltime_settle_lane), as
/// run_step runs a step: batch, finished (the lane is done), idle, locked or failed.
boost::asio::awaitable<step_result> run_lane(std::shared_ptr<settlement_worker> worker,
                                             std::int64_t market_id, std::int64_t lane);

/// Holds the markets with events stored but not applied, and the backlog's size and age.
struct backlog {
    bool ok = false;
    std::vector<std::int64_t> markets;
    std::int64_t events = 0;
    std::int64_t oldest_age_ms = 0;
};

/// Scans result_events for events past their market's applied_seq (background pool).
boost::asio::awaitable<backlog> scan_backlog(std::shared_ptr<settlement_worker> worker);

}  // namespace fulltime::actors::detail

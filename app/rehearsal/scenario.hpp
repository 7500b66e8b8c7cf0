#pragma once
/// A match-night rehearsal's scenario (`fulltime rehearse SCENARIO.json`): the accounts, markets
/// and bettors it sets up, when the results burst arrives, the faults and when, and the exit
/// criteria, all stated before the run. docs/rehearsal.md describes the file; the shipped ones
/// are in config/scenarios/.

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::app::rehearsal {

/// Names a fault the rehearsal injects at a scheduled second.
enum class fault_kind {
    kill_engine,          ///< SIGKILL the engine, start it again at once
    terminate_backends,   ///< pg_terminate_backend of one pool's server sessions
    restart_postgres,     ///< a fast shutdown and start of the rehearsal's own PostgreSQL
    duplicate_result,     ///< a burst market's result sent again, as is
    correct_result,       ///< a burst market's result rolled back and the other selection wins
    cancel_market,        ///< a burst market's bets cancelled (refunded), after its result
    idle_in_transaction,  ///< an outside session holds an account row, idle, for hold_s
    drop_connections,     ///< every bettor drops its connection, reconnects and retries
};

/// Returns the fault's name in the scenario file ("kill_engine", ...).
const char* name(fault_kind k) noexcept;

/// Holds one scheduled fault.
struct fault {
    fault_kind kind = fault_kind::kill_engine;
    double at_s = 0;          ///< seconds after the rehearsal's clock starts
    std::string pool;         ///< terminate_backends: placement, settlement, background or all
    double hold_s = 0;        ///< idle_in_transaction: how long the session holds the row
    std::int64_t market = 1;  ///< result faults: which burst market (1-based)
    /// correct_result: the new result (seq + 1) is sent before the rollback it follows (seq), so
    /// the engine holds it back until the gap is filled a second later.
    bool reordered = false;
};

/// Holds the exit criteria: the run fails when one is not met.
struct exit_criteria {
    double placement_p99_ms_max = 0;  ///< over requests scheduled during the burst
    double backlog_age_s_max = 0;     ///< the settlement backlog's age must be back under this ...
    double backlog_within_s = 0;      ///< ... within this many seconds after the burst is posted
    /// Money invariant failures (`fulltime audit`) and lost or doubled acknowledgements are
    /// always allowed zero; they are criteria too, with no setting.
};

/// The currency of the rehearsal's accounts: every amount of a scenario is in it.
inline constexpr std::string_view rehearsal_currency = "EUR";

/// Holds a whole scenario, every field validated.
struct scenario {
    std::string name;
    std::string description;
    bool pgbouncer = false;  ///< PgBouncer in transaction pooling mode between engine and database

    std::int64_t accounts = 0;       ///< funded accounts, each by one deposit
    std::int64_t deposit_minor = 0;  ///< each account's deposit
    std::int64_t live_markets = 0;   ///< markets that take bets all through the run
    std::int64_t burst_markets = 0;  ///< markets bet on first, then settled in the burst

    std::int64_t preload_bets = 0;  ///< bets placed on the burst markets before the clock starts
    double preload_rate_per_s = 0;  ///< their pace (open loop)

    std::int64_t connections = 0;  ///< bettor connections during the run (one account each)
    double rate_per_s = 0;         ///< their placements per second in total (open loop)
    std::int64_t stake_minor = 0;  ///< every bet's stake
    double retry_ratio = 0;        ///< share of requests whose connection drops before the
                                   ///< reply, then retried with the same key

    double duration_s = 0;  ///< length of the run, from the clock's start
    double burst_at_s = 0;  ///< when every burst market's result is posted

    std::vector<fault> faults;  ///< in the order of their time
    exit_criteria criteria;
};

/// Parses and validates a scenario. Throws std::invalid_argument with a message naming the
/// field ("faults[2].at_s: must be within the run's duration") on any error, unknown fields
/// included.
scenario parse_scenario(const nlohmann::json& doc);

/// Returns the scenario as JSON, in the file's format (for the report).
nlohmann::json to_json(const scenario& s);

}  // namespace fulltime::app::rehearsal

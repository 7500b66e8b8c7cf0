#pragma once
/// One in-process engine for the pg tests: a scratch database with the engine's migrations, the
/// pools, the actor runtime and whichever services a test asks for, wired as
/// app/commands/serve_command.cpp wires them, with the io_context on a thread of its own. The
/// test drives it from its own thread (blocking test clients, synchronous SQL) and the engine
/// stops in serve_command's order when it goes out of scope. CAF and Beast stay in
/// engine_fixture.cpp: many test files include this header.

#include "fulltime/config/config.hpp"
#include "fulltime/core/token.hpp"
#include "support/http_client.hpp"
#include "support/text.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulltime::actors {
class placement_service;
class settlement_service;
class reconciliation_service;
struct placement_metrics;
struct settlement_metrics;
struct reconciliation_metrics;
struct reservation_metrics;
struct history_metrics;
}  // namespace fulltime::actors

namespace fulltime::db {
struct pools;
}  // namespace fulltime::db

namespace fulltime::net {
struct services;
class server;
}  // namespace fulltime::net

namespace fulltime::test {

/// Signs test tokens and is what every fixture's gateway verifies them with.
inline constexpr const char* token_secret = "fulltime-test-secret";

/// Names the parts of the engine a test wires; what is not asked for is not started. Tests
/// name them with designated initializers ({.gateway = true, .feed = true}); every member has
/// a default member initializer so that GCC 12's -Wmissing-field-initializers stays quiet.
struct engine_parts {
    bool gateway = false;          ///< the net::server, on cfg.gateway (an ephemeral port)
    bool feed = false;             ///< /v1/feed on WebSocket and POST, with its routes
    bool operator_routes = false;  ///< accounts, deposits and withdrawals
    bool market_routes = false;    ///< /v1/markets/{id}/..., waking settlement
    bool placement = false;        ///< placement actors; /v1/bets handlers when there is a gateway
    bool settlement = false;       ///< settlement actors, woken by stored result events
    bool reconciliation = false;   ///< the reconciliation actor
    bool pools = true;             ///< false: no pools (the gateway's /readyz answers 503)
    std::string pools_url{};       ///< empty: the scratch database
    bool migrate = true;           ///< apply the engine's migrations before anything starts
    /// Called for each stored result event instead of waking settlement (when set).
    std::function<void(std::int64_t market_id)> on_result_event{};
    /// Adds to or changes what the gateway is given, after the fixture filled it in.
    std::function<void(net::services&)> add_services{};
};

/// Describes one selection of a test market.
struct selection_odds {
    std::int64_t selection_id = 0;
    std::int64_t odds_units = 0;  ///< odds in 1/10000 (20000 is 2.00)
};

/// Describes the limits of a test market.
struct market_shape {
    std::int64_t stake_min_minor = 1;
    std::int64_t stake_max_minor = 100'000'000'000;
    std::int64_t liability_limit_minor = 1'000'000'000'000'000;
    int exposure_shards = 4;  ///< each shard gets liability_limit_minor / exposure_shards
};

/// Owns the in-process engine of one test case.
class engine {
public:
    /// Starts the parts in `parts` on test_config(), changed first by `configure` (a test
    /// file's settings), then by `configure_case` (one test case's); requires the migrations
    /// to apply.
    explicit engine(const engine_parts& parts, const std::function<void(config&)>& configure = {},
                    const std::function<void(config&)>& configure_case = {});
    /// Stops what runs (stop()).
    ~engine();
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    /// Stops in serve_command's order: reconciliation, gateway (draining), placement,
    /// settlement, sweeper, pools; then the loop and the actor system. Idempotent.
    void stop();

    /// Starts the gateway's shutdown on the loop; stop() then skips it. The future completes
    /// with the shutdown.
    std::future<void> begin_shutdown(std::chrono::milliseconds deadline);

    /// Returns the loop the engine runs on.
    boost::asio::io_context& ioc() noexcept;

    /// Starts `task` on the engine's loop; the future completes with it.
    template <class T>
    std::future<T> spawn(boost::asio::awaitable<T> task) {
        return boost::asio::co_spawn(ioc(), std::move(task), boost::asio::use_future);
    }

    /// Runs `task` on the engine's loop and waits for its end; throws when `timeout` passes.
    template <class T>
    T on_loop(boost::asio::awaitable<T> task,
              std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
        auto fut = spawn(std::move(task));
        if (fut.wait_for(timeout) != std::future_status::ready) {
            throw std::runtime_error("task on the engine's loop timed out");
        }
        return fut.get();
    }

    /// Returns the configuration the engine runs with.
    const config& cfg() const noexcept;
    /// Returns the conninfo of the scratch database.
    const std::string& url() const noexcept;
    /// Returns the gateway's port (requires the gateway).
    std::uint16_t port() const;
    /// Returns the gateway (requires it).
    net::server& server();
    /// Returns the pools.
    db::pools& pools();
    /// Returns the engine's metrics as /metrics would render them.
    std::string metrics_text() const;

    /// Returns the placement service (requires it).
    actors::placement_service& placement();
    /// Returns the placement metrics (requires the placement).
    actors::placement_metrics& placement_metrics();
    /// Returns the settlement service (requires it).
    actors::settlement_service& settlement();
    /// Returns the settlement metrics (requires the settlement).
    actors::settlement_metrics& settlement_metrics();
    /// Starts another settlement service on the same database, as a second engine instance
    /// would, with metrics of its own; it stops with the engine.
    actors::settlement_service& add_settlement_instance();
    /// Returns the reconciliation service (requires it).
    actors::reconciliation_service& reconciliation();
    /// Returns the reconciliation metrics (requires the reconciliation).
    actors::reconciliation_metrics& reconciliation_metrics();
    /// Starts the reservation sweeper actor (every cfg.reservations.sweep_interval_ms).
    actors::reservation_metrics& start_sweeper();
    /// Starts the partition keeper actor (requires cfg.history.keeper_interval_ms > 0); its
    /// first round runs at once.
    actors::history_metrics& start_keeper();

    /// Returns the first column of the first row of `sql` as an integer (0 when none or NULL).
    std::int64_t scalar(const std::string& sql) const;
    /// Returns the first column of the first row of `sql` ("" when none or NULL).
    std::string text(const std::string& sql) const;
    /// Runs `sql` (several statements allowed).
    void exec(const std::string& sql) const;

    /// Creates an open market of event 1 with `selections`, its exposure shards and the event.
    void add_market(std::int64_t market_id, const std::vector<selection_odds>& selections,
                    const market_shape& shape = {}) const;
    /// Creates accounts [first, first + n) holding `amount_minor` each, as one keyed seed
    /// deposit per account.
    void fund(std::int64_t first, std::int64_t n, std::int64_t amount_minor,
              const std::string& currency = "EUR") const;
    /// Creates the account if needed and deposits `amount_minor` as a keyed cash transfer plus
    /// the matching balance update, in one transaction (repeatable).
    void deposit(std::int64_t account_id, std::int64_t amount_minor,
                 const std::string& currency = "EUR") const;
    /// Places one bet with the placement's own SQL function; returns its outcome.
    std::string place(std::int64_t account_id, const std::string& key, std::int64_t selection_id,
                      std::int64_t stake_minor, int lock_timeout_ms = 1000) const;
    /// Returns the last result event `market_id` applied (0 when none).
    std::int64_t applied(std::int64_t market_id) const;
    /// Waits until `market_id` applied event `seq`; false when `timeout` passed first.
    bool wait_applied(std::int64_t market_id, std::int64_t seq,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
    /// Returns the effect in force of the bet with `key`: "<outcome> <payout>", "open", or
    /// "missing" when there is no such bet.
    std::string bet_state(const std::string& key) const;
    /// Fails the test case once per broken money invariant of docs/design.md
    /// (tests/support/invariants.hpp).
    void check_money_invariants() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

/// Returns a token of `kind` signed with `key`, valid for `ttl_s`; `account_id` goes into
/// account tokens and `producer` into producer tokens.
std::string sign_token(token::kind kind, std::int64_t account_id = 1,
                       const std::string& producer = "feed-1", std::int64_t ttl_s = 3600,
                       const std::string& key = token_secret);
/// Returns an account token for `account_id`.
std::string account_token(std::int64_t account_id);
/// Returns the Authorization header carrying `bearer_token`.
header_list bearer(const std::string& bearer_token);
/// Returns the Authorization header of a fresh token of `kind` (account 1, `producer`).
header_list bearer(token::kind kind, const std::string& producer = "feed-1");
/// Opens a WebSocket on `target` and requires the upgrade to succeed.
ws_client open_ws(std::uint16_t port, const std::string& target, const header_list& headers);

/// Polls `condition` every `poll` until it holds or `timeout` passes, then returns it. For
/// conditions that only the database or another process can tell (nothing to wait on here).
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(5),
                std::chrono::milliseconds poll = std::chrono::milliseconds(10));

}  // namespace fulltime::test

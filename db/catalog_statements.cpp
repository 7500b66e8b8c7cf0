#include "fulltime/db/catalog_statements.hpp"

#include "db/short_transaction.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/limits.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

using detail::discard;
using detail::keep;
using decided = detail::decision<catalog_result>;

// Without a name the event is only ensured: no row lock for the many markets of one event.
constexpr const char* ensure_event_sql =
    "INSERT INTO events (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING";
constexpr const char* upsert_event_sql =
    "INSERT INTO events (event_id, name) VALUES ($1, $2) "
    "ON CONFLICT (event_id) DO UPDATE SET name = EXCLUDED.name "
    "WHERE events.name IS DISTINCT FROM EXCLUDED.name";

constexpr const char* insert_market_sql =
    "INSERT INTO markets (market_id, event_id, name, status, stake_min, stake_max, "
    "                     liability_limit, exposure_shards, settle_deadline_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::timestamptz) "
    "ON CONFLICT (market_id) DO NOTHING RETURNING market_id";

// The market limit spread over the shards; the remainder goes to shard 0 so that the shard
// limits add up to the market's limit exactly.
constexpr const char* insert_shards_sql =
    "INSERT INTO market_exposure (market_id, shard, liability_limit) "
    "SELECT $1, s, $2::bigint / $3 + CASE WHEN s = 0 THEN $2::bigint % $3 ELSE 0 END "
    "FROM generate_series(0, $3::integer - 1) AS s";

// Settlement keeps its per-market checkpoint here; the row exists from the market's creation.
constexpr const char* insert_progress_sql =
    "INSERT INTO settlement_progress (market_id) VALUES ($1) ON CONFLICT DO NOTHING";

// Serialises catalog messages of one market. FOR NO KEY UPDATE does not conflict with the FOR
// KEY SHARE of foreign-key checks, and placements read markets without any lock.
constexpr const char* lock_market_sql =
    "SELECT event_id, status, stake_min, stake_max, liability_limit, exposure_shards "
    "FROM markets WHERE market_id = $1 FOR NO KEY UPDATE";

constexpr const char* update_market_sql =
    "UPDATE markets SET name = $2, status = $3, stake_min = $4, stake_max = $5, "
    "    liability_limit = $6, settle_deadline_at = coalesce($7::timestamptz, settle_deadline_at), "
    "    updated_at = now() "
    "WHERE market_id = $1";

// Re-spreads a changed limit. A shard already holding more liability than its new share is
// not updated, and the caller refuses the whole message (the CHECK would abort otherwise).
constexpr const char* respread_shards_sql =
    "UPDATE market_exposure "
    "SET liability_limit = $2::bigint / $3 + CASE WHEN shard = 0 THEN $2::bigint % $3 ELSE 0 END "
    "WHERE market_id = $1 "
    "  AND liability <= $2::bigint / $3 + CASE WHEN shard = 0 THEN $2::bigint % $3 ELSE 0 END";

// Existing selections of this market get the new name and odds; a selection_id owned by another
// market is left alone here and found by the check that follows.
constexpr const char* upsert_selections_sql =
    "INSERT INTO selections (selection_id, market_id, name, odds) "
    "SELECT s.selection_id, $1, s.name, s.odds "
    "FROM jsonb_to_recordset($2::jsonb) AS s(selection_id bigint, name text, odds bigint) "
    "ON CONFLICT (selection_id) DO UPDATE "
    "SET name = EXCLUDED.name, odds = EXCLUDED.odds, updated_at = now() "
    "WHERE selections.market_id = EXCLUDED.market_id "
    "  AND (selections.name, selections.odds) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.odds)";

constexpr const char* foreign_selection_sql =
    "SELECT s.selection_id, s.market_id FROM selections s "
    "WHERE s.selection_id IN (SELECT (e ->> 'selection_id')::bigint "
    "                         FROM jsonb_array_elements($2::jsonb) AS e) "
    "  AND s.market_id <> $1 "
    "ORDER BY s.selection_id LIMIT 1";

constexpr const char* update_odds_sql =
    "UPDATE selections s SET odds = $3, updated_at = now() "
    "FROM markets m "
    "WHERE s.selection_id = $2 AND s.market_id = $1 AND m.market_id = s.market_id "
    "  AND m.status <> 'closed' "
    "RETURNING s.selection_id";

constexpr const char* update_status_sql =
    "UPDATE markets SET status = $2, updated_at = now() "
    "WHERE market_id = $1 AND status <> 'closed' RETURNING market_id";

// Explains a zero-row odds or status update: unknown market, closed market, or a selection that
// is not the market's.
constexpr const char* diagnose_sql =
    "SELECT m.status, (SELECT s.market_id FROM selections s WHERE s.selection_id = $2) "
    "FROM markets m WHERE m.market_id = $1";

catalog_result refusal(catalog_status status, std::string message) {
    catalog_result r;
    r.status = status;
    r.message = std::move(message);
    return r;
}

std::string market_text(std::int64_t market_id) { return "market " + std::to_string(market_id); }

struct stored_market {
    std::int64_t event_id = 0;
    std::string status;
    std::int64_t stake_min = 0;
    std::int64_t stake_max = 0;
    std::int64_t liability_limit = 0;
    std::int32_t exposure_shards = 0;
};

outcome<stored_market> read_market(const result& r) {
    auto event_id = r.get<std::int64_t>(0, 0);
    auto status = r.get<std::string>(0, 1);
    auto stake_min = r.get<std::int64_t>(0, 2);
    auto stake_max = r.get<std::int64_t>(0, 3);
    auto liability_limit = r.get<std::int64_t>(0, 4);
    auto shards = r.get<std::int32_t>(0, 5);
    if (!event_id || !status || !stake_min || !stake_max || !liability_limit || !shards) {
        return failure{errc::bad_result, {}, "unexpected market row"};
    }
    return stored_market{*event_id,  std::move(*status), *stake_min,
                         *stake_max, *liability_limit,   *shards};
}

// A market's limits as the feed writes them (limits::market_amount_digits): a market has no
// currency.
std::string market_amount(std::int64_t minor) {
    return money::format_amount(minor, limits::market_amount_digits);
}

// Checks the limits a market will have after the message (given values over stored or default
// ones); returns the refusal, or nullopt when they are consistent.
std::optional<catalog_result> check_limits(std::int64_t stake_min, std::int64_t stake_max,
                                           std::int64_t liability_limit, std::int32_t shards) {
    if (stake_min > stake_max) {
        return refusal(catalog_status::invalid, "stake_min " + market_amount(stake_min) +
                                                    " would be above stake_max " +
                                                    market_amount(stake_max));
    }
    if (liability_limit < shards) {
        return refusal(catalog_status::invalid,
                       "liability_limit " + market_amount(liability_limit) +
                           " must be at least one minor unit per exposure shard (" +
                           std::to_string(shards) + ")");
    }
    return std::nullopt;
}

std::string selections_json(const feed::market_message& m) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : m.selections) {
        out.push_back({{"selection_id", s.selection_id}, {"name", s.name}, {"odds", s.odds_units}});
    }
    return out.dump();
}

// Adds or updates the message's selections, then checks that none of them belongs to another
// market (checked after the upsert, so two markets claiming one id at once are caught too).
// Returns the refusal when one does; the caller rolls the message back.
asio::awaitable<outcome<std::optional<catalog_result>>> apply_selections(std::int64_t market_id,
                                                                         std::string selections,
                                                                         connection& conn) {
    auto upserted = co_await conn.query(upsert_selections_sql, params{market_id, selections});
    if (!upserted) {
        co_return upserted.error();
    }
    auto foreign = co_await conn.query(foreign_selection_sql, params{market_id, selections});
    if (!foreign) {
        co_return foreign.error();
    }
    if (foreign->rows() > 0) {
        co_return refusal(catalog_status::conflict,
                          "selection " + std::string(foreign->text(0, 0)) + " belongs to market " +
                              std::string(foreign->text(0, 1)));
    }
    co_return std::optional<catalog_result>{};
}

// Makes sure the market's event exists, and names it when the message does.
asio::awaitable<outcome<result>> ensure_event(std::int64_t event_id,
                                              std::optional<std::string> event_name,
                                              connection& conn) {
    // Awaited into a local in each branch: GCC 12 mishandles co_await inside ?: operands.
    outcome<result> event = failure{};
    if (event_name) {
        event = co_await conn.query(upsert_event_sql, params{event_id, *event_name});
    } else {
        event = co_await conn.query(ensure_event_sql, params{event_id});
    }
    co_return event;
}

// Creates the market when it is new, with the defaults for what the message leaves out: its
// row, its exposure shards, its settlement progress and its selections. Returns the message's
// answer when it is decided here, nullopt when the market exists and is to be updated.
asio::awaitable<outcome<std::optional<decided>>> create_market(feed::market_message m,
                                                               market_defaults defaults,
                                                               connection& conn) {
    const std::int64_t create_stake_min = m.stake_min_minor.value_or(defaults.stake_min_minor);
    const std::int64_t create_stake_max = m.stake_max_minor.value_or(defaults.stake_max_minor);
    const std::int64_t create_limit =
        m.liability_limit_minor.value_or(defaults.liability_limit_minor);
    const std::int32_t create_shards =
        m.exposure_shards.value_or(static_cast<std::int32_t>(defaults.exposure_shards));
    const std::string status(feed::to_string(m.status.value_or(feed::market_status::open)));
    if (auto bad = check_limits(create_stake_min, create_stake_max, create_limit, create_shards)) {
        // Only refused here if the market is new; an update is checked against stored values.
        auto exists =
            co_await conn.query("SELECT 1 FROM markets WHERE market_id = $1", params{m.market_id});
        if (!exists) {
            co_return exists.error();
        }
        if (exists->rows() == 0) {
            co_return discard(std::move(*bad));
        }
        co_return std::optional<decided>{};
    }
    auto inserted = co_await conn.query(
        insert_market_sql,
        params{m.market_id, m.event_id, m.name, status, create_stake_min, create_stake_max,
               create_limit, create_shards, m.settle_deadline_at});
    if (!inserted) {
        co_return inserted.error();
    }
    if (inserted->rows() != 1) {
        co_return std::optional<decided>{};
    }
    auto shards =
        co_await conn.query(insert_shards_sql, params{m.market_id, create_limit, create_shards});
    if (!shards) {
        co_return shards.error();
    }
    auto progress = co_await conn.query(insert_progress_sql, params{m.market_id});
    if (!progress) {
        co_return progress.error();
    }
    auto refused = co_await apply_selections(m.market_id, selections_json(m), conn);
    if (!refused) {
        co_return refused.error();
    }
    if (*refused) {
        co_return discard(std::move(**refused));
    }
    catalog_result created;
    created.created = true;
    co_return keep(std::move(created));
}

// The answer to a message that may not change the stored market (another event, a closed
// market, other exposure shards); nullopt when it may.
std::optional<decided> refuse_update(const feed::market_message& m, const stored_market& stored) {
    if (stored.event_id != m.event_id) {
        return discard(refusal(catalog_status::conflict,
                               market_text(m.market_id) + " belongs to event " +
                                   std::to_string(stored.event_id) + "; its event cannot change"));
    }
    if (stored.status == "closed") {
        if (m.status == feed::market_status::closed) {
            // A repeated close (a producer retrying after a lost ack) is acknowledged as is.
            return discard(catalog_result{});
        }
        return discard(refusal(catalog_status::market_closed,
                               market_text(m.market_id) + " is closed and stays closed"));
    }
    if (m.exposure_shards && *m.exposure_shards != stored.exposure_shards) {
        return discard(refusal(catalog_status::conflict,
                               "exposure_shards is fixed when a market is created (" +
                                   market_text(m.market_id) + " has " +
                                   std::to_string(stored.exposure_shards) + ")"));
    }
    return std::nullopt;
}

// An existing market: lock it against concurrent catalog messages, then merge the message into
// what is stored.
asio::awaitable<outcome<decided>> update_market(feed::market_message m, connection& conn) {
    auto locked = co_await conn.query(lock_market_sql, params{m.market_id});
    if (!locked) {
        co_return locked.error();
    }
    if (locked->rows() != 1) {
        co_return failure{errc::bad_result, {}, "market vanished while being updated"};
    }
    auto stored = read_market(*locked);
    if (!stored) {
        co_return stored.error();
    }
    if (auto refused = refuse_update(m, *stored)) {
        co_return std::move(*refused);
    }
    const std::int64_t stake_min = m.stake_min_minor.value_or(stored->stake_min);
    const std::int64_t stake_max = m.stake_max_minor.value_or(stored->stake_max);
    const std::int64_t limit = m.liability_limit_minor.value_or(stored->liability_limit);
    if (auto bad = check_limits(stake_min, stake_max, limit, stored->exposure_shards)) {
        co_return discard(std::move(*bad));
    }
    const std::string new_status =
        m.status ? std::string(feed::to_string(*m.status)) : stored->status;
    auto updated = co_await conn.query(
        update_market_sql,
        params{m.market_id, m.name, new_status, stake_min, stake_max, limit, m.settle_deadline_at});
    if (!updated) {
        co_return updated.error();
    }
    if (limit != stored->liability_limit) {
        auto spread = co_await conn.query(respread_shards_sql,
                                          params{m.market_id, limit, stored->exposure_shards});
        if (!spread) {
            co_return spread.error();
        }
        if (spread->affected_rows() != stored->exposure_shards) {
            co_return discard(refusal(catalog_status::conflict,
                                      "liability_limit " + market_amount(limit) +
                                          " is below the liability some exposure shards of " +
                                          market_text(m.market_id) + " already hold"));
        }
    }
    auto refused = co_await apply_selections(m.market_id, selections_json(m), conn);
    if (!refused) {
        co_return refused.error();
    }
    if (*refused) {
        co_return discard(std::move(**refused));
    }
    co_return keep(catalog_result{});
}

asio::awaitable<outcome<decided>> market_body(feed::market_message m, market_defaults defaults,
                                              connection& conn) {
    auto event = co_await ensure_event(m.event_id, m.event_name, conn);
    if (!event) {
        co_return event.error();
    }
    auto created = co_await create_market(m, defaults, conn);
    if (!created) {
        co_return created.error();
    }
    if (*created) {
        co_return std::move(**created);
    }
    co_return co_await update_market(std::move(m), conn);
}

// Turns a zero-row odds or status update into the reason.
asio::awaitable<outcome<decided>> diagnose(connection& conn, std::int64_t market_id,
                                           std::optional<std::int64_t> selection_id) {
    auto found = co_await conn.query(diagnose_sql, params{market_id, selection_id.value_or(0)});
    if (!found) {
        co_return found.error();
    }
    if (found->rows() == 0) {
        co_return discard(
            refusal(catalog_status::unknown_market, market_text(market_id) + " does not exist"));
    }
    if (found->text(0, 0) == "closed") {
        co_return discard(refusal(catalog_status::market_closed,
                                  market_text(market_id) + " is closed and stays closed"));
    }
    if (selection_id) {
        co_return discard(refusal(catalog_status::unknown_selection,
                                  "selection " + std::to_string(*selection_id) +
                                      " is not a selection of " + market_text(market_id)));
    }
    co_return failure{errc::bad_result, {}, "market update matched no row without a reason"};
}

asio::awaitable<outcome<decided>> odds_body(feed::odds_message m, connection& conn) {
    auto updated =
        co_await conn.query(update_odds_sql, params{m.market_id, m.selection_id, m.odds_units});
    if (!updated) {
        co_return updated.error();
    }
    if (updated->rows() == 1) {
        co_return keep(catalog_result{});
    }
    auto why = co_await diagnose(conn, m.market_id, m.selection_id);
    co_return why;
}

asio::awaitable<outcome<decided>> status_body(feed::status_message m, connection& conn) {
    auto updated = co_await conn.query(update_status_sql,
                                       params{m.market_id, std::string(feed::to_string(m.target))});
    if (!updated) {
        co_return updated.error();
    }
    if (updated->rows() == 1) {
        co_return keep(catalog_result{});
    }
    auto why = co_await diagnose(conn, m.market_id, std::nullopt);
    co_return why;
}

}  // namespace

std::string_view to_string(catalog_status s) noexcept {
    switch (s) {
        case catalog_status::applied:
            return "applied";
        case catalog_status::invalid:
            return "invalid_request";
        case catalog_status::unknown_market:
            return "unknown_market";
        case catalog_status::unknown_selection:
            return "unknown_selection";
        case catalog_status::market_closed:
            return "market_closed";
        case catalog_status::conflict:
            return "conflict";
    }
    return "unknown";
}

asio::awaitable<outcome<catalog_result>> apply_market(connection& conn,
                                                      feed::market_message message,
                                                      market_defaults defaults,
                                                      transaction_options options,
                                                      std::size_t lock_retries_max) {
    auto done = co_await detail::run_short_transaction<catalog_result>(
        conn, options, lock_retries_max,
        std::bind_front(market_body, std::move(message), defaults));
    co_return done;
}

asio::awaitable<outcome<catalog_result>> apply_odds(connection& conn, feed::odds_message message,
                                                    transaction_options options,
                                                    std::size_t lock_retries_max) {
    auto done = co_await detail::run_short_transaction<catalog_result>(
        conn, options, lock_retries_max, std::bind_front(odds_body, message));
    co_return done;
}

asio::awaitable<outcome<catalog_result>> apply_status(connection& conn,
                                                      feed::status_message message,
                                                      transaction_options options,
                                                      std::size_t lock_retries_max) {
    auto done = co_await detail::run_short_transaction<catalog_result>(
        conn, options, lock_retries_max, std::bind_front(status_body, message));
    co_return done;
}

}  // namespace fulltime::db

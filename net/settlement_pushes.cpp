#include "fulltime/net/settlement_pushes.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/net/connection_registry.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// The first position not yet read: transactions that were still running when the loop
// started (or later) are read; everything older is history.
const std::string start_sql = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text";

// Rows after the cursor written by transactions that have all finished (xact_id below the
// snapshot's xmin), so no row can later appear behind the cursor. Pushes are only for
// bet_settled; the cursor moves over every row read.
const std::string read_sql =
    "SELECT o.xact_id::text, o.outbox_id, o.topic, o.account_id, o.payload::text "
    "FROM outbox o "
    "WHERE (o.xact_id, o.outbox_id) > ($1::xid8, $2::bigint) "
    "  AND o.xact_id < pg_snapshot_xmin(pg_current_snapshot()) "
    "ORDER BY o.xact_id, o.outbox_id LIMIT 2000";

constexpr int rows_per_pass_max = 2000;
constexpr std::chrono::milliseconds stop_poll{100};

}  // namespace

asio::awaitable<void> run_settlement_pushes(db::pool& pool, connection_registry& sessions,
                                            metrics::registry& registry,
                                            std::chrono::milliseconds interval,
                                            std::shared_ptr<const bool> stop) {
    auto& pushed = registry.make_counter("fulltime_settlement_pushes_total",
                                         "bet_settled messages queued on bettors' sessions.");
    auto& read = registry.make_counter("fulltime_outbox_rows_read_total",
                                       "Outbox rows read by the push loop.");
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::string cursor_xact;
    std::int64_t cursor_id = 0;
    while (!*stop) {
        auto conn = co_await pool.acquire();
        if (conn) {
            if (cursor_xact.empty()) {
                auto start = co_await (*conn)->query(start_sql);
                if (start && start->rows() == 1) {
                    auto x = start->get<std::string_view>(0, 0);
                    if (x) {
                        // Rows of transactions below xmin are history: the cursor starts after
                        // the last possible row of xmin - 1.
                        cursor_xact = std::to_string(std::stoull(std::string(*x)) - 1);
                        cursor_id = std::numeric_limits<std::int64_t>::max();
                    }
                } else if (!start) {
                    log::warn("pushes: " + db::describe(start.error()));
                }
            }
            bool full = !cursor_xact.empty();
            while (full && !*stop) {
                auto rows = co_await (*conn)->query(read_sql, db::params(cursor_xact, cursor_id));
                if (!rows) {
                    log::warn("pushes: " + db::describe(rows.error()));
                    break;
                }
                for (int row = 0; row < rows->rows(); ++row) {
                    auto xact = rows->get<std::string_view>(row, 0);
                    auto id = rows->get<std::int64_t>(row, 1);
                    auto topic = rows->get<std::string_view>(row, 2);
                    auto account = rows->get<std::int64_t>(row, 3);
                    auto payload = rows->get<std::string_view>(row, 4);
                    if (!xact || !id) {
                        continue;
                    }
                    cursor_xact = std::string(*xact);
                    cursor_id = *id;
                    read.inc();
                    if (!topic || *topic != "bet_settled" || !account || !payload) {
                        continue;
                    }
                    if (sessions.sessions(*account) == 0) {
                        continue;
                    }
                    auto p = json::parse(*payload, nullptr, false);
                    if (p.is_discarded() || !p.contains("payout") || !p["payout"].is_number()) {
                        continue;
                    }
                    json message = {
                        {"type", "bet_settled"},
                        {"bet_id", p.value("bet_id", std::int64_t{0})},
                        {"version", p.value("version", 0)},
                        {"outcome", p.value("outcome", std::string())},
                        {"payout", money::format_amount(p["payout"].get<std::int64_t>())}};
                    pushed.inc(sessions.push(*account, message));
                }
                full = rows->rows() >= rows_per_pass_max;
            }
        }
        // Wait the interval in slices, so a stop is seen within stop_poll whatever the interval
        // (a pending timer keeps the event loop, and so the process, alive after a drain).
        const auto until = std::chrono::steady_clock::now() + interval;
        while (!*stop && std::chrono::steady_clock::now() < until) {
            timer.expires_at(std::min(until, std::chrono::steady_clock::now() + stop_poll));
            co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }
}

}  // namespace fulltime::net

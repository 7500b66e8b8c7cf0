#include "fulltime/net/settlement_pushes.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/push_statements.hpp"
#include "fulltime/limits.hpp"
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

constexpr std::chrono::milliseconds stop_poll{100};

/// Reads one settlement entry: a settle or a cancel with every field, else nullopt.
std::optional<announced_settlement> read_entry(const json& entry,
                                               std::optional<std::int64_t> account_id) {
    if (!entry.is_object()) {
        return std::nullopt;
    }
    const auto kind = entry.find("kind");
    if (kind != entry.end() && (!kind->is_string() || (*kind != "settle" && *kind != "cancel"))) {
        return std::nullopt;
    }
    if (!account_id) {
        const auto account = entry.find("account_id");
        if (account == entry.end() || !account->is_number_integer()) {
            return std::nullopt;
        }
        account_id = account->get<std::int64_t>();
    }
    const auto bet = entry.find("bet_id");
    const auto version = entry.find("version");
    const auto outcome = entry.find("outcome");
    const auto payout = entry.find("payout");
    if (bet == entry.end() || !bet->is_number_integer() || version == entry.end() ||
        !version->is_number_integer() || outcome == entry.end() || !outcome->is_string() ||
        payout == entry.end() || !payout->is_number_integer()) {
        return std::nullopt;
    }
    return announced_settlement{*account_id, bet->get<std::int64_t>(), version->get<std::int64_t>(),
                                outcome->get<std::string>(), payout->get<std::int64_t>()};
}

}  // namespace

std::vector<announced_settlement> announced_settlements(std::string_view topic,
                                                        std::optional<std::int64_t> account_id,
                                                        std::string_view payload) {
    std::vector<announced_settlement> out;
    if (topic != "settlement_batch" && topic != "bet_settled") {
        return out;
    }
    const auto p = json::parse(payload, nullptr, false);
    if (p.is_discarded()) {
        return out;
    }
    if (topic == "bet_settled") {
        if (account_id) {
            if (auto one = read_entry(p, account_id)) {
                out.push_back(std::move(*one));
            }
        }
        return out;
    }
    const auto entries = p.find("settlements");
    if (!p.is_object() || entries == p.end() || !entries->is_array()) {
        return out;
    }
    out.reserve(entries->size());
    for (const auto& entry : *entries) {
        if (auto one = read_entry(entry, std::nullopt)) {
            out.push_back(std::move(*one));
        }
    }
    return out;
}

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
                auto start = co_await db::read_outbox_start(**conn);
                if (start && *start) {
                    // Rows of transactions below xmin are history: the cursor starts after the
                    // last possible row of xmin - 1.
                    cursor_xact = std::to_string(std::stoull(**start) - 1);
                    cursor_id = std::numeric_limits<std::int64_t>::max();
                } else if (!start) {
                    log::warn("pushes: " + db::describe(start.error()));
                }
            }
            bool full = !cursor_xact.empty();
            while (full && !*stop) {
                auto page = co_await db::read_outbox_page(
                    **conn, cursor_xact, cursor_id,
                    static_cast<std::int64_t>(limits::push_scan_rows_max));
                if (!page) {
                    log::warn("pushes: " + db::describe(page.error()));
                    break;
                }
                // Pushes are only for settles and cancels; the cursor moves over every row read.
                for (const auto& row : page->rows) {
                    cursor_xact = row.xact_id;
                    cursor_id = row.outbox_id;
                    read.inc();
                    if (!row.topic || !row.payload) {
                        continue;
                    }
                    for (auto& s :
                         announced_settlements(*row.topic, row.account_id, *row.payload)) {
                        if (sessions.sessions(s.account_id) == 0) {
                            continue;
                        }
                        json message = {{"type", "bet_settled"},
                                        {"bet_id", s.bet_id},
                                        {"version", s.version},
                                        {"outcome", std::move(s.outcome)},
                                        {"payout", money::format_amount(s.payout)}};
                        pushed.inc(sessions.push(s.account_id, message));
                    }
                }
                full = page->full;
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

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
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr std::chrono::milliseconds stop_poll{100};

/// Holds one entry's fields as the row has them (nullptr: absent).
struct entry_fields {
    const json* account = nullptr;
    const json* bet = nullptr;
    const json* version = nullptr;
    const json* kind = nullptr;
    const json* outcome = nullptr;
    const json* payout = nullptr;
};

/// Returns the value of `key` in `object`, or nullptr.
const json* field(const json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

/// Returns the array at `key` in `object`, or nullptr.
const json* array_field(const json& object, const char* key) {
    const auto* value = field(object, key);
    return value != nullptr && value->is_array() ? value : nullptr;
}

/// Returns element `i` of `array`, or nullptr (no array, or no such element).
const json* element(const json* array, std::size_t i) {
    return array != nullptr && i < array->size() ? &(*array)[i] : nullptr;
}

/// Returns whether `value` is present and an integer.
bool is_integer(const json* value) { return value != nullptr && value->is_number_integer(); }

/// Reads one settlement entry: a settle or a cancel with every field, else nullopt. A row's own
/// account (bet_settled) stands for an entry's.
std::optional<announced_settlement> read_entry(const entry_fields& f,
                                               std::optional<std::int64_t> account_id) {
    if (f.kind != nullptr &&
        (!f.kind->is_string() || (*f.kind != "settle" && *f.kind != "cancel"))) {
        return std::nullopt;
    }
    if (!account_id) {
        if (!is_integer(f.account)) {
            return std::nullopt;
        }
        account_id = f.account->get<std::int64_t>();
    }
    if (!is_integer(f.bet) || !is_integer(f.version) || f.outcome == nullptr ||
        !f.outcome->is_string() || !is_integer(f.payout)) {
        return std::nullopt;
    }
    return announced_settlement{*account_id, f.bet->get<std::int64_t>(),
                                f.version->get<std::int64_t>(), f.outcome->get<std::string>(),
                                f.payout->get<std::int64_t>()};
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
    if (p.is_discarded() || !p.is_object()) {
        return out;
    }
    if (topic == "bet_settled") {
        if (account_id) {
            const entry_fields f{nullptr,          field(p, "bet_id"),  field(p, "version"),
                                 field(p, "kind"), field(p, "outcome"), field(p, "payout")};
            if (auto one = read_entry(f, account_id)) {
                out.push_back(std::move(*one));
            }
        }
        return out;
    }
    // Parallel arrays, entry i the i-th element of each (0010_settlement_batch_arrays.sql); the
    // bet ids say how many entries there are, and an entry missing a field is left out.
    const auto* bets = array_field(p, "bet_id");
    if (bets == nullptr) {
        return out;
    }
    const auto* accounts = array_field(p, "account_id");
    const auto* versions = array_field(p, "version");
    const auto* kinds = array_field(p, "kind");
    const auto* outcomes = array_field(p, "outcome");
    const auto* payouts = array_field(p, "payout");
    out.reserve(bets->size());
    for (std::size_t i = 0; i < bets->size(); ++i) {
        const entry_fields f{element(accounts, i), &(*bets)[i],          element(versions, i),
                             element(kinds, i),    element(outcomes, i), element(payouts, i)};
        if (auto one = read_entry(f, std::nullopt)) {
            out.push_back(std::move(*one));
        }
    }
    return out;
}

asio::awaitable<std::vector<announced_push>> announced_to_open_sessions(
    const std::vector<db::outbox_row>& rows, std::function<bool(std::int64_t)> open) {
    std::vector<announced_push> out;
    const auto executor = co_await asio::this_coro::executor;
    for (const auto& row : rows) {
        if (!row.topic || !row.payload) {
            continue;
        }
        // The batch's transaction: a session told of these settlements reads them in `bets`
        // only once the projector has passed it.
        std::uint64_t xid = 0;
        std::from_chars(row.xact_id.data(), row.xact_id.data() + row.xact_id.size(), xid);
        for (auto& s : announced_settlements(*row.topic, row.account_id, *row.payload)) {
            if (open(s.account_id)) {
                out.push_back(announced_push{std::move(s), xid});
            }
        }
        // The loop's placements (and anything else ready on it) go before the next row.
        co_await asio::post(executor, asio::use_awaitable);
    }
    co_return out;
}

namespace {

using steady = std::chrono::steady_clock;

/// Holds the push loop's counters.
struct push_counters {
    metrics::counter& pushed;
    metrics::counter& read;
    metrics::counter& purged;
};

/// Queues the bet_settled pushes of one page on their bettors' open sessions, each payout in its
/// account's currency (one read of the currencies per page, only when it pushes something).
/// Returns false, having pushed nothing, when the currencies cannot be read.
asio::awaitable<bool> push_page(db::connection& conn, const std::vector<db::outbox_row>& rows,
                                connection_registry& sessions, metrics::counter& pushed) {
    auto pending = co_await announced_to_open_sessions(
        rows, [&sessions](std::int64_t account) { return sessions.sessions(account) != 0; });
    if (pending.empty()) {
        co_return true;
    }
    std::vector<std::int64_t> accounts;
    for (const auto& p : pending) {
        accounts.push_back(p.settlement.account_id);
    }
    std::sort(accounts.begin(), accounts.end());
    accounts.erase(std::unique(accounts.begin(), accounts.end()), accounts.end());
    auto currencies = co_await db::read_account_currencies(conn, accounts);
    if (!currencies) {
        log::warn("pushes: reading the accounts' currencies: " + db::describe(currencies.error()));
        co_return false;
    }
    for (auto& p : pending) {
        auto& s = p.settlement;
        const auto currency = currencies->find(s.account_id);
        if (currency == currencies->end()) {
            continue;  // Accounts are never deleted: a settled bet's account exists.
        }
        json message = {{"type", "bet_settled"},
                        {"bet_id", s.bet_id},
                        {"version", s.version},
                        {"outcome", std::move(s.outcome)},
                        {"payout", money::format_amount(s.payout, currency->second)}};
        pushed.inc(sessions.push(s.account_id, message, p.xid));
    }
    co_return true;
}

/// Stores the cursor after a page. A failure is logged and the loop goes on with the cursor in
/// memory: the next page's store catches up, and a crash before that reads these rows again
/// (pushes are at least once).
asio::awaitable<void> store_cursor(db::connection& conn, std::string consumer,
                                   db::outbox_cursor cursor) {
    auto stored = co_await db::store_outbox_cursor(conn, consumer, std::move(cursor));
    if (!stored) {
        log::warn("pushes: storing the cursor of consumer " + consumer + ": " +
                  db::describe(stored.error()));
    } else if (!*stored) {
        log::warn("pushes: consumer " + consumer +
                  " has no row in outbox_cursors any more; the next start creates it at the tail");
    }
}

/// Reads pages after `cursor` until a short one (or a stop or a failure), pushes what they
/// announce and stores the cursor after each page; returns the cursor after the last row read.
asio::awaitable<db::outbox_cursor> push_pages(db::connection& conn, connection_registry& sessions,
                                              push_counters counters, std::string consumer,
                                              db::outbox_cursor cursor,
                                              std::shared_ptr<const bool> stop) {
    bool full = true;
    while (full && !*stop) {
        auto page = co_await db::read_outbox_page(
            conn, cursor, static_cast<std::int64_t>(limits::push_scan_rows_max));
        if (!page) {
            log::warn("pushes: " + db::describe(page.error()));
            break;
        }
        // Pushes are only for settles and cancels; the cursor moves over every row read. A page
        // whose pushes could not be formatted is read again in the next round.
        if (!co_await push_page(conn, page->rows, sessions, counters.pushed)) {
            break;
        }
        for (const auto& row : page->rows) {
            cursor = db::outbox_cursor{row.xact_id, row.outbox_id};
            counters.read.inc();
        }
        if (!page->rows.empty()) {
            co_await store_cursor(conn, consumer, cursor);
        }
        full = page->full;
    }
    co_return cursor;
}

/// Runs one purge round: batches of at most `batch_max` rows every consumer has read, each its
/// own short transaction, until a batch finds fewer, a stop, or the round's bound (the rest waits
/// for the next round: the loop pushes nothing meanwhile).
asio::awaitable<void> purge_round(db::connection& conn, std::int64_t batch_max,
                                  metrics::counter& purged, std::shared_ptr<const bool> stop) {
    std::int64_t total = 0;
    for (std::size_t batch = 0; batch < limits::outbox_purge_batches_per_round_max && !*stop;
         ++batch) {
        auto deleted = co_await db::purge_outbox(conn, batch_max);
        if (!deleted) {
            log::warn("pushes: purging the outbox: " + db::describe(deleted.error()));
            break;
        }
        purged.inc(static_cast<std::uint64_t>(*deleted));
        total += *deleted;
        if (*deleted < batch_max) {
            break;
        }
    }
    if (total > 0) {
        log::debug("pushes: purged " + std::to_string(total) + " consumed outbox rows");
    }
}

/// Waits `interval` in slices, so a stop is seen within stop_poll whatever the interval (a
/// pending timer keeps the event loop, and so the process, alive after a drain).
asio::awaitable<void> rest(asio::steady_timer& timer, std::chrono::milliseconds interval,
                           std::shared_ptr<const bool> stop) {
    const auto until = steady::now() + interval;
    while (!*stop && steady::now() < until) {
        timer.expires_at(std::min(until, steady::now() + stop_poll));
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

}  // namespace

asio::awaitable<void> run_settlement_pushes(db::pool& pool, connection_registry& sessions,
                                            metrics::registry& registry, push_settings settings,
                                            std::shared_ptr<const bool> stop) {
    push_counters counters{
        registry.make_counter("fulltime_settlement_pushes_total",
                              "bet_settled messages queued on bettors' sessions."),
        registry.make_counter("fulltime_outbox_rows_read_total",
                              "Outbox rows read by the push loop."),
        registry.make_counter("fulltime_outbox_rows_purged_total",
                              "Outbox rows every consumer had read, deleted by the push loop.")};
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::optional<db::outbox_cursor> cursor;
    auto next_purge = steady::now();
    while (!*stop) {
        auto conn = co_await pool.acquire();
        if (conn) {
            if (!cursor) {
                auto opened = co_await db::open_outbox_cursor(**conn, settings.consumer);
                if (opened) {
                    cursor = std::move(*opened);
                    log::info("pushes: consumer " + settings.consumer +
                              " reads the outbox after (" + cursor->xact_id + ", " +
                              std::to_string(cursor->outbox_id) + ")");
                } else {
                    log::warn("pushes: opening the cursor of consumer " + settings.consumer + ": " +
                              db::describe(opened.error()));
                }
            }
            if (cursor) {
                cursor = co_await push_pages(**conn, sessions, counters, settings.consumer,
                                             std::move(*cursor), stop);
            }
            if (!*stop && steady::now() >= next_purge) {
                next_purge = steady::now() + settings.purge_interval;
                co_await purge_round(**conn, settings.purge_batch_max, counters.purged, stop);
            }
        }
        co_await rest(timer, settings.interval, stop);
    }
}

}  // namespace fulltime::net

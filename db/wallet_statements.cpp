#include "fulltime/db/wallet_statements.hpp"

#include "db/short_transaction.hpp"

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// The ledger row's time in the wire format; the same expression everywhere a transfer is shown.
#define FT_WALLET_CREATED_AT \
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

constexpr const char* insert_account_sql =
    "INSERT INTO accounts (account_id, currency) VALUES ($1, $2) "
    "ON CONFLICT (account_id) DO NOTHING "
    "RETURNING account_id, currency, available, reserved, owed";

constexpr const char* select_account_sql =
    "SELECT account_id, currency, available, reserved, owed FROM accounts WHERE account_id = $1";

// Claims the key (wallet_keys: ledger_transfers is partitioned by time and its entry_key is
// unique per partition only) and writes the transfer in one statement. Zero rows: the key was
// taken (a concurrent claim waits here until its transaction ends) or the account is unknown.
#define FT_WALLET_TRANSFER(debit_side, debit_account, credit_side, credit_account)      \
    "WITH k AS (INSERT INTO wallet_keys (entry_key, account_id) "                       \
    "           SELECT $1, a.account_id FROM accounts a WHERE a.account_id = $2 "       \
    "           ON CONFLICT (entry_key) DO NOTHING RETURNING entry_key, account_id) "   \
    "INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id, " \
    "                              credit_side, credit_account_id, amount) "            \
    "SELECT k.entry_key, a.currency, " debit_side ", " debit_account ", " credit_side   \
    ", " credit_account                                                                 \
    ", $3 FROM k JOIN accounts a ON a.account_id = k.account_id "                       \
    "RETURNING transfer_id, currency, " FT_WALLET_CREATED_AT

constexpr const char* insert_deposit_sql =
    FT_WALLET_TRANSFER("'cash'", "NULL::bigint", "'available'", "a.account_id");

constexpr const char* insert_withdrawal_sql =
    FT_WALLET_TRANSFER("'available'", "a.account_id", "'cash'", "NULL::bigint");

#undef FT_WALLET_TRANSFER

// A claimed key's transfer, in the partition of the key's time.
constexpr const char* select_transfer_sql =
    "SELECT t.transfer_id, t.currency, t.amount, "
    "to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') "
    "FROM wallet_keys k JOIN ledger_transfers t "
    "  ON t.entry_key = k.entry_key AND t.created_at = k.created_at "
    "WHERE k.entry_key = $1";

// The balance row last: its lock is held only for this statement and the commit.
constexpr const char* credit_available_sql =
    "UPDATE accounts SET available = available + $2 WHERE account_id = $1 RETURNING available";

constexpr const char* debit_available_sql =
    "UPDATE accounts SET available = available - $2 "
    "WHERE account_id = $1 AND available >= $2 RETURNING available";

#undef FT_WALLET_CREATED_AT

outcome<account_row> read_account(const result& r) {
    account_row a;
    auto id = r.get<std::int64_t>(0, 0);
    auto currency = r.get<std::string>(0, 1);
    auto available = r.get<std::int64_t>(0, 2);
    auto reserved = r.get<std::int64_t>(0, 3);
    auto owed = r.get<std::int64_t>(0, 4);
    if (!id || !currency || !available || !reserved || !owed) {
        return failure{errc::bad_result, {}, "unexpected account row"};
    }
    a.account_id = *id;
    a.currency = std::move(*currency);
    a.available_minor = *available;
    a.reserved_minor = *reserved;
    a.owed_minor = *owed;
    return a;
}

// One attempt of a deposit or withdrawal, inside the transaction run_short_transaction opened.
asio::awaitable<outcome<detail::decision<transfer_result>>> transfer_body(transfer_kind kind,
                                                                          std::int64_t account_id,
                                                                          std::string entry_key,
                                                                          std::int64_t amount_minor,
                                                                          connection& conn) {
    using detail::discard;
    using detail::keep;
    transfer_result out;
    auto inserted = co_await conn.query(
        kind == transfer_kind::deposit ? insert_deposit_sql : insert_withdrawal_sql,
        params{entry_key, account_id, amount_minor});
    if (!inserted) {
        co_return inserted.error();
    }
    if (inserted->rows() == 0) {
        // Either the key exists (committed: a concurrent claim made the insert wait for it) or
        // the account does not.
        auto existing = co_await conn.query(select_transfer_sql, params{entry_key});
        if (!existing) {
            co_return existing.error();
        }
        if (existing->rows() == 0) {
            out.status = transfer_status::unknown_account;
            co_return discard(std::move(out));
        }
        auto id = existing->get<std::int64_t>(0, 0);
        auto currency = existing->get<std::string>(0, 1);
        auto amount = existing->get<std::int64_t>(0, 2);
        auto created_at = existing->get<std::string>(0, 3);
        if (!id || !currency || !amount || !created_at) {
            co_return failure{errc::bad_result, {}, "unexpected ledger row"};
        }
        out.status =
            *amount == amount_minor ? transfer_status::replayed : transfer_status::key_reused;
        out.transfer_id = *id;
        out.amount_minor = *amount;
        out.currency = std::move(*currency);
        out.created_at = std::move(*created_at);
        co_return discard(std::move(out));
    }
    auto id = inserted->get<std::int64_t>(0, 0);
    auto currency = inserted->get<std::string>(0, 1);
    auto created_at = inserted->get<std::string>(0, 2);
    if (!id || !currency || !created_at) {
        co_return failure{errc::bad_result, {}, "unexpected ledger row"};
    }
    out.transfer_id = *id;
    out.amount_minor = amount_minor;
    out.currency = std::move(*currency);
    out.created_at = std::move(*created_at);

    auto balance = co_await conn.query(
        kind == transfer_kind::deposit ? credit_available_sql : debit_available_sql,
        params{account_id, amount_minor});
    if (!balance) {
        co_return balance.error();
    }
    if (balance->rows() == 0) {
        // Only a withdrawal is conditional; the ledger row goes with the rollback.
        out = transfer_result{};
        out.status = transfer_status::insufficient_funds;
        co_return discard(std::move(out));
    }
    out.status = transfer_status::applied;
    co_return keep(std::move(out));
}

asio::awaitable<outcome<detail::decision<create_account_result>>> create_account_body(
    std::int64_t account_id, std::string currency, connection& conn) {
    create_account_result out;
    auto inserted = co_await conn.query(insert_account_sql, params{account_id, currency});
    if (!inserted) {
        co_return inserted.error();
    }
    if (inserted->rows() == 1) {
        auto row = read_account(*inserted);
        if (!row) {
            co_return row.error();
        }
        out.status = account_creation::created;
        out.account = std::move(*row);
        co_return detail::keep(std::move(out));
    }
    auto existing = co_await conn.query(select_account_sql, params{account_id});
    if (!existing) {
        co_return existing.error();
    }
    if (existing->rows() != 1) {
        co_return failure{errc::bad_result, {}, "account conflicted but cannot be read"};
    }
    auto row = read_account(*existing);
    if (!row) {
        co_return row.error();
    }
    out.status = row->currency == currency ? account_creation::existing
                                           : account_creation::currency_conflict;
    out.account = std::move(*row);
    co_return detail::keep(std::move(out));
}

}  // namespace

std::string_view to_string(transfer_kind kind) noexcept {
    return kind == transfer_kind::deposit ? "deposit" : "withdrawal";
}

std::string transfer_entry_key(transfer_kind kind, std::int64_t account_id, std::string_view key) {
    std::string out(to_string(kind));
    out += ':';
    out += std::to_string(account_id);
    out += ':';
    out += key;
    return out;
}

asio::awaitable<outcome<create_account_result>> create_account(connection& conn,
                                                               std::int64_t account_id,
                                                               std::string currency,
                                                               transaction_options options) {
    auto done = co_await detail::run_short_transaction<create_account_result>(
        conn, options, 0, std::bind_front(create_account_body, account_id, std::move(currency)));
    co_return done;
}

asio::awaitable<outcome<std::optional<account_row>>> find_account(connection& conn,
                                                                  std::int64_t account_id) {
    auto found = co_await conn.query(select_account_sql, params{account_id});
    if (!found) {
        co_return found.error();
    }
    if (found->rows() == 0) {
        co_return std::optional<account_row>{};
    }
    auto row = read_account(*found);
    if (!row) {
        co_return row.error();
    }
    co_return std::optional<account_row>{std::move(*row)};
}

asio::awaitable<outcome<transfer_result>> apply_transfer(connection& conn, transfer_kind kind,
                                                         std::int64_t account_id, std::string key,
                                                         std::int64_t amount_minor,
                                                         transaction_options options,
                                                         std::size_t lock_retries_max,
                                                         std::size_t* retries) {
    auto done = co_await detail::run_short_transaction<transfer_result>(
        conn, options, lock_retries_max,
        std::bind_front(transfer_body, kind, account_id, transfer_entry_key(kind, account_id, key),
                        amount_minor),
        retries);
    co_return done;
}

}  // namespace fulltime::db

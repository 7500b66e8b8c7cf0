#pragma once
/// The wallet around the book: accounts, keyed deposits and withdrawals (docs/design.md, "Operator
/// HTTP API"). Each money movement is one ledger transfer plus the balance row update, in one
/// short transaction, balance row last (docs/protocol-feed.md explains the exactly-once rules).

#include "fulltime/db/connection.hpp"
#include "fulltime/db/transaction.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fulltime::db {

/// Holds one account's balance row.
struct account_row {
    std::int64_t account_id = 0;
    std::string currency;
    std::int64_t available_minor = 0;
    std::int64_t reserved_minor = 0;
    std::int64_t owed_minor = 0;  ///< reversed winnings the bettor could not cover (accounts.owed)
};

/// Names what creating an account did.
enum class account_creation { created = 1, existing, currency_conflict };

/// Holds the result of creating an account: the stored row in every case.
struct create_account_result {
    account_creation status = account_creation::created;
    account_row account;
};

/// Creates the account with zero balances, or finds it (idempotent). A stored account with
/// another currency is `currency_conflict` and is left as it is.
boost::asio::awaitable<outcome<create_account_result>> create_account(connection& conn,
                                                                      std::int64_t account_id,
                                                                      std::string currency,
                                                                      transaction_options options);

/// Reads one account; nullopt when it does not exist.
boost::asio::awaitable<outcome<std::optional<account_row>>> find_account(connection& conn,
                                                                         std::int64_t account_id);

/// Names the two keyed movements between the outside world and a bettor's available side.
enum class transfer_kind { deposit = 1, withdrawal };

/// Returns "deposit" or "withdrawal".
std::string_view to_string(transfer_kind kind) noexcept;

/// Returns the ledger entry key of a keyed movement: "deposit:<account>:<key>" or
/// "withdrawal:<account>:<key>" (docs/schema.md).
std::string transfer_entry_key(transfer_kind kind, std::int64_t account_id, std::string_view key);

/// Names what a deposit or withdrawal request did.
enum class transfer_status {
    applied = 1,         ///< moved now
    replayed,            ///< the key had moved the same amount before; nothing moved now
    key_reused,          ///< the key had moved another amount; nothing moved
    insufficient_funds,  ///< a withdrawal above available; nothing written
    unknown_account,     ///< no such account; nothing written
};

/// Holds the result of a deposit or withdrawal. For applied and replayed it describes the one
/// ledger transfer of the key; for key_reused, amount_minor is the amount stored for the key.
struct transfer_result {
    transfer_status status = transfer_status::applied;
    std::int64_t transfer_id = 0;
    std::int64_t amount_minor = 0;
    std::string currency;
    std::string created_at;  ///< "YYYY-MM-DDTHH:MM:SS.ffffffZ"
};

/// Moves `amount_minor` between the currency's cash side and the account's available side
/// exactly once per (kind, account, key): the ledger insert claims the key, then the balance row
/// is updated (conditionally on available for a withdrawal), then commit. Lock timeouts retry
/// the whole transaction at most `lock_retries_max` more times. `retries` (optional) counts them.
boost::asio::awaitable<outcome<transfer_result>> apply_transfer(
    connection& conn, transfer_kind kind, std::int64_t account_id, std::string key,
    std::int64_t amount_minor, transaction_options options, std::size_t lock_retries_max,
    std::size_t* retries = nullptr);

}  // namespace fulltime::db

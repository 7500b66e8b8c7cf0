#include "fulltime/db/transaction.hpp"

#include "db/detail_error.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/limits.hpp"

namespace fulltime::db::detail {

namespace asio = boost::asio;

namespace {

// The values are integers formatted here, never text from a caller, so they can be spliced
// into the statement (SET takes no bound parameters).
bool valid_timeout(std::int64_t ms) { return ms >= 0 && ms <= limits::timeout_ms_max; }

}  // namespace

asio::awaitable<outcome<void>> begin_transaction(connection& conn, transaction_options options) {
    if (!valid_timeout(options.lock_timeout_ms) || !valid_timeout(options.statement_timeout_ms)) {
        co_return make_failure(errc::bad_result, "transaction timeout out of range");
    }
    if (conn.in_transaction()) {
        // Nesting would turn BEGIN into a warning and COMMIT would end the caller's transaction.
        co_return make_failure(errc::bad_result, "a transaction is already open on the connection");
    }
    std::string sql = "BEGIN ISOLATION LEVEL READ COMMITTED";
    if (options.lock_timeout_ms > 0) {
        sql += "; SET LOCAL lock_timeout = " + std::to_string(options.lock_timeout_ms);
    }
    if (options.statement_timeout_ms > 0) {
        sql += "; SET LOCAL statement_timeout = " + std::to_string(options.statement_timeout_ms);
    }
    auto done = co_await conn.execute_script(std::move(sql));
    if (!done) {
        co_await rollback_transaction(conn);
        co_return done.error();
    }
    co_return outcome<void>{};
}

asio::awaitable<outcome<void>> commit_transaction(connection& conn) {
    if (conn.in_failed_transaction()) {
        co_return make_failure(errc::bad_result,
                               "transaction aborted by an earlier error the body did not report");
    }
    auto done = co_await conn.query("COMMIT");
    if (!done) {
        co_return done.error();
    }
    co_return outcome<void>{};
}

asio::awaitable<void> rollback_transaction(connection& conn) {
    if (!conn.in_transaction()) {
        // Either no transaction is open (the server ended it) or the connection is already
        // broken, in which case the server rolls back when the session ends.
        co_return;
    }
    auto done = co_await conn.query("ROLLBACK");
    if (!done || !conn.idle()) {
        conn.close();
    }
}

}  // namespace fulltime::db::detail

#pragma once
/// A short transaction that may end in a refusal (rolled back, not an error) and is retried a
/// bounded number of times when it waited too long for a lock. Used by the catalog and wallet
/// statements, whose refusals (insufficient funds, a selection of another market) are answers,
/// not failures, yet must leave nothing behind.

#include "fulltime/db/transaction.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <exception>
#include <optional>
#include <utility>

namespace fulltime::db::detail {

/// Holds what a transaction body decided: its answer, and whether to commit its writes.
template <class R>
struct decision {
    R value;
    bool commit = true;
};

/// Returns an answer whose writes are kept.
template <class R>
decision<R> keep(R value) {
    return decision<R>{std::move(value), true};
}

/// Returns an answer whose writes are rolled back (a refusal).
template <class R>
decision<R> discard(R value) {
    return decision<R>{std::move(value), false};
}

/// Runs `body(conn)` (returning awaitable<outcome<decision<R>>>) in one transaction: commits
/// when it decides so, rolls back otherwise or on any failure. A retryable failure (lock
/// timeout, deadlock, serialization failure) runs the whole transaction again, at most
/// `retries_max` more times; the last failure is returned after that. `retries` (optional)
/// counts the retries made.
template <class R, class F>
boost::asio::awaitable<outcome<R>> run_short_transaction(connection& conn,
                                                         transaction_options options,
                                                         std::size_t retries_max, F body,
                                                         std::size_t* retries = nullptr) {
    for (std::size_t attempt = 0;; ++attempt) {
        std::optional<failure> failed;
        if (auto begun = co_await begin_transaction(conn, options); !begun) {
            failed = begun.error();
        } else {
            std::exception_ptr thrown;
            std::optional<outcome<decision<R>>> decided;
            try {
                decided.emplace(co_await body(conn));
            } catch (...) {
                // No co_await inside a handler: remember the exception and roll back below.
                thrown = std::current_exception();
            }
            if (thrown) {
                co_await rollback_transaction(conn);
                std::rethrow_exception(thrown);
            }
            if (!*decided) {
                co_await rollback_transaction(conn);
                failed = decided->error();
            } else if (!(*decided)->commit) {
                co_await rollback_transaction(conn);
                co_return std::move((*decided)->value);
            } else if (auto committed = co_await commit_transaction(conn); !committed) {
                co_await rollback_transaction(conn);
                failed = committed.error();
            } else {
                co_return std::move((*decided)->value);
            }
        }
        if (!failed->retryable() || attempt >= retries_max || conn.broken()) {
            co_return *failed;
        }
        if (retries != nullptr) {
            ++*retries;
        }
    }
}

}  // namespace fulltime::db::detail

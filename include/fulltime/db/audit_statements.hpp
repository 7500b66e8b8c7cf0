#pragma once
/// docs/design.md's money invariants as SQL, defined once: `fulltime audit` checks them on a live
/// database, and the tests' invariant checker (tests/support/invariants.cpp, and through the
/// binary tests/e2e/money.py) runs the same statements. docs/schema.md lists them.
///
/// Each invariant is one read-only SELECT: one snapshot, so writers that commit meanwhile can
/// never make it fail falsely (a balance row and its transfers, a bet and its reservation, a
/// settlement row and its legs are each written by one transaction). No statement locks a row;
/// several read a whole table (ledger_transfers, bets), which an operator tool may do.

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fulltime::db {

/// Describes one invariant.
struct audit_invariant {
    std::string_view name;         ///< stable snake_case name, printed by `fulltime audit`
    std::string_view description;  ///< what holds when it passes, one sentence
    /// One SELECT returning one row: the number of violations (bigint) and a text naming up to
    /// a few of them (NULL when there are none).
    std::string_view sql;
};

/// Returns the invariants, in the order `fulltime audit` prints them.
std::span<const audit_invariant> audit_invariants();

/// Holds the finding of one invariant.
struct audit_finding {
    std::int64_t violations = 0;
    std::string sample;  ///< a few violations, for the operator; empty when it passes
};

/// Checks one invariant in its own read-only transaction (BEGIN READ ONLY, SET LOCAL
/// statement_timeout), on `conn`. `statement_timeout_ms` bounds the statement in the server.
boost::asio::awaitable<outcome<audit_finding>> check_invariant(connection& conn,
                                                               const audit_invariant& invariant,
                                                               std::int64_t statement_timeout_ms);

}  // namespace fulltime::db

#pragma once
/// DESIGN.md's money invariants, checked with plain SQL on a live database (no engine code), for
/// the pg tests. tests/e2e/money.py states the same checks for the end-to-end tests.

#include <string>
#include <vector>

namespace fulltime::test {

/// Returns one line per broken invariant (empty when the books are right):
/// - per currency the ledger sums to zero;
/// - every balance equals its ledger sum and is not negative, and every account the ledger
///   names exists;
/// - every bet has exactly one reservation;
/// - every bet has at most one effect in force, and its ledger legs net to what that state
///   means: an open bet holds its stake in `reserved`; a settled or cancelled bet holds nothing
///   there and has received exactly its payout (so every reversal undid exactly its effect);
/// - no idempotency key made two bets.
std::vector<std::string> money_violations(const std::string& conninfo);

}  // namespace fulltime::test

#pragma once
/// docs/design.md's money invariants, checked on a live database for the pg tests: the statements
/// of `fulltime audit` (db/audit_statements.cpp, the one definition; docs/schema.md lists them),
/// run over plain libpq. tests/e2e/money.py runs `fulltime audit` itself.

#include <string>
#include <vector>

namespace fulltime::test {

/// Returns one line per broken invariant (empty when the books are right):
/// "<name> (<description>): <n> violations: <a few of them>".
std::vector<std::string> money_violations(const std::string& conninfo);

}  // namespace fulltime::test

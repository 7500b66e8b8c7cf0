#include "support/invariants.hpp"

#include "fulltime/db/audit_statements.hpp"
#include "support/pg_support.hpp"

namespace fulltime::test {

std::vector<std::string> money_violations(const std::string& conninfo) {
    // The statements of `fulltime audit`, run here over plain libpq (no engine code on the
    // path), so the tests and the operator's tool check one definition of the invariants.
    std::vector<std::string> out;
    for (const auto& invariant : db::audit_invariants()) {
        const std::string sql =
            "SELECT CASE WHEN v > 0 THEN v || ' violations: ' || coalesce(s, '') END FROM (" +
            std::string(invariant.sql) + ") x(v, s)";
        auto offenders = exec_scalar(conninfo, sql);
        if (offenders) {
            out.push_back(std::string(invariant.name) + " (" + std::string(invariant.description) +
                          "): " + *offenders);
        }
    }
    return out;
}

}  // namespace fulltime::test

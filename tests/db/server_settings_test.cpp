// The judgement of the server settings the engine checks at start (db/server_settings.hpp):
// each risky value gives one warning that names it, and a well-set server gives none.

#include "fulltime/db/server_settings.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace fulltime::db;

namespace {

server_settings good() {
    server_settings s;
    s.idle_in_transaction_timeout_ms = 60000;
    s.statement_timeout_ms = 0;
    s.log_lock_waits = true;
    s.max_connections = 100;
    s.reserved_connections = 3;
    s.role = "fulltime";
    s.role_monitors = true;
    return s;
}

engine_sessions engine() { return engine_sessions{true, 30000, 5000, 18}; }

bool mentions(const std::vector<std::string>& warnings, const std::string& what) {
    return std::ranges::any_of(warnings,
                               [&](const std::string& w) { return w.find(what) != w.npos; });
}

}  // namespace

TEST_CASE("a well-set server gives no warning") {
    CHECK(judge_server_settings(good(), engine()).empty());
}

TEST_CASE("each risky setting gives one warning that names it") {
    auto s = good();
    s.idle_in_transaction_timeout_ms = 0;
    auto w = judge_server_settings(s, engine());
    REQUIRE(w.size() == 1);
    CHECK(mentions(w, "idle_in_transaction_session_timeout is 0"));

    s = good();
    s.log_lock_waits = false;
    w = judge_server_settings(s, engine());
    REQUIRE(w.size() == 1);
    CHECK(mentions(w, "log_lock_waits is off"));

    s = good();
    s.max_connections = 22;  // 19 usable for 18 engine connections: no room for anyone else
    w = judge_server_settings(s, engine());
    REQUIRE(w.size() == 1);
    CHECK(mentions(w, "max_connections is 22"));
    s.max_connections = 40;
    CHECK(judge_server_settings(s, engine()).empty());

    s = good();
    s.hot_tables_on_defaults = {"accounts", "outbox"};
    w = judge_server_settings(s, engine());
    REQUIRE(w.size() == 1);
    CHECK(mentions(w, "accounts, outbox"));

    s = good();
    s.role_is_superuser = true;
    w = judge_server_settings(s, engine());
    REQUIRE(w.size() == 1);
    CHECK(mentions(w, "connects as fulltime, a superuser"));

    s = good();
    s.role_monitors = false;
    w = judge_server_settings(s, engine());
    REQUIRE(w.size() == 1);
    CHECK(mentions(w, "GRANT pg_monitor TO fulltime"));
}

TEST_CASE("without session timeouts the engine's own sessions need the server's") {
    auto e = engine();
    e.session_timeouts = false;
    auto s = good();
    auto w = judge_server_settings(s, e);
    REQUIRE(w.size() == 1);
    CHECK(mentions(w, "without a statement_timeout"));
    s.statement_timeout_ms = 5000;
    CHECK(judge_server_settings(s, e).empty());
    s.idle_in_transaction_timeout_ms = 0;
    w = judge_server_settings(s, e);
    CHECK(w.size() == 2);
    CHECK(mentions(w, "without an idle_in_transaction_session_timeout"));
}

// The verdict's rules (core/peak_diagnosis.hpp) on synthetic samples, and the series JSON that
// GET /v1/diagnostics and the dashboard read (net/diagnosis_json.hpp).

#include "fulltime/core/peak_diagnosis.hpp"
#include "fulltime/net/diagnosis_json.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace fulltime;
using diagnosis::sample;
using diagnosis::verdict_code;

namespace {

// A healthy second: 200 placements at 2/6 ms, a connection at once, no lock, no old transaction.
sample quiet_sample(std::int64_t i) {
    sample s;
    s.t_ms = 1'000'000 + i * 1000;
    s.interval_ms = 1000;
    s.placements = 200;
    s.placed = 200;
    s.placement_p50_us = 2'000;
    s.placement_p99_us = 6'000;
    s.queue_p99_us = 1'000;
    s.database_p99_us = 4'000;
    s.pools = {{"placement", 8, 3, 0, 100}, {"background", 2, 1, 0, 50}};
    s.database_ok = true;
    s.backlog_known = true;
    s.tables = {{"accounts", 100, 5000, 4000, "", 0}, {"market_exposure", 50, 5000, 4500, "", 0}};
    return s;
}

std::vector<sample> quiet_run(std::size_t n) {
    std::vector<sample> out;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(quiet_sample(static_cast<std::int64_t>(i)));
    }
    return out;
}

diagnosis::session psql_session(std::int64_t age_ms) {
    diagnosis::session s;
    s.pid = 4242;
    s.application_name = "psql";
    s.state = "idle in transaction";
    s.age_ms = age_ms;
    return s;
}

}  // namespace

TEST_CASE("a quiet window says nothing holds placement back") {
    const auto run = quiet_run(30);
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::quiet);
    CHECK(v.primary.summary == "Nothing holds placement back.");
    CHECK(v.findings.empty());
    CHECK(v.samples == 30);
    REQUIRE_FALSE(v.primary.evidence.empty());
    CHECK(v.primary.evidence.front().find("6.0 ms") != std::string::npos);
}

TEST_CASE("too few samples, or none, is no_data") {
    CHECK(diagnosis::judge({}).primary.code == verdict_code::no_data);
    const auto run = quiet_run(3);
    CHECK(diagnosis::judge(run).primary.code == verdict_code::no_data);
}

TEST_CASE("only the samples inside the window are judged") {
    auto run = quiet_run(60);
    // Lock waits long ago, outside the last 30 s: not held against now.
    for (std::size_t i = 0; i < 20; ++i) {
        run[i].lock_waiters = 3;
        run[i].settled_bets = 5000;
    }
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::quiet);
    CHECK(v.samples <= 30);
}

TEST_CASE("a growing wait for a connection with flat lock waits is connections") {
    auto run = quiet_run(30);
    for (std::size_t i = 10; i < 30; ++i) {
        run[i].queue_p99_us = 40'000;  // ten times the database time
        run[i].placement_queued = 25;
    }
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::connections);
    REQUIRE(v.findings.size() == 1);
    CHECK(v.primary.evidence.front() == "waits for a connection in 20 of 30 samples");
}

TEST_CASE("a connection wait no longer than the database time is not a signal") {
    auto run = quiet_run(30);
    for (auto& s : run) {
        // A group's natural wait: the previous group's commit.
        s.queue_p99_us = 7'000;
        s.database_p99_us = 6'000;
    }
    CHECK(diagnosis::judge(run).primary.code == verdict_code::quiet);
}

TEST_CASE("waiters in a bettor-facing pool alone are connections too") {
    auto run = quiet_run(30);
    for (std::size_t i = 0; i < 30; i += 2) {
        run[i].pools.push_back({"read", 4, 4, 3, 9'000});
    }
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::connections);
    CHECK(v.primary.evidence.at(1) == "pool waiters at most: read 3");
}

TEST_CASE("waits in the background pool hold no placement back") {
    auto run = quiet_run(30);
    for (auto& s : run) {
        s.pools[1].waiting = 2;  // the sweeper, the pushes and diagnostics themselves
        s.pools[1].acquire_wait_p99_us = 20'000;
    }
    CHECK(diagnosis::judge(run).primary.code == verdict_code::quiet);
}

TEST_CASE("lock waits rising with settlement batches are shared rows, with the blocker named") {
    auto run = quiet_run(30);
    diagnosis::session settler;
    settler.pid = 777;
    settler.application_name = "fulltime-settlement";
    settler.state = "active";
    for (std::size_t i = 15; i < 30; ++i) {
        run[i].settled_bets = 8000;
        run[i].batches_running = 2;
        run[i].lock_waiters = 4;
        run[i].queue_p99_us = 50'000;  // the queue grows too: behind the locks
        run[i].blockers = {settler};
    }
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::shared_rows);
    CHECK(v.primary.summary.find("with settlement batches") != std::string::npos);
    REQUIRE(v.primary.culprit);
    CHECK(v.primary.culprit->pid == 777);
    // The connection rule stays quiet while locks explain the queue.
    for (const auto& f : v.findings) {
        CHECK(f.code != verdict_code::connections);
    }
}

TEST_CASE("lock timeouts count as lock waits even when no sample caught a waiter") {
    auto run = quiet_run(30);
    for (std::size_t i = 0; i < 30; i += 3) {
        run[i].lock_timeouts = 12;
    }
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::shared_rows);
    CHECK(v.primary.summary.find("with settlement") == std::string::npos);
}

TEST_CASE("dead tuples climbing behind an old transaction name it by pid") {
    auto run = quiet_run(30);
    for (std::size_t i = 0; i < 30; ++i) {
        run[i].tables[0].dead_tuples = 100 + static_cast<std::int64_t>(i) * 200;
        run[i].oldest_transaction = psql_session(20'000 + static_cast<std::int64_t>(i) * 1000);
        run[i].idle_in_transaction = 1;
        run[i].idle_sessions = {*run[i].oldest_transaction};
    }
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::oldest_transaction);
    REQUIRE(v.primary.culprit);
    CHECK(v.primary.culprit->pid == 4242);
    CHECK(v.primary.summary.find("pid 4242 (psql)") != std::string::npos);
    CHECK(v.primary.evidence.front().find("+5800") != std::string::npos);
}

TEST_CASE("an old transaction without climbing dead tuples, or a young one, is no verdict") {
    auto still = quiet_run(30);
    for (auto& s : still) {
        s.oldest_transaction = psql_session(60'000);
    }
    CHECK(diagnosis::judge(still).primary.code == verdict_code::quiet);

    auto young = quiet_run(30);
    for (std::size_t i = 0; i < 30; ++i) {
        young[i].tables[0].dead_tuples = 100 + static_cast<std::int64_t>(i) * 500;
        young[i].oldest_transaction = psql_session(2'000);
    }
    CHECK(diagnosis::judge(young).primary.code == verdict_code::quiet);
}

TEST_CASE("failed database reads neither accuse nor break the dead-tuple rule") {
    auto run = quiet_run(30);
    for (std::size_t i = 0; i < 30; ++i) {
        run[i].tables[0].dead_tuples = 100 + static_cast<std::int64_t>(i) * 200;
        run[i].oldest_transaction = psql_session(30'000);
        if (i % 2 == 1) {
            run[i].database_ok = false;
            run[i].tables.clear();
            run[i].lock_waiters = 9;  // not read: must not count
        }
    }
    const auto v = diagnosis::judge(run);
    CHECK(v.primary.code == verdict_code::oldest_transaction);
}

TEST_CASE("series: one entry per sample under one time axis, nulls where nothing was read") {
    auto run = quiet_run(3);
    run[1].placements = 0;
    run[1].placement_p50_us.reset();
    run[1].placement_p99_us.reset();
    run[1].database_ok = false;
    run[1].tables.clear();
    run[2].backlog_markets = {{42, 1500, 2}};
    const auto j = net::series_json(run);
    CHECK(j["t_ms"].size() == 3);
    CHECK(j["placement_p99_ms"][0] == 6.0);
    CHECK(j["placement_p99_ms"][1].is_null());
    CHECK(j["placements_per_s"][0] == 200.0);
    CHECK(j["lock_waiters"][1].is_null());
    CHECK(j["dead_tuples"]["accounts"].size() == 3);
    CHECK(j["dead_tuples"]["accounts"][1].is_null());
    CHECK(j["settlement_backlog_age_ms_by_market"]["42"] ==
          nlohmann::json({nullptr, nullptr, 1500}));
    CHECK(j["pool_waiting"]["background"].size() == 3);
    CHECK_FALSE(j.contains("pgbouncer_clients_waiting"));
}

TEST_CASE("verdict JSON carries the code, the evidence and the culprit") {
    auto run = quiet_run(30);
    for (std::size_t i = 0; i < 30; ++i) {
        run[i].tables[0].dead_tuples = 100 + static_cast<std::int64_t>(i) * 200;
        run[i].oldest_transaction = psql_session(30'000);
    }
    const auto j = net::verdict_json(diagnosis::judge(run));
    CHECK(j["code"] == "oldest_transaction");
    CHECK(j["culprit"]["pid"] == 4242);
    CHECK(j["culprit"]["application_name"] == "psql");
    CHECK(j["window_s"] == 30);
    CHECK(j["findings"].size() == 1);
    CHECK(j["evidence"].is_array());
}

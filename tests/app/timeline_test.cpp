// What the rehearsal makes of its measurements: per-second latency, the exit criteria's
// verdicts on made-up runs, and the plot.

#include "app/rehearsal/timeline.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace fulltime::app::rehearsal;

namespace {

const verdict& find(const std::vector<verdict>& vs, const std::string& name) {
    for (const auto& v : vs) {
        if (v.name == name) {
            return v;
        }
    }
    FAIL("no verdict " << name);
    return vs.front();
}

exit_criteria criteria() {
    exit_criteria c;
    c.placement_p99_ms_max = 50;
    c.backlog_age_s_max = 2;
    c.backlog_within_s = 10;
    return c;
}

run_facts facts() {
    run_facts f;
    f.burst_at_s = 10;
    f.duration_s = 40;
    return f;
}

}  // namespace

TEST_CASE("quantile takes the nearest rank") {
    std::vector<double> v{5, 1, 4, 2, 3};
    CHECK(quantile(v, 0.5) == 3);
    CHECK(quantile(v, 0.99) == 5);
    CHECK(quantile(v, 0) == 1);
    std::vector<double> none;
    CHECK(quantile(none, 0.99) == 0);
}

TEST_CASE("per_second buckets replies by their scheduled second") {
    const std::vector<answered> r{{0.1, 1}, {0.9, 3}, {2.5, 10}, {7.0, 99}};
    const auto s = per_second(r, 3);
    REQUIRE(s.size() == 3);
    CHECK(s[0].count == 2);
    CHECK(s[0].p50_ms == 1);
    CHECK(s[0].p99_ms == 3);
    CHECK(s[1].count == 0);
    CHECK(s[2].max_ms == 10);
}

TEST_CASE("a run that recovers in time and stays fast passes every criterion") {
    std::vector<answered> replies;
    for (int i = 0; i < 400; ++i) {
        replies.push_back({i * 0.1, 5});
    }
    auto f = facts();
    f.burst_applied_s = 13;
    const std::vector<backlog_reading> backlog{{9.5, 0},   {10.5, 800}, {12, 3000},
                                               {14, 1500}, {15, 0},     {30, 0}};
    const auto vs = judge(criteria(), f, replies, backlog);
    for (const auto& v : vs) {
        CAPTURE(v.name);
        CHECK(v.passed);
    }
    CHECK(find(vs, "backlog_recovered_s").measured == doctest::Approx(4));
}

TEST_CASE("the p99 counts only placements scheduled while the burst settled") {
    std::vector<answered> replies;
    for (int i = 0; i < 100; ++i) {
        replies.push_back({5.0 + i * 0.01, 500});   // before the burst: slow, not counted
        replies.push_back({10.0 + i * 0.01, 10});   // during
        replies.push_back({20.0 + i * 0.01, 900});  // after it was applied: not counted
    }
    auto f = facts();
    f.burst_applied_s = 12;
    const auto vs = judge(criteria(), f, replies, {{10.5, 2500}, {12, 100}, {30, 0}});
    CHECK(find(vs, "placement_p99_ms").measured == 10);
    CHECK(find(vs, "placement_p99_ms").passed);
}

TEST_CASE("a burst applied at once still measures its first second") {
    // The engine's backlog gauge comes from a periodic scan: a burst that settles within one
    // reads as age 0 throughout. The window is then the burst's first second.
    std::vector<answered> replies{{10.2, 30}, {10.8, 70}, {11.5, 900}};
    auto f = facts();
    f.burst_applied_s = 10.1;
    const auto vs = judge(criteria(), f, replies, {{10.5, 0}, {11, 0}});
    CHECK(find(vs, "placement_p99_ms").measured == 70);
    CHECK(find(vs, "backlog_recovered_s").measured == doctest::Approx(0.5));
}

TEST_CASE("a burst never applied, or a backlog over its limit later on, fails") {
    const std::vector<answered> replies{{11, 1}};
    const auto never = judge(criteria(), facts(), replies, {{11, 0}, {39, 0}});
    CHECK_FALSE(find(never, "backlog_recovered_s").passed);
    CHECK(find(never, "backlog_recovered_s").detail.find("not all applied") != std::string::npos);
    CHECK(find(never, "placement_p99_ms").passed);  // its one reply was fast

    auto f = facts();
    f.burst_applied_s = 11.5;
    const auto stuck = judge(criteria(), f, replies, {{11, 5000}, {20, 100}, {39, 4000}});
    CHECK_FALSE(find(stuck, "backlog_recovered_s").passed);

    f.burst_applied_s = 24;
    const auto late = judge(criteria(), f, replies, {{11, 5000}, {25, 1000}});
    CHECK(find(late, "backlog_recovered_s").measured == doctest::Approx(15));
    CHECK_FALSE(find(late, "backlog_recovered_s").passed);
}

TEST_CASE("a later event's backlog is reported, not counted, when it is gone by the end") {
    // A correction or a cancel after the burst is an event of its own: the backlog it raises
    // is in the detail, and only a backlog still over the limit at the end fails.
    auto f = facts();
    f.burst_applied_s = 12;
    const auto vs =
        judge(criteria(), f, {{11, 1}}, {{11, 3000}, {12, 0}, {16, 2500}, {18, 100}, {30, 0}});
    CHECK(find(vs, "backlog_recovered_s").measured == doctest::Approx(2));
    CHECK(find(vs, "backlog_recovered_s").passed);
    CHECK(find(vs, "backlog_recovered_s").detail.find("2.5 s at most") != std::string::npos);
}

TEST_CASE("money and acknowledgement criteria allow zero") {
    auto f = facts();
    f.lost_acknowledgements = 1;
    f.doubled_acknowledgements = 2;
    f.unsettled_bets = 3;
    f.invariant_failures = -1;  // the audit could not run: a failure, not a pass
    const auto vs = judge(criteria(), f, {{11, 1}}, {{12, 0}});
    CHECK_FALSE(find(vs, "lost_acknowledgements").passed);
    CHECK_FALSE(find(vs, "doubled_acknowledgements").passed);
    CHECK_FALSE(find(vs, "unsettled_bets").passed);
    CHECK_FALSE(find(vs, "invariant_failures").passed);
}

TEST_CASE("no placement during the burst is a failed p99, not a pass") {
    auto f = facts();
    f.burst_applied_s = 12;
    const auto vs = judge(criteria(), f, {{1, 1}}, {{12, 0}});
    CHECK_FALSE(find(vs, "placement_p99_ms").passed);
}

TEST_CASE("the plot is one SVG with both series and every mark, text escaped") {
    const std::vector<second> secs{{0, 10, 2, 8, 9}, {1, 12, 3, 120, 130}};
    const std::vector<mark> marks{{0.5, "burst", "2 results"}, {1.5, "kill_engine", "a<b & c"}};
    const auto svg = render_svg("t <x>", secs, {{0, 0}, {1, 1500}}, marks, 2);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(svg.find("t &lt;x&gt;") != std::string::npos);
    CHECK(svg.find("a&lt;b &amp; c") != std::string::npos);
    CHECK(svg.find(">burst</text>") != std::string::npos);
    CHECK(svg.find(">kill_engine</text>") != std::string::npos);
    CHECK(svg.find("#1f5fa8") != std::string::npos);  // p99
    CHECK(svg.find("#2a7d2a") != std::string::npos);  // backlog
}

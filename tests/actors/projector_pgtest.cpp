// The read model's projector beside a settlement (actors/projector.cpp, read.projector_yield_ms)
// on a scratch database with the real schema: bets placed by the placement's own SQL function
// leave one outbox row each, and the projector runs with pages of one row, so that a backlog of
// them is many more pages than its round of sixteen. Its `settling` here is the test's: it turns
// true once the third row is applied, as a settlement's first batch would while the projector
// was half-way through a round. (Rows, not pages: a page finds no row while another test's
// transaction holds the cluster's xmin below the placements' own, db/projection_pgtest.cpp.)
// - It leaves the rest of its round at the next page, not at the round's end: a settlement that
//   starts under a round would otherwise have the projector's pages beside its batches for up
//   to sixteen of them (docs/decisions/0025-projector-yields-to-settlement.md).
// - Its yield spent, it catches up in full while the settlement still holds its slot (the read
//   model is at most the yield and one catch-up behind), and then leaves its pages again.

#include "fulltime/actors/projector.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/pool.hpp"
#include "support/engine_fixture.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>

namespace {

using namespace std::chrono_literals;
using namespace fulltime;
using namespace fulltime::test;

constexpr std::int64_t backlog_market = 50;
constexpr int backlog_bets = 40;  // pages of one row: two rounds and a half

/// Places `backlog_bets` bets on `backlog_market` (one outbox row each) for the projector to apply.
void place_backlog(const engine& e) {
    e.add_market(backlog_market, {{501, 20000}, {502, 20000}});
    e.fund(1, backlog_bets, 1'000'000);
    for (int i = 0; i < backlog_bets; ++i) {
        REQUIRE(e.place(1 + i, "projector-" + std::to_string(i), 501, 100) == "placed");
    }
}

/// Runs the projector on the engine's background pool with pages of one row and the given
/// yield; `settling` holds once `settle_after` rows are applied. Notes when the projector first
/// asked with them applied, and when it first asked with one more. Stops it when destroyed.
class projector_run {
public:
    using clock = std::chrono::steady_clock;

    projector_run(engine& e, std::int64_t yield_ms, std::uint64_t settle_after)
        : metrics_(registry_), stopped_(std::make_shared<std::atomic<bool>>(false)) {
        read_settings settings = e.cfg().read;
        settings.projector_consumer = "projector";  // the migrations' cursor
        settings.projector_interval_ms = 5;
        settings.projector_page_rows_max = 1;
        settings.projector_yield_ms = yield_ms;
        done_ = e.spawn(actors::run_projector(*e.pools().background, settings, metrics_, stopped_,
                                              [this, settle_after] {
                                                  const auto rows = metrics_.rows.value();
                                                  note(settling_from_, rows >= settle_after);
                                                  note(resumed_at_, rows > settle_after);
                                                  return rows >= settle_after;
                                              }));
    }
    ~projector_run() {
        stopped_->store(true);
        done_.wait_for(10s);
    }
    projector_run(const projector_run&) = delete;
    projector_run& operator=(const projector_run&) = delete;

    std::uint64_t rows() const { return metrics_.rows.value(); }
    std::uint64_t failures() const { return metrics_.failures.value(); }
    bool yielding() const { return metrics_.yielding.value() == 1; }
    /// From the settlement's start to the first row applied after it (zero before both).
    clock::duration left_for() const {
        const auto from = settling_from_.load();
        const auto to = resumed_at_.load();
        return clock::duration(from != 0 && to != 0 ? to - from : 0);
    }

private:
    /// Stores the time in `at` the first time `now_true` holds (called on the loop's thread).
    static void note(std::atomic<clock::rep>& at, bool now_true) {
        if (now_true && at.load() == 0) {
            at.store(clock::now().time_since_epoch().count());
        }
    }

    metrics::registry registry_;
    actors::projector_metrics metrics_;
    std::shared_ptr<std::atomic<bool>> stopped_;
    std::future<void> done_;
    std::atomic<clock::rep> settling_from_{0};
    std::atomic<clock::rep> resumed_at_{0};
};

}  // namespace

TEST_CASE("the projector leaves the rest of its round at the next page once a settlement starts") {
    engine e({});
    place_backlog(e);
    projector_run run(e, 600'000, 3);
    REQUIRE_MESSAGE(eventually([&] { return run.yielding(); }, 30s),
                    "the projector never left its pages to the settlement (rows "
                        << run.rows() << ", failed pages " << run.failures() << ")");
    // Three rows applied before the settlement, none after it: the round's next page was not
    // started. (The round of sixteen pages would have gone on to its end.)
    CHECK(run.rows() == 3);
    CHECK(e.scalar("SELECT count(*) FROM bet_views WHERE market_id = " +
                   std::to_string(backlog_market)) == 3);
}

TEST_CASE("the projector, its yield spent, catches up in full while the settlement goes on") {
    engine e({});
    place_backlog(e);
    projector_run run(e, 200, 3);
    // The settlement never ends here: the projector left its pages for 200 ms, then applied every
    // row, through three rounds, before it could leave them again.
    REQUIRE_MESSAGE(eventually([&] { return run.rows() == backlog_bets && run.yielding(); }, 30s),
                    "rows " << run.rows() << " of " << backlog_bets << ", yielding "
                            << run.yielding() << ", failed pages " << run.failures());
    CHECK(e.scalar("SELECT count(*) FROM bet_views WHERE market_id = " +
                   std::to_string(backlog_market)) == backlog_bets);
    // And it did leave them first: no row for the yield's length after the settlement started.
    // (A lower bound, which a slow machine only lengthens; 10 ms short of the yield because the
    // projector may read its clock just before asking.)
    CHECK(run.left_for() >= 190ms);
}

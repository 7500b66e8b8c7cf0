#include "fulltime/actors/projector.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/projector_yield.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/projection_statements.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

namespace fulltime::actors {

namespace asio = boost::asio;

namespace {

// After a failed page: long enough not to spin against a database that is down.
constexpr std::chrono::milliseconds retry_delay{1000};

// Pages run back to back on one borrowed connection before it goes back to the pool.
constexpr std::size_t pages_per_round = 16;

}  // namespace

projector_metrics::projector_metrics(metrics::registry& registry)
    : rows(registry.make_counter("fulltime_projector_rows_total",
                                 "Outbox rows the projector applied to the read model.")),
      pages(registry.make_counter("fulltime_projector_pages_total",
                                  "Pages of the outbox the projector committed.")),
      failures(registry.make_counter("fulltime_projector_failures_total",
                                     "Projector pages that failed and were retried.")),
      caught_up(registry.make_gauge(
          "fulltime_projector_caught_up",
          "1 when the projector's last page reached the end of the finished transactions.")),
      yielding(registry.make_gauge(
          "fulltime_projector_yielding",
          "1 while the projector leaves its pages to a settlement (read.projector_yield_ms).")) {}

asio::awaitable<void> run_projector(db::pool& pool, read_settings settings,
                                    projector_metrics& metrics,
                                    std::shared_ptr<const std::atomic<bool>> stopped,
                                    std::function<bool()> settling) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto pause = [&timer](std::chrono::milliseconds d) -> asio::awaitable<void> {
        timer.expires_after(d);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    };
    const auto rows_max = static_cast<std::int64_t>(settings.projector_page_rows_max);
    const std::chrono::milliseconds idle{settings.projector_interval_ms};
    reads::projector_yield yield{std::chrono::milliseconds(settings.projector_yield_ms)};
    const auto yields = [&] {
        return yield.yields(settling && settling(), reads::projector_yield::clock::now());
    };
    while (!stopped->load()) {
        // Settlement first, for a while: asked again every `idle`, without a connection.
        const bool waits = yields();
        metrics.yielding.set(waits ? 1 : 0);
        if (waits) {
            co_await pause(idle);
            continue;
        }
        // The connection is borrowed per round, not held: the background pool is small and
        // shared (the keeper, the sweeper, reconciliation, the push loop, diagnostics).
        auto conn = co_await pool.acquire();
        if (!conn) {
            metrics.failures.inc();
            log::warn("projector: no connection: " + db::describe(conn.error()));
            co_await pause(retry_delay);
            continue;
        }
        bool caught_up = false;
        bool failed = false;
        for (std::size_t page = 0; page < pages_per_round && !caught_up && !stopped->load();
             ++page) {
            // Asked again before every page, not only every round: a settlement that starts
            // during a round (a page can take 100 ms with a settlement's rows) would otherwise
            // have the projector chasing its batches for up to a whole round; the benchmark's
            // control leaves its pages from the result on
            // (docs/decisions/0025-projector-yields-to-settlement.md).
            if (page > 0 && yields()) {
                break;
            }
            auto step = co_await db::project_page(**conn, settings.projector_consumer, rows_max);
            if (!step) {
                metrics.failures.inc();
                log::warn("projector: " + db::describe(step.error()));
                failed = true;
                break;
            }
            metrics.pages.inc();
            metrics.rows.inc(static_cast<std::uint64_t>(step->rows));
            // Nothing applied and not caught up: another projector (or a rebuild) holds the
            // cursor; wait as if caught up rather than ask again at once.
            caught_up = step->caught_up || step->rows == 0;
            metrics.caught_up.set(caught_up ? 1 : 0);
        }
        if (caught_up) {
            yield.caught_up();
        }
        *conn = db::pooled_connection{};
        if (failed) {
            co_await pause(retry_delay);
        } else if (caught_up) {
            co_await pause(idle);
        }
    }
}

}  // namespace fulltime::actors

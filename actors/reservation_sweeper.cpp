// The reservation-deadline sweeper: see reservation_sweeper.hpp.

#include "fulltime/actors/reservation_sweeper.hpp"

#include "actors/io_handoff.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/reservation_statements.hpp"
#include "fulltime/limits.hpp"

#include <caf/all.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <vector>

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::sweep_report)

namespace fulltime::actors {

namespace asio = boost::asio;

namespace {

using sweep_tick_atom = caf::atom_constant<caf::atom("rs_tick")>;
using swept_atom = caf::atom_constant<caf::atom("rs_swept")>;

// Adds the per-currency sums of `chunk` into `total` ({"EUR": minor units}).
void add_reserved(nlohmann::json& total, const std::string& chunk) {
    const auto parsed = nlohmann::json::parse(chunk, nullptr, false);
    if (!parsed.is_object()) {
        return;
    }
    for (const auto& [currency, amount] : parsed.items()) {
        if (!amount.is_number_integer()) {
            continue;
        }
        total[currency] = total.value(currency, std::int64_t{0}) + amount.get<std::int64_t>();
    }
}

}  // namespace

bool sweep_memory::clean(std::int64_t market, std::int64_t bet_id_max,
                         std::int64_t applied_seq) const {
    auto it = clean_.find(market);
    return it != clean_.end() && it->second == std::make_pair(bet_id_max, applied_seq);
}

void sweep_memory::remember(std::int64_t market, std::int64_t bet_id_max, std::int64_t applied_seq,
                            bool is_clean) {
    if (!is_clean) {
        clean_.erase(market);
        return;
    }
    if (clean_.size() >= limits::sweep_clean_markets_max && !clean_.contains(market)) {
        clean_.clear();
    }
    clean_[market] = {bet_id_max, applied_seq};
}

namespace {

/// Holds what an overdue market's open bets add up to.
struct open_bets_found {
    std::int64_t open_bets = 0;
    nlohmann::json reserved = nlohmann::json::object();
    std::optional<std::string> oldest;  ///< the oldest open bet's placed_at
};

// Reads an overdue market's open bets, chunk by chunk, at most sweep_chunks_per_market_max.
asio::awaitable<db::outcome<open_bets_found>> read_open_bets(db::connection& conn,
                                                             std::int64_t market_id,
                                                             std::int64_t batch) {
    open_bets_found found;
    std::int64_t after_bet = 0;
    for (std::size_t chunk = 0; chunk < limits::sweep_chunks_per_market_max; ++chunk) {
        auto read = co_await db::read_open_bets_chunk(conn, market_id, after_bet, batch);
        if (!read) {
            co_return read.error();
        }
        if (!read->last_bet_id) {
            break;
        }
        after_bet = *read->last_bet_id;
        found.open_bets += read->open_bets;
        add_reserved(found.reserved, read->reserved_json);
        // RFC 3339 in UTC: text order is time order.
        if (read->oldest_placed_at && (!found.oldest || *read->oldest_placed_at < *found.oldest)) {
            found.oldest = read->oldest_placed_at;
        }
    }
    co_return found;
}

// Counts what note_overdue did to the market's incident.
void count_note(sweep_report& report, const std::string& noted) {
    if (noted == "opened") {
        ++report.opened;
    } else if (noted == "updated") {
        ++report.updated;
    } else if (noted == "resolved") {
        ++report.resolved;
    }
}

}  // namespace

asio::awaitable<sweep_report> sweep_reservations(db::pool& pool, reservation_settings settings,
                                                 std::shared_ptr<sweep_memory> memory) {
    const auto start = std::chrono::steady_clock::now();
    sweep_report report;
    auto fail = [&report, &start](std::string why) {
        report.ok = false;
        report.error = std::move(why);
        report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
        return report;
    };
    const auto batch = static_cast<std::int64_t>(settings.sweep_batch_bets_max);
    std::int64_t after_market = 0;
    while (true) {
        if (memory->stopped) {
            co_return fail("the sweeper is stopping");
        }
        std::vector<db::sweep_market> page;
        {
            auto conn = co_await pool.acquire();
            if (!conn) {
                co_return fail("no background connection: " + db::describe(conn.error()));
            }
            auto read =
                co_await db::read_sweep_page(**conn, after_market, limits::sweep_markets_per_page,
                                             settings.grace_s, settings.default_deadline_s);
            if (!read) {
                co_return fail("reading markets: " + db::describe(read.error()));
            }
            page = std::move(*read);
        }
        for (const auto& m : page) {
            if (memory->stopped) {
                co_return fail("the sweeper is stopping");
            }
            after_market = m.market_id;
            const bool remembered_clean = memory->clean(m.market_id, m.bet_id_max, m.applied_seq);
            if (!m.overdue && !m.incident_open) {
                continue;
            }
            if (m.overdue && remembered_clean && !m.incident_open) {
                continue;
            }
            // One connection per market: held for its chunks (short reads) and its note.
            auto conn = co_await pool.acquire();
            if (!conn) {
                co_return fail("no background connection: " + db::describe(conn.error()));
            }
            open_bets_found found;
            if (m.overdue) {
                ++report.markets_scanned;
                auto read = co_await read_open_bets(**conn, m.market_id, batch);
                if (!read) {
                    co_return fail("reading market " + std::to_string(m.market_id) +
                                   "'s bets: " + db::describe(read.error()));
                }
                found = std::move(*read);
            }
            const std::int64_t open_bets = found.open_bets;
            auto noted = co_await db::note_overdue(**conn, m.market_id, m.deadline, open_bets,
                                                   found.reserved.dump(), found.oldest);
            if (!noted) {
                co_return fail("recording market " + std::to_string(m.market_id) + ": " +
                               db::describe(noted.error()));
            }
            count_note(report, *noted);
            if (m.overdue && open_bets > 0) {
                ++report.overdue_markets;
                report.overdue_bets += open_bets;
            }
            memory->remember(m.market_id, m.bet_id_max, m.applied_seq, m.overdue && open_bets == 0);
        }
        if (static_cast<std::int64_t>(page.size()) < limits::sweep_markets_per_page) {
            break;
        }
    }
    report.ok = true;
    report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    co_return report;
}

// --- The actor ----------------------------------------------------------------------------

namespace {

struct sweeper_settings {
    db::pool* pool = nullptr;
    asio::any_io_executor io;
    reservation_settings reservations;
    std::shared_ptr<sweep_memory> memory;
    reservation_metrics* metrics = nullptr;
};

struct sweeper_state {
    sweeper_settings settings;
    static inline const char* name = "fulltime.reservation_sweeper";
};

using sweeper_actor = caf::stateful_actor<sweeper_state>;

void start_sweep(sweeper_actor* self) {
    const auto& s = self->state.settings;
    detail::run_on_io<swept_atom>(
        self, s.io, [s] { return sweep_reservations(*s.pool, s.reservations, s.memory); });
}

caf::behavior sweeper_behavior(sweeper_actor* self, sweeper_settings settings) {
    self->state.settings = std::move(settings);
    const auto interval =
        std::chrono::milliseconds(self->state.settings.reservations.sweep_interval_ms);
    self->delayed_send(self, interval, sweep_tick_atom::value);
    return {
        [self](sweep_tick_atom) { start_sweep(self); },
        [self, interval](swept_atom, sweep_report& r) {
            auto& m = *self->state.settings.metrics;
            m.sweep_ms.set(r.elapsed.count());
            if (r.ok) {
                m.sweeps.inc();
                m.overdue_bets.set(r.overdue_bets);
                m.overdue_markets.set(r.overdue_markets);
                if (r.opened > 0 || r.resolved > 0) {
                    log::info("reservations: " + std::to_string(r.overdue_markets) +
                              " market(s) hold " + std::to_string(r.overdue_bets) +
                              " open bet(s) past their deadline; incidents opened " +
                              std::to_string(r.opened) + ", resolved " +
                              std::to_string(r.resolved));
                }
            } else if (!self->state.settings.memory->stopped) {
                m.failures.inc();
                log::warn("reservations: sweep failed: " + r.error);
            }
            self->delayed_send(self, interval, sweep_tick_atom::value);
        },
    };
}

}  // namespace

reservation_metrics::reservation_metrics(metrics::registry& registry)
    : overdue_bets(registry.make_gauge(
          "fulltime_reservations_overdue",
          "Open bets (reservations) past their market's deadline, at the last sweep.")),
      overdue_markets(
          registry.make_gauge("fulltime_reservations_overdue_markets",
                              "Markets holding open bets past their deadline, at the last sweep.")),
      sweep_ms(registry.make_gauge("fulltime_reservation_last_sweep_duration_seconds",
                                   "Duration of the last reservation sweep.", {}, 1'000)),
      sweeps(registry.make_counter("fulltime_reservation_sweeps_total",
                                   "Reservation sweeps finished.")),
      failures(registry.make_counter("fulltime_reservation_sweep_failures_total",
                                     "Reservation sweeps that stopped on a database error.")) {}

struct reservation_sweeper::impl {
    caf::actor actor;
    std::shared_ptr<sweep_memory> memory;
    bool stopped = false;
};

reservation_sweeper::reservation_sweeper(caf::actor_system& system, asio::any_io_executor io,
                                         db::pool& background, const config& cfg,
                                         reservation_metrics& metrics)
    : impl_(std::make_shared<impl>()) {
    FULLTIME_ASSERT(cfg.reservations.sweep_interval_ms > 0);
    impl_->memory = std::make_shared<sweep_memory>();
    sweeper_settings s;
    s.pool = &background;
    s.io = std::move(io);
    s.reservations = cfg.reservations;
    s.memory = impl_->memory;
    s.metrics = &metrics;
    impl_->actor = system.spawn(sweeper_behavior, std::move(s));
}

reservation_sweeper::~reservation_sweeper() {
    if (!impl_->stopped) {
        caf::anon_send_exit(impl_->actor, caf::exit_reason::user_shutdown);
    }
}

void reservation_sweeper::stop() {
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    impl_->memory->stopped = true;
    caf::anon_send_exit(impl_->actor, caf::exit_reason::user_shutdown);
}

}  // namespace fulltime::actors

// `fulltime rehearse SCENARIO.json`: a match night, rehearsed. It starts what the scenario
// needs (a PostgreSQL of its own, PgBouncer in transaction pooling mode, the engine), sets up
// accounts and markets through the operator API and the feed, bets on the burst markets, then
// runs the night on one clock: bettors placing at a steady rate, every burst market's result at
// once, and the scenario's faults at their seconds. Afterwards it checks what the exit criteria
// ask (docs/rehearsal.md) and writes a JSON report and a latency-over-time plot. Exit status 0:
// every criterion met; 1: one was not; 2: a bad scenario; 4: the stack or the run failed.

#include "app/commands/commands.hpp"
#include "app/commands/exit_status.hpp"
#include "app/commands/secret.hpp"
#include "app/rehearsal/driver.hpp"
#include "app/rehearsal/scenario.hpp"
#include "app/rehearsal/stack.hpp"
#include "app/rehearsal/timeline.hpp"

#include "fulltime/core/money.hpp"
#include "fulltime/db/audit_statements.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/rehearsal_statements.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <stdexcept>
#include <thread>

namespace fulltime::app {

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace rehearsal;

constexpr std::size_t account_workers = 16;
// How long after the run's end the bettors may still wait for replies to what they sent.
constexpr double drain_s = 30;
constexpr std::int64_t live_market_base = 1000;
constexpr std::int64_t burst_market_base = 2000;

using options = rehearse_options;

void progress(const std::string& line) {
    std::fprintf(stderr, "rehearse: %s\n", line.c_str());
    std::fflush(stderr);
}

// One connection of the rehearsal's own to the database, for its faults and its checks. Each
// call runs one coroutine to its end on a private event loop (blocking: main thread only).
class sql_session {
public:
    explicit sql_session(const std::string& url, const std::string& application) {
        db::session_options s;
        s.application_name = application;
        auto conn = run(db::connection::open(ioc_.get_executor(), url, std::chrono::seconds(10),
                                             std::chrono::seconds(120), false, s));
        if (!conn) {
            throw_failure("cannot connect to the database", conn.error());
        }
        conn_ = std::move(*conn);
    }

    db::connection& conn() { return *conn_; }

    template <class T>
    T run(asio::awaitable<T> work) {
        auto done = asio::co_spawn(ioc_, std::move(work), asio::use_future);
        ioc_.restart();
        ioc_.run();
        return done.get();
    }

private:
    asio::io_context ioc_;
    std::unique_ptr<db::connection> conn_;
};

/// Holds one burst market's feed state: the events sent, the next seq.
struct burst_market {
    std::int64_t market_id = 0;
    std::int32_t next_seq = 1;
    json result;  ///< the result as first sent (for a duplicate)
};

json result_event(std::int64_t market_id, std::int64_t seq, const std::string& key,
                  std::int64_t winner) {
    return {{"type", "result"},
            {"market_id", market_id},
            {"seq", seq},
            {"event_key", key},
            {"outcomes", json::array({{{"selection_id", winner}, {"result", "win"}}})}};
}

// Posts one feed event; returns a sentence on what came back. Throws when it was refused.
std::string post_event(driver& d, const json& event) {
    const auto r = d.call("POST", "/v1/feed", event.dump(), std::chrono::seconds(60));
    if (r.status != 200) {
        throw std::runtime_error(
            "POST /v1/feed " + event.value("event_key", "") + ": " +
            (r.status == 0 ? r.error : std::to_string(r.status) + " " + r.body));
    }
    const auto ack = json::parse(r.body, nullptr, false);
    const bool duplicate = ack.is_object() && ack.value("duplicate", false);
    return event.value("type", "") + " seq " + std::to_string(event.value("seq", 0)) +
           (duplicate ? " acknowledged as a duplicate" : " acknowledged");
}

/// Holds the run's checks after the night.
struct acknowledgement_check {
    std::int64_t lost = 0;
    std::int64_t doubled = 0;
    std::vector<std::string> examples;
};

acknowledgement_check check_acknowledgements(const std::vector<acknowledgement>& requests,
                                             const std::vector<db::keyed_bet>& stored) {
    acknowledgement_check out;
    std::map<std::string, std::vector<std::int64_t>> bets_of;
    for (const auto& b : stored) {
        bets_of[b.idempotency_key].push_back(b.bet_id);
    }
    const auto note = [&out](std::string what) {
        if (out.examples.size() < 10) {
            out.examples.push_back(std::move(what));
        }
    };
    for (const auto& r : requests) {
        const auto it = bets_of.find(r.key);
        const std::size_t n = it == bets_of.end() ? 0 : it->second.size();
        if (n > 1 || r.conflicting) {
            ++out.doubled;
            note(r.key + ": " + std::to_string(n) + " bets stored" +
                 (r.conflicting ? ", replies disagreed" : ""));
        } else if (!r.answered) {
            ++out.lost;
            note(r.key + ": never answered (" + std::to_string(r.sends) + " sends)");
        } else if (r.outcome == "placed" && (n != 1 || it->second.front() != r.bet_id)) {
            ++out.lost;
            note(r.key + ": answered placed as bet " + std::to_string(r.bet_id) +
                 (n == 0 ? ", no bet stored" : ", stored as another bet"));
        } else if (r.outcome != "placed" && n != 0) {
            ++out.doubled;
            note(r.key + ": answered '" + r.outcome + "' but a bet is stored");
        }
    }
    return out;
}

// Reads and checks the scenario, with the command line's overrides. Throws
// std::invalid_argument (exit 2) on a bad one.
scenario read_scenario(const options& opt) {
    scenario s;
    {
        std::ifstream in(opt.scenario_path);
        if (!in) {
            throw std::invalid_argument("cannot read " + opt.scenario_path);
        }
        const auto doc = json::parse(in, nullptr, false);
        if (doc.is_discarded()) {
            throw std::invalid_argument(opt.scenario_path + " is not valid JSON");
        }
        s = parse_scenario(doc);
    }
    s.pgbouncer = s.pgbouncer || opt.pgbouncer;
    if (!opt.database_url.empty()) {
        for (const auto& f : s.faults) {
            if (f.kind == fault_kind::restart_postgres) {
                throw std::invalid_argument(
                    "restart_postgres restarts the rehearsal's own PostgreSQL: run without "
                    "--database-url, or take the fault out of the scenario");
            }
        }
    }
    return s;
}

// Makes the run's private work directory under the system's temporary one.
std::string make_work_dir() {
    std::string work_template = (fs::temp_directory_path() / "fulltime-rehearse-XXXXXX").string();
    if (::mkdtemp(work_template.data()) == nullptr) {
        throw std::runtime_error("cannot create a work directory under " +
                                 fs::temp_directory_path().string());
    }
    const std::string work_dir = work_template;
    // Entered by the cluster's and PgBouncer's user (postgres) when running as root.
    fs::permissions(work_dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
    return work_dir;
}

// On a database that is not its own, the rehearsal's ids start past a base of its run so that
// two rehearsals never meet (accounts and markets are the operator's ids).
std::int64_t id_base_of(const options& opt) {
    return opt.database_url.empty() ? 0
                                    : (std::chrono::duration_cast<std::chrono::seconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count() %
                                       1'000'000) *
                                          1'000'000;
}

void say_plan(const scenario& s, const std::string& work_dir) {
    progress("scenario " + s.name + ": " + std::to_string(s.accounts) + " accounts, " +
             std::to_string(s.live_markets) + " live and " + std::to_string(s.burst_markets) +
             " burst markets, " + std::to_string(s.connections) + " bettors at " +
             fixed(s.rate_per_s, 0) + "/s for " + fixed(s.duration_s, 0) + " s, " +
             std::to_string(s.faults.size()) + " faults" +
             (s.pgbouncer ? ", through PgBouncer" : "") + "; work directory " + work_dir);
}

// --- set-up: markets, accounts, bets on the burst markets -------------------------------------

json market_message(const scenario& s, std::int64_t id_base, std::int64_t market_id,
                    const std::string& name) {
    return json{
        {"type", "market"},
        {"market_id", market_id},
        {"event_id", id_base + 1},
        {"event_name", "rehearsal " + s.name},
        {"name", name},
        {"status", "open"},
        {"stake_min", "0.01"},
        // A market's limits are minor units of the bets' currency, written with two decimals.
        {"stake_max", money::format_amount(std::max<std::int64_t>(s.stake_minor, 100) * 100,
                                           limits::market_amount_digits)},
        {"liability_limit",
         money::format_amount(s.deposit_minor * s.accounts, limits::market_amount_digits)},
        {"exposure_shards", 16},
        {"selections",
         json::array(
             {{{"selection_id", market_id * 10 + 1}, {"name", "home"}, {"odds", "1.90"}},
              {{"selection_id", market_id * 10 + 2}, {"name", "away"}, {"odds", "2.10"}}})}};
}

/// Holds what the set-up made: the markets' selections and the burst markets' feed state.
struct setup {
    std::vector<std::int64_t> live_selections;
    std::vector<burst_market> bursts;
    std::vector<std::int64_t> burst_selections;
    double setup_s = 0;  ///< creating and funding the accounts, and the preload
};

setup set_up(driver& d, const scenario& s, std::int64_t id_base, const std::string& run_tag) {
    setup out;
    for (std::int64_t i = 1; i <= s.live_markets; ++i) {
        const auto m = id_base + live_market_base + i;
        post_event(d, market_message(s, id_base, m, "live " + std::to_string(i)));
        out.live_selections.push_back(m * 10 + 1);
        out.live_selections.push_back(m * 10 + 2);
    }
    for (std::int64_t i = 1; i <= s.burst_markets; ++i) {
        const auto m = id_base + burst_market_base + i;
        post_event(d, market_message(s, id_base, m, "burst " + std::to_string(i)));
        out.bursts.push_back(burst_market{m, 1, nullptr});
        out.burst_selections.push_back(m * 10 + 1);
        out.burst_selections.push_back(m * 10 + 2);
    }
    progress("markets created; creating and funding " + std::to_string(s.accounts) + " accounts");
    const auto setup_start = std::chrono::steady_clock::now();
    d.create_accounts(id_base + 1, s.accounts,
                      money::format_amount(s.deposit_minor, rehearsal_currency), account_workers);
    std::vector<std::int64_t> all_accounts;
    for (std::int64_t a = 1; a <= s.accounts; ++a) {
        all_accounts.push_back(id_base + a);
    }
    const std::string preload_prefix = "rh-" + run_tag + "-pre-";
    if (s.preload_bets > 0) {
        progress("placing " + std::to_string(s.preload_bets) +
                 " bets on the burst markets at up to " + fixed(s.preload_rate_per_s, 0) + "/s");
        d.preload(all_accounts, out.burst_selections,
                  money::format_amount(s.stake_minor, rehearsal_currency), s.preload_bets,
                  s.preload_rate_per_s, preload_prefix);
    }
    out.setup_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
    return out;
}

// --- the night ----------------------------------------------------------------------------------

bettor_settings bettors_of(const scenario& s, std::int64_t id_base,
                           std::vector<std::int64_t> live_selections, const std::string& run_tag) {
    bettor_settings bs;
    const auto stride = std::max<std::int64_t>(1, s.accounts / s.connections);
    for (std::int64_t i = 0; i < s.connections; ++i) {
        bs.accounts.push_back(id_base + 1 + i * stride);
    }
    bs.selections = std::move(live_selections);
    bs.stake = money::format_amount(s.stake_minor, rehearsal_currency);
    bs.rate_per_s = s.rate_per_s;
    bs.retry_ratio = s.retry_ratio;
    bs.key_prefix = "rh-" + run_tag + "-live-";
    bs.duration_s = s.duration_s;
    return bs;
}

/// Holds what the night's steps act on; lives in run() until the report is written.
struct night {
    driver& d;
    stack& st;
    const scenario& s;
    const std::string& run_tag;
    std::vector<burst_market>& bursts;
    std::optional<sql_session> idle_session;
};

/// Holds one thing done at its second of the night; `act` says what happened or throws.
struct step {
    double at_s;
    std::string label;
    std::function<std::string()> act;
};

std::string post_burst(night& n) {
    for (auto& b : n.bursts) {
        b.result = result_event(b.market_id, b.next_seq++,
                                "rh-" + n.run_tag + "-result-" + std::to_string(b.market_id),
                                b.market_id * 10 + 1);
        post_event(n.d, b.result);
    }
    std::vector<std::int64_t> ids;
    for (const auto& b : n.bursts) {
        ids.push_back(b.market_id);
    }
    n.d.watch_applied(std::move(ids), 1);
    return std::to_string(n.bursts.size()) + " results posted (" +
           std::to_string(n.s.preload_bets) + " bets to settle)";
}

std::string terminate_backends(night& n, const std::string& pool) {
    sql_session q(n.st.database_url(), "fulltime-rehearse");
    const auto ended = q.run(db::terminate_sessions(
        q.conn(), pool == "all" ? std::string("fulltime-") : "fulltime-" + pool));
    if (!ended) {
        throw std::runtime_error(db::describe(ended.error()));
    }
    return std::to_string(*ended) + " sessions of the " + pool + " pool ended";
}

std::string hold_idle(night& n, std::int64_t account, double hold_s) {
    n.idle_session.emplace(n.st.database_url(), "rehearsal-idle-session");
    const auto held = n.idle_session->run(db::hold_account_row(n.idle_session->conn(), account));
    if (!held || !*held) {
        throw std::runtime_error(held ? "no such account" : db::describe(held.error()));
    }
    return "an outside session holds account " + std::to_string(account) + "'s row, idle, for " +
           fixed(hold_s, 1) + " s";
}

std::string release_idle(night& n) {
    if (n.idle_session) {
        n.idle_session->run(db::release_row(n.idle_session->conn()));
        n.idle_session.reset();
    }
    return std::string("the idle session rolled back");
}

burst_market& burst_of(night& n, std::int64_t k) {
    return n.bursts[static_cast<std::size_t>(k - 1)];
}

std::string correct_result(night& n, std::int64_t k, bool reordered) {
    auto& b = burst_of(n, k);
    const auto key = "rh-" + n.run_tag + "-correct-" + std::to_string(b.market_id);
    json rollback = {{"type", "rollback_result"},
                     {"market_id", b.market_id},
                     {"seq", b.next_seq},
                     {"event_key", key + "-rollback"}};
    json again = result_event(b.market_id, b.next_seq + 1, key + "-result", b.market_id * 10 + 2);
    b.next_seq += 2;
    std::string said;
    if (reordered) {
        said = post_event(n.d, again) + "; ";
        std::this_thread::sleep_for(std::chrono::seconds(1));
        said += post_event(n.d, rollback);
    } else {
        said = post_event(n.d, rollback) + "; " + post_event(n.d, again);
    }
    return "market " + std::to_string(b.market_id) +
           (reordered ? " (new result first, its gap filled "
                        "a second later): "
                      : ": ") +
           said;
}

std::string cancel_market(night& n, std::int64_t k) {
    auto& b = burst_of(n, k);
    json cancel = {{"type", "cancel"},
                   {"market_id", b.market_id},
                   {"seq", b.next_seq++},
                   {"event_key", "rh-" + n.run_tag + "-cancel-" + std::to_string(b.market_id)}};
    return "market " + std::to_string(b.market_id) + ": " + post_event(n.d, cancel);
}

// The steps that inject one fault (two for an idle transaction: its hold and its release; the
// row it holds is the first bettor's account's).
std::vector<step> fault_steps(night& n, const fault& f, const bettor_settings& bs) {
    const std::string label = name(f.kind);
    switch (f.kind) {
        case fault_kind::kill_engine:
            return {{f.at_s, label, [&n] {
                         return "SIGKILL; listening again after " +
                                fixed(n.st.kill_and_restart_engine(), 2) + " s";
                     }}};
        case fault_kind::restart_postgres:
            return {{f.at_s, label, [&n] {
                         return "fast shutdown and start in " + fixed(n.st.restart_database(), 2) +
                                " s";
                     }}};
        case fault_kind::terminate_backends:
            return {{f.at_s, label + " " + f.pool,
                     [&n, pool = f.pool] { return terminate_backends(n, pool); }}};
        case fault_kind::idle_in_transaction:
            return {{f.at_s, label,
                     [&n, account = bs.accounts.front(), hold = f.hold_s] {
                         return hold_idle(n, account, hold);
                     }},
                    {f.at_s + f.hold_s, "release idle", [&n] { return release_idle(n); }}};
        case fault_kind::drop_connections:
            return {{f.at_s, label, [&n] {
                         n.d.drop_connections();
                         return std::string(
                             "every bettor's connection closed; they reconnect and "
                             "send again what had no reply");
                     }}};
        case fault_kind::duplicate_result:
            return {{f.at_s, label, [&n, k = f.market] {
                         auto& b = burst_of(n, k);
                         return "market " + std::to_string(b.market_id) + ": " +
                                post_event(n.d, b.result);
                     }}};
        case fault_kind::correct_result:
            return {{f.at_s, label, [&n, k = f.market, reordered = f.reordered] {
                         return correct_result(n, k, reordered);
                     }}};
        case fault_kind::cancel_market:
            return {{f.at_s, label, [&n, k = f.market] { return cancel_market(n, k); }}};
    }
    return {};
}

// The burst and every fault, in the order of their seconds (ties in the scenario's order).
std::vector<step> plan_steps(night& n, const bettor_settings& bs) {
    std::vector<step> steps;
    steps.push_back({n.s.burst_at_s, "burst", [&n] { return post_burst(n); }});
    for (const auto& f : n.s.faults) {
        std::ranges::move(fault_steps(n, f, bs), std::back_inserter(steps));
    }
    std::stable_sort(steps.begin(), steps.end(),
                     [](const step& a, const step& b) { return a.at_s < b.at_s; });
    return steps;
}

/// Holds what the night left: its marks, the faults that could not be injected, what the
/// bettors and the sampler saw.
struct night_record {
    std::vector<mark> marks;
    std::vector<std::string> fault_errors;
    bettor_results results;
    driver::samples sampled;
};

// Runs the night on the rehearsal's clock: the bettors all through, each step at its second.
night_record run_night(driver& d, const std::vector<step>& steps, const bettor_settings& bs) {
    night_record out;
    d.start_clock();
    d.start_sampling();
    d.start_bettors(bs);
    for (const auto& stp : steps) {
        while (d.now_s() < stp.at_s) {
            std::this_thread::sleep_for(std::chrono::milliseconds(std::clamp<std::int64_t>(
                static_cast<std::int64_t>((stp.at_s - d.now_s()) * 1000), 1, 200)));
        }
        const double at = d.now_s();
        std::string detail;
        try {
            detail = stp.act();
        } catch (const std::exception& e) {
            detail = std::string("FAILED: ") + e.what();
            out.fault_errors.push_back(stp.label + " at " + fixed(at, 1) + " s: " + e.what());
        }
        progress("t=" + fixed(at, 1) + " s " + stp.label + ": " + detail);
        out.marks.push_back(mark{at, stp.label, detail});
    }
    progress("waiting for the bettors' last replies");
    out.results = d.finish_bettors(drain_s);
    // A second of readings after the night, so the backlog's last state is seen.
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    out.sampled = d.finish_sampling();
    return out;
}

// --- the checks ---------------------------------------------------------------------------------

/// Holds what the checks after the night found.
struct checks {
    run_facts facts;
    acknowledgement_check acks;
    json audit = json::array();
};

std::int64_t count_unsettled(sql_session& q, const std::vector<burst_market>& bursts) {
    std::vector<std::int64_t> ids;
    for (const auto& b : bursts) {
        ids.push_back(b.market_id);
    }
    auto unsettled = q.run(db::count_unsettled_bets(q.conn(), ids));
    if (!unsettled) {
        throw std::runtime_error("counting unsettled bets: " + db::describe(unsettled.error()));
    }
    return *unsettled;
}

// Checks every money invariant as `fulltime audit` does; returns how many are broken (-1 when
// one could not be checked) and adds each one's finding to `audit`.
std::int64_t audit_invariants(sql_session& q, json& audit) {
    std::int64_t broken = 0;
    for (const auto& inv : db::audit_invariants()) {
        auto f = q.run(db::check_invariant(q.conn(), inv, 600'000));
        if (!f) {
            broken = -1;
            audit.push_back({{"name", std::string(inv.name)}, {"error", db::describe(f.error())}});
            break;
        }
        broken += f->violations > 0 ? 1 : 0;
        audit.push_back({{"name", std::string(inv.name)},
                         {"passed", f->violations == 0},
                         {"violations", f->violations},
                         {"sample", f->sample}});
    }
    return broken;
}

checks check_run(sql_session& q, const scenario& s, const night_record& rec,
                 const std::string& key_prefix, const std::vector<burst_market>& bursts) {
    checks out;
    out.facts.burst_at_s = s.burst_at_s;
    out.facts.duration_s = s.duration_s;
    if (rec.sampled.applied_s) {
        out.facts.burst_applied_s = rec.sampled.applied_s;
    }
    {
        auto stored = q.run(db::read_keyed_bets(q.conn(), key_prefix));
        if (!stored) {
            throw std::runtime_error("reading the run's bets: " + db::describe(stored.error()));
        }
        out.acks = check_acknowledgements(rec.results.requests, *stored);
        out.facts.lost_acknowledgements = out.acks.lost;
        out.facts.doubled_acknowledgements = out.acks.doubled;
    }
    out.facts.unsettled_bets = count_unsettled(q, bursts);
    out.facts.invariant_failures = audit_invariants(q, out.audit);
    return out;
}

// --- the report ---------------------------------------------------------------------------------

/// Holds the verdicts: each criterion's and the run's.
struct judgement {
    std::vector<verdict> verdicts;
    std::vector<second> secs;
    bool passed = false;
};

judgement judge_run(const scenario& s, const night_record& rec, const checks& found) {
    judgement out;
    out.verdicts = judge(s.criteria, found.facts, rec.results.replies, rec.sampled.backlog);
    out.secs = per_second(rec.results.replies, s.duration_s);
    out.passed = rec.fault_errors.empty() && std::all_of(out.verdicts.begin(), out.verdicts.end(),
                                                         [](const verdict& v) { return v.passed; });
    return out;
}

std::map<std::string, std::uint64_t> outcomes_of(const bettor_results& results) {
    std::map<std::string, std::uint64_t> outcomes;
    for (const auto& r : results.requests) {
        ++outcomes[r.answered ? r.outcome : "unanswered"];
    }
    return outcomes;
}

json report_of(const scenario& s, const setup& made, const night_record& rec, const checks& found,
               const judgement& j, const std::map<std::string, std::uint64_t>& outcomes) {
    const auto& results = rec.results;
    json report;
    report["scenario"] = to_json(s);
    report["passed"] = j.passed;
    report["criteria"] = to_json(j.verdicts);
    report["fault_errors"] = rec.fault_errors;
    report["setup_s"] = made.setup_s;
    report["burst_applied_s"] =
        rec.sampled.applied_s ? json(*rec.sampled.applied_s - s.burst_at_s) : json(nullptr);
    json marks_json = json::array();
    for (const auto& m : rec.marks) {
        marks_json.push_back({{"at_s", m.at_s}, {"what", m.label}, {"detail", m.detail}});
    }
    report["timeline"] = marks_json;
    json seconds_json = json::array();
    for (const auto& sec : j.secs) {
        seconds_json.push_back({{"t_s", sec.at_s},
                                {"placements", sec.count},
                                {"p50_ms", sec.p50_ms},
                                {"p99_ms", sec.p99_ms},
                                {"max_ms", sec.max_ms}});
    }
    report["per_second"] = seconds_json;
    json backlog_json = json::array();
    for (const auto& b : rec.sampled.backlog) {
        backlog_json.push_back({{"t_s", b.at_s}, {"age_ms", b.age_ms}});
    }
    report["backlog"] = backlog_json;
    json diag_json = json::array();
    for (const auto& v : rec.sampled.verdicts) {
        diag_json.push_back({{"t_s", v.at_s}, {"code", v.code}, {"summary", v.summary}});
    }
    report["diagnosis"] = diag_json;
    report["audit"] = found.audit;
    report["bettors"] = {{"requests", results.requests.size()},
                         {"outcomes", outcomes},
                         {"reconnects", results.reconnects},
                         {"retries", results.retries},
                         {"silent_connections", results.silent_connections},
                         {"acknowledgement_problems", found.acks.examples}};
    return report;
}

void write_plot(const std::string& svg_path, const scenario& s, const night_record& rec,
                const judgement& j) {
    std::ofstream svg(svg_path);
    svg << render_svg("fulltime rehearse " + s.name +
                          ": placement latency and settlement "
                          "backlog",
                      j.secs, rec.sampled.backlog, rec.marks, s.duration_s);
}

void write_report(const std::string& json_path, const json& report) {
    std::ofstream out(json_path);
    out << report.dump(2) << "\n";
}

// --- the summary --------------------------------------------------------------------------------

void print_summary(const scenario& s, const night_record& rec, const judgement& j,
                   const std::map<std::string, std::uint64_t>& outcomes) {
    const auto& results = rec.results;
    std::printf("rehearsal %s: %s\n", s.name.c_str(), j.passed ? "PASSED" : "FAILED");
    for (const auto& v : j.verdicts) {
        std::printf("  %-4s %-26s measured %10s  limit %10s  (%s)\n", v.passed ? "PASS" : "FAIL",
                    v.name.c_str(), fixed(v.measured, 2).c_str(), fixed(v.limit, 2).c_str(),
                    v.detail.c_str());
    }
    for (const auto& e : rec.fault_errors) {
        std::printf("  FAIL fault could not be injected: %s\n", e.c_str());
    }
    std::printf(
        "  placements: %zu requests, %llu reconnects, %llu sent again, %llu connections "
        "given up as silent\n",
        results.requests.size(), static_cast<unsigned long long>(results.reconnects),
        static_cast<unsigned long long>(results.retries),
        static_cast<unsigned long long>(results.silent_connections));
    for (const auto& [o, n] : outcomes) {
        std::printf("    %-32s %llu\n", o.c_str(), static_cast<unsigned long long>(n));
    }
    std::printf("  peak diagnosis during the run:\n");
    for (const auto& v : rec.sampled.verdicts) {
        std::printf("    t=%6.1f s  %s: %s\n", v.at_s, v.code.c_str(), v.summary.c_str());
    }
}

int run(const config& cfg, const options& opt) {
    const scenario s = read_scenario(opt);
    const std::string out_dir = opt.out_dir.empty() ? "rehearsal-" + s.name : opt.out_dir;
    fs::create_directories(out_dir);
    const std::string work_dir = make_work_dir();
    const std::int64_t id_base = id_base_of(opt);
    const std::string run_tag = random_hex(4);
    say_plan(s, work_dir);

    stack_settings ss;
    ss.work_dir = work_dir;
    ss.database_url = opt.database_url;
    ss.pgbouncer = s.pgbouncer;
    ss.token_secret = random_hex(32);
    std::optional<stack> running;
    running.emplace(cfg, ss);
    stack& st = *running;
    progress("engine listening on 127.0.0.1:" + std::to_string(st.port()) +
             (st.owns_database() ? " (private PostgreSQL" : " (given database") +
             (s.pgbouncer ? ", PgBouncer in transaction mode)" : ")"));

    driver d(st.port(), ss.token_secret);
    setup made = set_up(d, s, id_base, run_tag);

    const bettor_settings bs = bettors_of(s, id_base, made.live_selections, run_tag);
    night n{d, st, s, run_tag, made.bursts, std::nullopt};
    auto steps = plan_steps(n, bs);
    progress("set up in " + fixed(made.setup_s, 1) + " s; the night starts (" +
             fixed(s.duration_s, 0) + " s)");
    const night_record rec = run_night(d, steps, bs);

    progress("checking acknowledgements, settlement and the money invariants");
    sql_session q(st.database_url(), "fulltime-rehearse");
    const checks found = check_run(q, s, rec, bs.key_prefix, made.bursts);
    st.stop_engine();

    const judgement j = judge_run(s, rec, found);
    const std::string svg_path = out_dir + "/" + s.name + ".svg";
    const std::string json_path = out_dir + "/" + s.name + ".json";
    write_plot(svg_path, s, rec, j);
    const auto outcomes = outcomes_of(rec.results);
    write_report(json_path, report_of(s, made, rec, found, j, outcomes));
    std::error_code ec;
    fs::copy_file(st.engine_log(), out_dir + "/" + s.name + "-engine.log",
                  fs::copy_options::overwrite_existing, ec);
    running.reset();  // PgBouncer and the cluster stop before their directory goes

    print_summary(s, rec, j, outcomes);
    std::printf("  report %s, plot %s\n", json_path.c_str(), svg_path.c_str());
    if (!opt.keep) {
        fs::remove_all(work_dir, ec);
    } else {
        std::printf("  work directory kept: %s\n", work_dir.c_str());
    }
    return j.passed ? 0 : 1;
}

}  // namespace

int rehearse_command(const config& cfg, const rehearse_options& o) {
    // A bad scenario (std::invalid_argument) exits 2, a stack that failed 4, through main.
    return run(cfg, o);
}

}  // namespace fulltime::app

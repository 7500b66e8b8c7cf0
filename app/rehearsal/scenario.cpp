#include "app/rehearsal/scenario.hpp"

#include "fulltime/core/money.hpp"
#include "fulltime/limits.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

namespace fulltime::app::rehearsal {

namespace {

using nlohmann::json;

/// Formats an amount of the rehearsal's accounts' currency.
std::string amount_text(std::int64_t minor) {
    return money::format_amount(minor, rehearsal_currency);
}

constexpr std::array<std::pair<fault_kind, const char*>, 8> fault_names{{
    {fault_kind::kill_engine, "kill_engine"},
    {fault_kind::terminate_backends, "terminate_backends"},
    {fault_kind::restart_postgres, "restart_postgres"},
    {fault_kind::duplicate_result, "duplicate_result"},
    {fault_kind::correct_result, "correct_result"},
    {fault_kind::cancel_market, "cancel_market"},
    {fault_kind::idle_in_transaction, "idle_in_transaction"},
    {fault_kind::drop_connections, "drop_connections"},
}};

// Bounds that keep one rehearsal process within what one machine can drive: each is far above
// the shipped scenarios and far below what would exhaust memory or file descriptors.
constexpr std::int64_t accounts_max = 1'000'000;
constexpr std::int64_t markets_max = 1'000;
constexpr std::int64_t preload_bets_max = 10'000'000;
constexpr std::int64_t connections_max = 2'000;
constexpr double rate_per_s_max = 100'000;
constexpr double duration_s_max = 24 * 3600;
constexpr std::size_t faults_max = 100;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
    throw std::invalid_argument(where + ": " + what);
}

// Reads members of one JSON object, refusing the ones it was not asked for.
class object_reader {
public:
    object_reader(const json& doc, std::string where) : doc_(doc), where_(std::move(where)) {
        if (!doc_.is_object()) {
            fail(where_.empty() ? "scenario" : where_, "must be an object");
        }
    }

    const json* find(const char* key) {
        seen_.insert(key);
        const auto it = doc_.find(key);
        return it == doc_.end() ? nullptr : &*it;
    }

    /// Returns the member `key`, which must be present (`why` says why in the error).
    const json& required(const char* key, const char* why = nullptr) {
        const json* v = find(key);
        if (v == nullptr) {
            fail(path(key),
                 why == nullptr ? std::string("is required") : std::string("is required: ") + why);
        }
        return *v;
    }

    std::string path(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

    std::string text(const char* key, std::string fallback, bool required = false) {
        const json* v = find(key);
        if (v == nullptr) {
            if (required) {
                fail(path(key), "is required");
            }
            return fallback;
        }
        if (!v->is_string()) {
            fail(path(key), "must be a string");
        }
        return v->get<std::string>();
    }

    std::int64_t integer(const char* key, std::int64_t low, std::int64_t high,
                         std::optional<std::int64_t> fallback = std::nullopt) {
        const json* v = find(key);
        if (v == nullptr) {
            if (!fallback) {
                fail(path(key), "is required");
            }
            return *fallback;
        }
        if (!v->is_number_integer()) {
            fail(path(key), "must be an integer");
        }
        const auto n = v->get<std::int64_t>();
        if (n < low || n > high) {
            fail(path(key), "must be from " + std::to_string(low) + " to " + std::to_string(high));
        }
        return n;
    }

    double number(const char* key, double low, double high,
                  std::optional<double> fallback = std::nullopt) {
        const json* v = find(key);
        if (v == nullptr) {
            if (!fallback) {
                fail(path(key), "is required");
            }
            return *fallback;
        }
        if (!v->is_number()) {
            fail(path(key), "must be a number");
        }
        const auto n = v->get<double>();
        if (!std::isfinite(n) || n < low || n > high) {
            fail(path(key), "must be from " + json(low).dump() + " to " + json(high).dump());
        }
        return n;
    }

    bool boolean(const char* key, bool fallback) {
        const json* v = find(key);
        if (v == nullptr) {
            return fallback;
        }
        if (!v->is_boolean()) {
            fail(path(key), "must be true or false");
        }
        return v->get<bool>();
    }

    std::int64_t amount(const char* key) {
        const json* v = find(key);
        if (v == nullptr) {
            fail(path(key), "is required");
        }
        if (!v->is_string()) {
            fail(path(key), "must be an amount as a string, e.g. \"10.00\"");
        }
        const auto parsed = money::parse_positive_amount(v->get<std::string>(),
                                                         money::minor_digits(rehearsal_currency));
        if (!parsed) {
            fail(path(key), std::string(money::describe(parsed.error())));
        }
        return *parsed;
    }

    /// Refuses every member that no call asked for: a misspelt field must not fall back to a
    /// default silently.
    void finish() const {
        for (const auto& [key, value] : doc_.items()) {
            if (seen_.count(key) == 0) {
                fail(path(key.c_str()), "is not a known field");
            }
        }
    }

private:
    const json& doc_;
    std::string where_;
    std::set<std::string> seen_;
};

fault_kind kind_of(const std::string& text, const std::string& where) {
    for (const auto& [kind, n] : fault_names) {
        if (text == n) {
            return kind;
        }
    }
    fail(where, "unknown fault \"" + text +
                    "\" (kill_engine, terminate_backends, restart_postgres, duplicate_result, "
                    "correct_result, cancel_market, idle_in_transaction, drop_connections)");
}

fault parse_fault(const json& doc, const std::string& where, const scenario& s) {
    object_reader r(doc, where);
    fault f;
    f.kind = kind_of(r.text("kind", "", true), r.path("kind"));
    f.at_s = r.number("at_s", 0, s.duration_s);
    switch (f.kind) {
        case fault_kind::terminate_backends:
            f.pool = r.text("pool", "", true);
            if (f.pool != "placement" && f.pool != "settlement" && f.pool != "background" &&
                f.pool != "all") {
                fail(r.path("pool"), "must be placement, settlement, background or all");
            }
            break;
        case fault_kind::idle_in_transaction:
            f.hold_s = r.number("hold_s", 0.1, 3600);
            break;
        case fault_kind::duplicate_result:
        case fault_kind::correct_result:
        case fault_kind::cancel_market:
            f.market = r.integer("market", 1, std::max<std::int64_t>(s.burst_markets, 1), 1);
            if (s.burst_markets == 0) {
                fail(r.path("kind"), "needs a burst market (markets.burst is 0)");
            }
            if (f.at_s < s.burst_at_s) {
                fail(r.path("at_s"),
                     "must not be before the burst (burst.at_s): the fault "
                     "acts on the market's result");
            }
            if (f.kind == fault_kind::correct_result) {
                f.reordered = r.boolean("reordered", false);
            }
            break;
        case fault_kind::restart_postgres:
        case fault_kind::kill_engine:
        case fault_kind::drop_connections:
            break;
    }
    r.finish();
    return f;
}

// A bettor's account pays its share of the live bets and of the preload (with a fifth to spare
// for retries), or its later bets would be refused insufficient_funds.
void check_deposit(const scenario& s) {
    const double live_bets = s.rate_per_s * s.duration_s / static_cast<double>(s.connections);
    const double preload_bets =
        std::ceil(static_cast<double>(s.preload_bets) / static_cast<double>(s.accounts));
    const double needed = static_cast<double>(s.stake_minor) * (live_bets * 1.2 + preload_bets + 1);
    if (needed > static_cast<double>(s.deposit_minor)) {
        fail("accounts.deposit", "is too small: a bettor's account places about " +
                                     amount_text(static_cast<std::int64_t>(needed)) +
                                     " in stakes during the run");
    }
}

}  // namespace

const char* name(fault_kind k) noexcept {
    for (const auto& [kind, n] : fault_names) {
        if (kind == k) {
            return n;
        }
    }
    return "?";
}

scenario parse_scenario(const json& doc) {
    object_reader top(doc, "");
    scenario s;
    s.name = top.text("name", "", true);
    if (s.name.empty() || s.name.size() > 64 ||
        !std::all_of(s.name.begin(), s.name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        })) {
        fail("name", "must be 1-64 characters of a-z, 0-9, - and _ (it names the report files)");
    }
    s.description = top.text("description", "");
    s.pgbouncer = top.boolean("pgbouncer", false);

    {
        object_reader r(top.required("accounts"), "accounts");
        s.accounts = r.integer("count", 1, accounts_max);
        s.deposit_minor = r.amount("deposit");
        r.finish();
    }
    {
        object_reader r(top.required("markets"), "markets");
        s.live_markets = r.integer("live", 1, markets_max);
        s.burst_markets = r.integer("burst", 0, markets_max);
        r.finish();
    }
    {
        object_reader r(top.required("bettors"), "bettors");
        s.connections = r.integer("connections", 1, connections_max);
        s.rate_per_s = r.number("rate_per_s", 0.1, rate_per_s_max);
        s.stake_minor = r.amount("stake");
        s.retry_ratio = r.number("retry_ratio", 0, 0.5, 0.0);
        r.finish();
        if (s.connections > s.accounts) {
            fail("bettors.connections", "must not exceed accounts.count (one account each)");
        }
    }
    {
        object_reader r(top.required("timeline"), "timeline");
        s.duration_s = r.number("duration_s", 5, duration_s_max);
        s.burst_at_s = r.number("burst_at_s", 0, s.duration_s);
        r.finish();
    }
    {
        const json* p = top.find("preload");
        if (p != nullptr) {
            object_reader r(*p, "preload");
            s.preload_bets = r.integer("bets", 0, preload_bets_max);
            s.preload_rate_per_s = r.number("rate_per_s", 1, rate_per_s_max, 1000.0);
            r.finish();
        }
        if (s.preload_bets > 0 && s.burst_markets == 0) {
            fail("preload.bets", "needs a burst market to bet on (markets.burst is 0)");
        }
        check_deposit(s);
    }
    if (const json* f = top.find("faults"); f != nullptr) {
        if (!f->is_array() || f->size() > faults_max) {
            fail("faults", "must be an array of at most " + std::to_string(faults_max) + " faults");
        }
        for (std::size_t i = 0; i < f->size(); ++i) {
            s.faults.push_back(parse_fault((*f)[i], "faults[" + std::to_string(i) + "]", s));
        }
        std::stable_sort(s.faults.begin(), s.faults.end(),
                         [](const fault& a, const fault& b) { return a.at_s < b.at_s; });
    }
    {
        object_reader r(top.required("criteria", "the exit criteria are stated before the run"),
                        "criteria");
        s.criteria.placement_p99_ms_max = r.number("placement_p99_ms_max", 0.1, 600'000);
        s.criteria.backlog_age_s_max = r.number("backlog_age_s_max", 0, 3600);
        s.criteria.backlog_within_s = r.number("backlog_within_s", 0, duration_s_max);
        r.finish();
        if (s.burst_at_s + s.criteria.backlog_within_s > s.duration_s) {
            fail("criteria.backlog_within_s",
                 "must end within the run (timeline.burst_at_s + backlog_within_s <= duration_s)");
        }
    }
    top.finish();
    return s;
}

json to_json(const scenario& s) {
    json faults = json::array();
    for (const auto& f : s.faults) {
        json j = {{"kind", name(f.kind)}, {"at_s", f.at_s}};
        if (f.kind == fault_kind::terminate_backends) {
            j["pool"] = f.pool;
        } else if (f.kind == fault_kind::idle_in_transaction) {
            j["hold_s"] = f.hold_s;
        } else if (f.kind == fault_kind::duplicate_result || f.kind == fault_kind::correct_result ||
                   f.kind == fault_kind::cancel_market) {
            j["market"] = f.market;
            if (f.kind == fault_kind::correct_result) {
                j["reordered"] = f.reordered;
            }
        }
        faults.push_back(std::move(j));
    }
    json out = {{"name", s.name},
                {"description", s.description},
                {"pgbouncer", s.pgbouncer},
                {"accounts", {{"count", s.accounts}, {"deposit", amount_text(s.deposit_minor)}}},
                {"markets", {{"live", s.live_markets}, {"burst", s.burst_markets}}},
                {"bettors",
                 {{"connections", s.connections},
                  {"rate_per_s", s.rate_per_s},
                  {"stake", amount_text(s.stake_minor)},
                  {"retry_ratio", s.retry_ratio}}},
                {"timeline", {{"duration_s", s.duration_s}, {"burst_at_s", s.burst_at_s}}},
                {"faults", std::move(faults)},
                {"criteria",
                 {{"placement_p99_ms_max", s.criteria.placement_p99_ms_max},
                  {"backlog_age_s_max", s.criteria.backlog_age_s_max},
                  {"backlog_within_s", s.criteria.backlog_within_s}}}};
    if (s.preload_bets > 0) {
        out["preload"] = {{"bets", s.preload_bets}, {"rate_per_s", s.preload_rate_per_s}};
    }
    return out;
}

}  // namespace fulltime::app::rehearsal

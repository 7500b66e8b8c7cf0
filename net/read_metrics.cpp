#include "fulltime/net/read_metrics.hpp"

#include "fulltime/core/metrics.hpp"
#include "fulltime/db/read_router.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace fulltime::net {

namespace {

void header(std::string& out, const char* name, const char* help, const char* type) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const char* name, const std::string& labels, double value) {
    char number[64];
    std::snprintf(number, sizeof number, "%.17g", value);
    out += std::string(name) + (labels.empty() ? "" : "{" + labels + "}") + " " + number + "\n";
}

}  // namespace

void add_read_metrics(metrics::registry& registry, const db::read_router& router) {
    registry.add_collector([&router](std::string& out) {
        const db::read_router_stats s = router.stats();
        header(out, "fulltime_reads_total",
               "Bettor reads by where they ran and why (db/read_router.hpp).", "counter");
        for (std::size_t i = 0; i < static_cast<std::size_t>(db::read_route::count_); ++i) {
            const auto route = static_cast<db::read_route>(i);
            const bool standby = route == db::read_route::fresh || route == db::read_route::waited;
            sample(out, "fulltime_reads_total",
                   metrics::label("target", standby ? "standby" : "primary") + "," +
                       metrics::label("route", db::route_name(route)),
                   static_cast<double>(s.routed[i]));
        }
        if (s.has_standby) {
            header(out, "fulltime_standby_up",
                   "1 when the engine's last sample of its standby (database.read_url) answered.",
                   "gauge");
            sample(out, "fulltime_standby_up", "", s.standby_up ? 1 : 0);
            header(out, "fulltime_standby_staleness_seconds",
                   "How far behind the primary the standby is at most, as the engine dates it "
                   "(-1: not known yet).",
                   "gauge");
            sample(out, "fulltime_standby_staleness_seconds", "",
                   s.staleness_ms < 0 ? -1.0 : static_cast<double>(s.staleness_ms) / 1000.0);
            header(out, "fulltime_standby_lag_bytes",
                   "The primary's last sampled WAL position minus the standby's replay position.",
                   "gauge");
            sample(out, "fulltime_standby_lag_bytes", "",
                   s.primary_lsn > s.standby_replay_lsn
                       ? static_cast<double>(s.primary_lsn - s.standby_replay_lsn)
                       : 0.0);
            header(out, "fulltime_standby_sample_failures_total",
                   "Samples of the standby that failed (down, or not in recovery).", "counter");
            sample(out, "fulltime_standby_sample_failures_total", "",
                   static_cast<double>(s.sample_failures));
        }
    });
}

std::string read_state_json(const db::read_router& router) {
    const db::read_router_stats s = router.stats();
    nlohmann::json routes = nlohmann::json::object();
    for (std::size_t i = 0; i < static_cast<std::size_t>(db::read_route::count_); ++i) {
        routes[std::string(db::route_name(static_cast<db::read_route>(i)))] = s.routed[i];
    }
    nlohmann::json j{{"standby", s.has_standby}, {"routes", std::move(routes)}};
    if (s.has_standby) {
        j["standby_up"] = s.standby_up;
        j["staleness_ms"] =
            s.staleness_ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.staleness_ms);
        j["primary_lsn"] = db::format_lsn(s.primary_lsn);
        j["standby_replay_lsn"] = db::format_lsn(s.standby_replay_lsn);
        j["sample_failures"] = s.sample_failures;
    }
    return j.dump();
}

}  // namespace fulltime::net

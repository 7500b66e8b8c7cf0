#include "app/commands/database_target.hpp"

#include "app/commands/exit_status.hpp"

#include "fulltime/core/log.hpp"

#include <libpq-fe.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <regex>
#include <stdexcept>

namespace fulltime::app {

std::string redact_conninfo(const std::string& conninfo) {
    static const std::regex uri_password(R"(^([a-z]+://[^:/@]*:)[^@]*@)");
    static const std::regex kv_password(R"((password\s*=\s*)('[^']*'|\S+))");
    std::string out = std::regex_replace(conninfo, uri_password, "$1***@");
    return std::regex_replace(out, kv_password, "$1***");
}

namespace {

// Connects once, synchronously (startup only), to turn an unreachable or misspelt database into
// a clear error before anything else starts.
void check_reachable(const std::string& conninfo, std::int64_t timeout_ms) {
    const std::string timeout_s = std::to_string(std::max<std::int64_t>(1, timeout_ms / 1000));
    const char* keys[] = {"dbname", "connect_timeout", nullptr};
    const char* values[] = {conninfo.c_str(), timeout_s.c_str(), nullptr};
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdbParams(keys, values, 1),
                                                      &PQfinish);
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        std::string msg = PQerrorMessage(conn.get());
        // libpq's messages span lines; the first one names the cause.
        while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) {
            msg.pop_back();
        }
        std::string one_line;
        for (char ch : msg) {
            const bool space = ch == '\n' || ch == '\t' || ch == ' ';
            if (!space || (!one_line.empty() && one_line.back() != ' ')) {
                one_line += space ? ' ' : ch;
            }
        }
        msg = one_line;
        throw unreachable("cannot reach the database at " + redact_conninfo(conninfo) + ": " + msg);
    }
}

}  // namespace

database_target open_database_target(const config& cfg, bool create_cluster) {
    database_target t;
    if (cfg.database.url.empty()) {
        try {
            t.cluster.emplace(embedded_cluster::start(cfg, create_cluster));
        } catch (const no_cluster& e) {
            throw unreachable(e.what());  // no database to reach: exit 3
        }
        t.conninfo = t.cluster->conninfo();
    } else {
        t.conninfo = cfg.database.url;
        log::info("using the database at " + redact_conninfo(t.conninfo));
    }
    check_reachable(t.conninfo, cfg.database.connect_timeout_ms);
    // A standby that cannot be reached now is not a reason not to start: reads go to the
    // primary until it answers (db/read_router.hpp).
    t.standby_conninfo = cfg.database.read_url;
    if (!t.standby_conninfo.empty()) {
        try {
            check_reachable(t.standby_conninfo, cfg.database.connect_timeout_ms);
        } catch (const std::exception& e) {
            log::warn(std::string("standby: ") + e.what() + "; reads use the primary meanwhile");
        }
    }
    return t;
}

void leave_adopted_cluster_running(database_target& target) {
    if (target.cluster && target.cluster->adopted()) {
        target.cluster->leave_running();
    }
}

database_target open_command_target(const config& cfg) {
    database_target target = open_database_target(cfg, false);
    leave_adopted_cluster_running(target);
    return target;
}

}  // namespace fulltime::app

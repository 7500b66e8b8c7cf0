#include "support/pg_support.hpp"

#include "fulltime/config/config.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/migrations.hpp"
#include "fulltime/db/pool.hpp"

#include <libpq-fe.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fulltime::test {

std::string server_url() {
    const char* url = std::getenv("FULLTIME_TEST_DATABASE_URL");
    if (url == nullptr || *url == '\0') {
        std::fprintf(stderr,
                     "FULLTIME_TEST_DATABASE_URL is not set: run the tests with scripts/test, "
                     "which starts the PostgreSQL they need\n");
        std::abort();
    }
    return url;
}

std::string admin_url() {
    const char* url = std::getenv("FULLTIME_TEST_ADMIN_URL");
    return url == nullptr || *url == '\0' ? server_url() : std::string(url);
}

namespace {

std::string quote_value(const std::string& v) {
    std::string out = "'";
    for (char c : v) {
        if (c == '\'' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    out += "'";
    return out;
}

}  // namespace

namespace {

// Returns the keywords and values set in `conninfo` (a URI or keyword/value string).
std::vector<std::pair<std::string, std::string>> conninfo_options(const std::string& conninfo) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (opts == nullptr) {
        std::string msg = err != nullptr ? err : "bad conninfo";
        PQfreemem(err);
        throw std::runtime_error(msg);
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
        if (o->val != nullptr) {
            out.emplace_back(o->keyword, o->val);
        }
    }
    PQconninfoFree(opts);
    return out;
}

}  // namespace

std::string with_dbname(const std::string& conninfo, const std::string& dbname) {
    std::string out;
    for (const auto& [keyword, value] : conninfo_options(conninfo)) {
        if (keyword != "dbname") {
            out += keyword + "=" + quote_value(value) + " ";
        }
    }
    return out + "dbname=" + quote_value(dbname);
}

std::optional<std::string> user_of(const std::string& conninfo) {
    for (const auto& [keyword, value] : conninfo_options(conninfo)) {
        if (keyword == "user" && !value.empty()) {
            return value;
        }
    }
    return std::nullopt;
}

namespace {

using connection_ptr = std::unique_ptr<PGconn, decltype(&PQfinish)>;

connection_ptr connect_or_throw(const std::string& conninfo) {
    connection_ptr conn(PQconnectdb(conninfo.c_str()), &PQfinish);
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        throw std::runtime_error(std::string("connect: ") + PQerrorMessage(conn.get()));
    }
    return conn;
}

std::optional<std::string> exec_scalar(PGconn* conn, const std::string& sql) {
    std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(conn, sql.c_str()), &PQclear);
    const auto status = PQresultStatus(res.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        throw std::runtime_error(sql + ": " + PQresultErrorMessage(res.get()));
    }
    if (status == PGRES_TUPLES_OK && PQntuples(res.get()) > 0 && !PQgetisnull(res.get(), 0, 0)) {
        return std::string(PQgetvalue(res.get(), 0, 0));
    }
    return std::nullopt;
}

/// The connections exec_scalar keeps, by conninfo, for the calling thread.
std::map<std::string, connection_ptr>& open_connections() {
    thread_local std::map<std::string, connection_ptr> open;
    return open;
}

}  // namespace

std::optional<std::string> exec_scalar(const std::string& conninfo, const std::string& sql) {
    // A connection costs the server a process (tens of milliseconds of CPU on the test machine)
    // and tests poll with this function: each thread keeps one connection per conninfo, left
    // with no transaction open, as a connection of its own per call was. One found broken (a
    // test restarted the server, a database was dropped with FORCE) is opened again and the
    // statement sent once more: a broken connection ran nothing of it, or (lost in the middle)
    // rolled it back.
    const auto run = [&sql](PGconn* conn) {
        const auto leave_idle = [conn] {
            if (PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) != PQTRANS_IDLE) {
                PQclear(PQexec(conn, "ROLLBACK"));
            }
        };
        try {
            auto result = exec_scalar(conn, sql);
            leave_idle();
            return result;
        } catch (const std::runtime_error&) {
            leave_idle();
            throw;
        }
    };
    auto& open = open_connections();
    auto it = open.find(conninfo);
    if (it == open.end() || PQstatus(it->second.get()) != CONNECTION_OK) {
        it = open.insert_or_assign(conninfo, connect_or_throw(conninfo)).first;
    }
    try {
        return run(it->second.get());
    } catch (const std::runtime_error&) {
        if (PQstatus(it->second.get()) == CONNECTION_OK) {
            throw;
        }
        it->second = connect_or_throw(conninfo);
        return run(it->second.get());
    }
}

scratch_database::scratch_database(scratch_contents contents) {
    static std::atomic<int> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    name_ = "ft_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
            std::to_string(now % 1000000);
    // Made by the administrator and owned by the engine's role, as docs/operations.md says to
    // set a database up: the role itself may not create databases.
    const auto owner = user_of(server_url());
    // One connection for both statements: a connection costs the server a process.
    const auto admin = connect_or_throw(admin_url());
    // Without the template (the test binary run outside CTest) a test migrates its own copy.
    const bool migrated =
        contents == scratch_contents::migrated &&
        exec_scalar(admin.get(), std::string("SELECT 1 FROM pg_database WHERE datname = '") +
                                     template_database + "' AND datistemplate")
            .has_value();
    // FILE_COPY: the files copied and a checkpoint, where the default writes every block of the
    // copy to the WAL: on the tests' cluster (fsync off) a quarter of the server's CPU per copy.
    exec_scalar(admin.get(), "CREATE DATABASE " + name_ + " TEMPLATE " +
                                 (migrated ? template_database : "template0") +
                                 (owner ? " OWNER \"" + *owner + "\"" : std::string()) +
                                 " STRATEGY FILE_COPY");
    url_ = with_dbname(server_url(), name_);
}

bool template_fits(const std::string& history_period) {
    static const std::string shipped = load_config(std::nullopt, {}).history.period;
    return history_period.empty() || history_period == shipped;
}

scratch_database::~scratch_database() {
    try {
        open_connections().erase(url_);  // this thread's own, closed before the drop
        exec_scalar(admin_url(), "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "could not drop %s: %s\n", name_.c_str(), e.what());
    }
}

boost::asio::awaitable<bool> apply_migrations(db::pool* pool, std::string history_period) {
    auto conn = co_await pool->acquire();
    if (!conn) {
        co_return false;
    }
    if (!co_await db::set_history_period(**conn, std::move(history_period))) {
        co_return false;
    }
    auto report = co_await db::migrate(**conn, resources::migrations());
    co_return report.has_value();
}

}  // namespace fulltime::test

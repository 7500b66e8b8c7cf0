#include "support/pg_support.hpp"

#include "fulltime/core/resources.hpp"
#include "fulltime/db/migrations.hpp"
#include "fulltime/db/pool.hpp"

#include <libpq-fe.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

std::optional<std::string> exec_scalar(const std::string& conninfo, const std::string& sql) {
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()), &PQfinish);
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        throw std::runtime_error(std::string("connect: ") + PQerrorMessage(conn.get()));
    }
    std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(conn.get(), sql.c_str()), &PQclear);
    const auto status = PQresultStatus(res.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        throw std::runtime_error(sql + ": " + PQresultErrorMessage(res.get()));
    }
    if (status == PGRES_TUPLES_OK && PQntuples(res.get()) > 0 && !PQgetisnull(res.get(), 0, 0)) {
        return std::string(PQgetvalue(res.get(), 0, 0));
    }
    return std::nullopt;
}

scratch_database::scratch_database() {
    static std::atomic<int> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    name_ = "ft_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
            std::to_string(now % 1000000);
    // Made by the administrator and owned by the engine's role, as docs/operations.md says to
    // set a database up: the role itself may not create databases.
    const auto owner = user_of(server_url());
    exec_scalar(admin_url(), "CREATE DATABASE " + name_ + " TEMPLATE template0" +
                                 (owner ? " OWNER \"" + *owner + "\"" : std::string()));
    url_ = with_dbname(server_url(), name_);
}

scratch_database::~scratch_database() {
    try {
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

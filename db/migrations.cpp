#include "fulltime/db/migrations.hpp"

#include "db/detail_error.hpp"
#include "fulltime/db/transaction.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <functional>
#include <set>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// The key of the transaction-scoped advisory lock that serialises migration transactions
// across instances ("fulltime" in ASCII). Transaction-scoped so that it works through PgBouncer
// in transaction mode and can never be left held by a crashed session.
constexpr std::int64_t migration_lock_key = 0x66756c6c74696d65;

/// Returns the SHA-256 of `text` as lower-case hex.
std::string sha256_hex(std::string_view text) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
        return {};
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(length * 2);
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 0x0f];
    }
    return out;
}

/// What one migration transaction found or did.
enum class step { applied, already_applied };

// GCC 12 reports a false -Wmismatched-new-delete on Asio's coroutine frame allocator once this
// coroutine is inlined (GCC PR middle-end/109224; Asio's frame operator new/delete do match).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

/// Applies one migration unless it is recorded; runs inside its own transaction.
asio::awaitable<outcome<step>> apply_one(std::string name, std::string sql, std::string checksum,
                                         connection& conn) {
    // The lock comes first: CREATE TABLE IF NOT EXISTS is itself not safe against a concurrent
    // creator (it can fail with a unique violation on the catalog).
    if (auto locked = co_await conn.query("SELECT pg_advisory_xact_lock($1)",
                                          params{migration_lock_key});
        !locked) {
        co_return locked.error();
    }
    if (auto created = co_await conn.query(
            "CREATE TABLE IF NOT EXISTS fulltime_schema_migrations ("
            "name text PRIMARY KEY, checksum text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())");
        !created) {
        co_return created.error();
    }
    auto recorded = co_await conn.query(
        "SELECT checksum FROM fulltime_schema_migrations WHERE name = $1", params{name});
    if (!recorded) {
        co_return recorded.error();
    }
    if (recorded->rows() > 0) {
        auto found = recorded->get<std::string>(0, 0);
        if (!found) {
            co_return found.error();
        }
        if (*found != checksum) {
            co_return detail::make_failure(
                errc::bad_result, "migration " + name +
                                      " was applied with checksum " + *found +
                                      " but the file now has " + checksum +
                                      "; an applied migration must never be edited");
        }
        co_return step::already_applied;
    }
    if (auto done = co_await conn.execute_script(std::move(sql)); !done) {
        failure f = done.error();
        f.message = "migration " + name + ": " + f.message;
        co_return f;
    }
    if (auto noted = co_await conn.query(
            "INSERT INTO fulltime_schema_migrations (name, checksum) VALUES ($1, $2)",
            params{name, checksum});
        !noted) {
        co_return noted.error();
    }
    co_return step::applied;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

std::vector<resources::migration_source> sorted_by_name(
    std::vector<resources::migration_source> migrations) {
    std::sort(migrations.begin(), migrations.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    return migrations;
}

}  // namespace

asio::awaitable<outcome<migration_report>> migrate(
    connection& conn, std::vector<resources::migration_source> migrations) {
    migration_report report;
    for (const auto& m : sorted_by_name(std::move(migrations))) {
        auto stepped = co_await in_transaction(
            conn, transaction_options{},
            std::bind_front(&apply_one, std::string{m.name}, std::string{m.sql},
                            sha256_hex(m.sql)));
        if (!stepped) {
            co_return stepped.error();
        }
        if (*stepped == step::applied) {
            report.applied.emplace_back(m.name);
        } else {
            ++report.already_applied;
        }
    }
    co_return report;
}

asio::awaitable<outcome<bool>> is_migrated(connection& conn,
                                           std::vector<resources::migration_source> migrations) {
    auto exists = co_await conn.query(
        "SELECT to_regclass('fulltime_schema_migrations') IS NOT NULL");
    if (!exists) {
        co_return exists.error();
    }
    auto table_exists = exists->get<bool>(0, 0);
    if (!table_exists) {
        co_return table_exists.error();
    }
    if (!*table_exists) {
        co_return false;
    }
    auto rows = co_await conn.query("SELECT name FROM fulltime_schema_migrations");
    if (!rows) {
        co_return rows.error();
    }
    std::set<std::string, std::less<>> recorded;
    for (int i = 0; i < rows->rows(); ++i) {
        auto name = rows->get<std::string>(i, 0);
        if (!name) {
            co_return name.error();
        }
        recorded.insert(std::move(*name));
    }
    for (const auto& m : migrations) {
        if (recorded.find(m.name) == recorded.end()) {
            co_return false;
        }
    }
    co_return true;
}

}  // namespace fulltime::db

#include "fulltime/db/migrations.hpp"

#include "db/detail_error.hpp"
#include "fulltime/db/transaction.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>

namespace fulltime::db {

namespace asio = boost::asio;

// How the schema changes (docs/schema.md, "Migrations and functions", says the same for readers
// of the SQL):
//
// * A numbered migration, db/migrations/NNNN_name.sql, holds tables, indexes, constraints,
//   types and data, never a function body. It runs once, in its own transaction, and is recorded
//   with its checksum; an applied migration is never edited (the runner refuses a changed one).
// * Every SQL function lives once, in db/functions/<function_name>.sql, as CREATE OR REPLACE
//   FUNCTION plus its COMMENT. After the numbered migrations, all function files are applied in
//   one transaction, in file-name order, each skipped when its recorded checksum equals the
//   file's. Fixing a function body is editing its file: the next start applies it.
// * CREATE OR REPLACE cannot change a function's arguments or result columns. A signature change
//   is a numbered migration that DROPs the old function (and a type it needs changed: ALTER or
//   DROP TYPE there); the edited file creates the new one. Applying any numbered migration
//   forgets every function checksum in the same transaction, so the next function phase - this
//   run's, or a concurrent runner's that takes the lock first - applies every file again and no
//   function a migration dropped can stay missing.
// * Order of the function files: PL/pgSQL bodies are checked only when called, so those may call
//   each other freely. A LANGUAGE sql body is checked at CREATE time: it may name tables and
//   types, and a function only if that function's file sorts before its own.
// * A removed function file needs a numbered migration that drops the function and deletes its
//   row from fulltime_schema_functions (which exists before any migration runs).
// * A binary refuses a database that records a migration it does not carry (a newer release's),
//   so an older instance left running, or a rolled-back package, never runs its SQL on a newer
//   schema. It cannot tell an older function file from a newer one by checksum, so a release
//   that changes a function file also adds a numbered migration, empty if nothing else changes
//   ("-- marks the release that changed fulltime_x.sql"): older binaries then refuse the
//   database instead of putting their function bodies back (docs/operations.md, "Upgrades").

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

// The migrations that 0001_baseline.sql replaced on 2026-12-01. A database that recorded any of
// them was migrated before the baseline: it has the tables the baseline would create, and must
// be recreated, not migrated.
constexpr std::array<std::string_view, 8> pre_baseline_migrations = {
    "0001_schema.sql",         "0002_placement.sql",      "0003_group_commit.sql",
    "0004_shard_hint.sql",     "0005_settlement.sql",     "0006_incidents.sql",
    "0007_reconciliation.sql", "0008_terminal_states.sql"};
constexpr std::string_view baseline_date = "2026-12-01";

/// What one migration transaction found or did.
enum class step { applied, already_applied };

/// What the function transaction did.
struct functions_step {
    std::vector<std::string> applied;
    std::size_t unchanged = 0;
};

// GCC 12 reports a false -Wmismatched-new-delete on Asio's coroutine frame allocator once this
// coroutine is inlined (GCC PR middle-end/109224; Asio's frame operator new/delete do match).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

/// Takes the runner's lock and creates its two bookkeeping tables if they are missing; the first
/// thing every transaction of the runner does.
asio::awaitable<outcome<void>> lock_and_prepare(connection& conn) {
    // The lock comes first: CREATE TABLE IF NOT EXISTS is itself not safe against a concurrent
    // creator (it can fail with a unique violation on the catalog). It is waited for without the
    // runner's lock_timeout (migrate()): engines starting together take turns, however long the
    // first one's migrations take; the timeout is for the tables live sessions use.
    auto timeout = co_await conn.query("SELECT current_setting('lock_timeout')");
    if (!timeout) {
        co_return timeout.error();
    }
    const std::string previous(timeout->text(0, 0));
    if (auto unset = co_await conn.query("SELECT set_config('lock_timeout', '0', true)"); !unset) {
        co_return unset.error();
    }
    if (auto locked =
            co_await conn.query("SELECT pg_advisory_xact_lock($1)", params{migration_lock_key});
        !locked) {
        co_return locked.error();
    }
    if (auto reset =
            co_await conn.query("SELECT set_config('lock_timeout', $1, true)", params{previous});
        !reset) {
        co_return reset.error();
    }
    if (auto created =
            co_await conn.execute_script("CREATE TABLE IF NOT EXISTS fulltime_schema_migrations ("
                                         "name text PRIMARY KEY, checksum text NOT NULL, "
                                         "applied_at timestamptz NOT NULL DEFAULT now());"
                                         "CREATE TABLE IF NOT EXISTS fulltime_schema_functions ("
                                         "name text PRIMARY KEY, checksum text NOT NULL, "
                                         "applied_at timestamptz NOT NULL DEFAULT now())");
        !created) {
        co_return created.error();
    }
    co_return outcome<void>{};
}

/// Fails when the database recorded a migration that the baseline replaced.
asio::awaitable<outcome<void>> refuse_pre_baseline(connection& conn) {
    std::string list;
    for (const auto name : pre_baseline_migrations) {
        list += list.empty() ? "'" : ", '";
        list += name;
        list += "'";
    }
    // The names are this file's constants, not input: inlined rather than bound as an array.
    auto found = co_await conn.query("SELECT name FROM fulltime_schema_migrations WHERE name IN (" +
                                     list + ") ORDER BY name LIMIT 1");
    if (!found) {
        co_return found.error();
    }
    if (found->rows() > 0) {
        co_return detail::make_failure(
            errc::bad_result, "this database was migrated before the baseline of " +
                                  std::string{baseline_date} + " (it records migration " +
                                  std::string{found->text(0, 0)} +
                                  "); recreate it (drop the database, or remove ./var for the "
                                  "development cluster) and start again");
    }
    co_return outcome<void>{};
}

/// Applies one migration unless it is recorded; runs inside its own transaction.
asio::awaitable<outcome<step>> apply_one(std::string name, std::string sql, std::string checksum,
                                         connection& conn) {
    if (auto prepared = co_await lock_and_prepare(conn); !prepared) {
        co_return prepared.error();
    }
    if (auto refused = co_await refuse_pre_baseline(conn); !refused) {
        co_return refused.error();
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
                errc::bad_result, "migration " + name + " was applied with checksum " + *found +
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
    // The migration may have dropped a function (to change its signature): every function file
    // is applied again by the next function phase.
    if (auto forgotten = co_await conn.query("DELETE FROM fulltime_schema_functions"); !forgotten) {
        co_return forgotten.error();
    }
    co_return step::applied;
}

/// Applies, in the given order, every function file whose recorded checksum differs from its
/// own (or that is not recorded); runs inside one transaction, so either all changed files are
/// applied and recorded or none is.
asio::awaitable<outcome<functions_step>> apply_functions(
    std::vector<resources::migration_source> functions, connection& conn) {
    if (auto prepared = co_await lock_and_prepare(conn); !prepared) {
        co_return prepared.error();
    }
    auto rows = co_await conn.query("SELECT name, checksum FROM fulltime_schema_functions");
    if (!rows) {
        co_return rows.error();
    }
    std::map<std::string, std::string, std::less<>> recorded;
    for (int i = 0; i < rows->rows(); ++i) {
        recorded.emplace(rows->text(i, 0), rows->text(i, 1));
    }
    functions_step done;
    for (const auto& f : functions) {
        const auto checksum = sha256_hex(f.sql);
        if (auto it = recorded.find(f.name); it != recorded.end() && it->second == checksum) {
            ++done.unchanged;
            continue;
        }
        if (auto created = co_await conn.execute_script(std::string{f.sql}); !created) {
            failure e = created.error();
            e.message = "function file " + std::string{f.name} + ": " + e.message;
            co_return e;
        }
        if (auto noted = co_await conn.query(
                "INSERT INTO fulltime_schema_functions (name, checksum) VALUES ($1, $2) "
                "ON CONFLICT (name) DO UPDATE "
                "SET checksum = excluded.checksum, applied_at = excluded.applied_at",
                params{std::string{f.name}, checksum});
            !noted) {
            co_return noted.error();
        }
        done.applied.emplace_back(f.name);
    }
    co_return done;
}

/// Returns the sources of one kind, sorted by name.
std::vector<resources::migration_source> sorted_by_name(
    const std::vector<resources::migration_source>& sources, resources::source_kind kind) {
    std::vector<resources::migration_source> out;
    std::copy_if(sources.begin(), sources.end(), std::back_inserter(out),
                 [kind](const auto& s) { return s.kind == kind; });
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
}

/// Reads name -> checksum of one bookkeeping table, or nothing when the table does not exist.
asio::awaitable<outcome<std::optional<std::map<std::string, std::string, std::less<>>>>>
read_recorded(connection& conn, std::string_view table) {
    auto exists =
        co_await conn.query("SELECT to_regclass($1) IS NOT NULL", params{std::string{table}});
    if (!exists) {
        co_return exists.error();
    }
    auto table_exists = exists->get<bool>(0, 0);
    if (!table_exists) {
        co_return table_exists.error();
    }
    if (!*table_exists) {
        co_return std::nullopt;
    }
    // The table name is one of this file's two constants.
    auto rows = co_await conn.query("SELECT name, checksum FROM " + std::string{table});
    if (!rows) {
        co_return rows.error();
    }
    std::map<std::string, std::string, std::less<>> recorded;
    for (int i = 0; i < rows->rows(); ++i) {
        recorded.emplace(rows->text(i, 0), rows->text(i, 1));
    }
    co_return recorded;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

asio::awaitable<outcome<migration_status>> read_migration_status(
    connection& conn, std::vector<resources::migration_source> migrations) {
    auto applied = co_await read_recorded(conn, "fulltime_schema_migrations");
    if (!applied) {
        co_return applied.error();
    }
    auto functions = co_await read_recorded(conn, "fulltime_schema_functions");
    if (!functions) {
        co_return functions.error();
    }
    migration_status status;
    std::set<std::string, std::less<>> carried;
    for (const auto& m : sorted_by_name(migrations, resources::source_kind::migration)) {
        carried.emplace(m.name);
        const bool recorded = *applied && (*applied)->contains(m.name);
        (recorded ? status.applied : status.pending).emplace_back(m.name);
    }
    if (*applied) {
        for (const auto& [name, checksum] : **applied) {
            const bool replaced =
                std::find(pre_baseline_migrations.begin(), pre_baseline_migrations.end(), name) !=
                pre_baseline_migrations.end();
            if (!carried.contains(name) && !replaced) {
                status.unknown.push_back(name);
            }
        }
    }
    for (const auto& f : sorted_by_name(migrations, resources::source_kind::function)) {
        bool current = false;
        if (*functions) {
            const auto it = (*functions)->find(f.name);
            current = it != (*functions)->end() && it->second == sha256_hex(f.sql);
        }
        if (current) {
            ++status.functions_current;
        } else {
            status.functions_changed.emplace_back(f.name);
        }
    }
    co_return status;
}

namespace {
asio::awaitable<outcome<migration_report>> migrate_all(
    connection& conn, std::vector<resources::migration_source> migrations);
}  // namespace

asio::awaitable<outcome<migration_report>> migrate(
    connection& conn, std::vector<resources::migration_source> migrations,
    std::int64_t lock_timeout_ms) {
    // The runner's session waits at most lock_timeout_ms for a lock (but for its own advisory
    // lock: lock_and_prepare), and gets its setting back afterwards.
    std::optional<std::string> previous;
    if (lock_timeout_ms > 0) {
        auto was = co_await conn.query(
            "SELECT current_setting('lock_timeout'), set_config('lock_timeout', $1, false)",
            params{std::to_string(lock_timeout_ms) + "ms"});
        if (!was) {
            co_return was.error();
        }
        previous = std::string(was->text(0, 0));
    }
    auto report = co_await migrate_all(conn, std::move(migrations));
    if (previous) {
        if (auto reset = co_await conn.query("SELECT set_config('lock_timeout', $1, false)",
                                             params{*previous});
            !reset && report) {
            co_return reset.error();
        }
    }
    co_return report;
}

namespace {

asio::awaitable<outcome<migration_report>> migrate_all(
    connection& conn, std::vector<resources::migration_source> migrations) {
    // A newer release's schema: refused before anything is applied (docs/operations.md,
    // "Upgrades").
    auto status = co_await read_migration_status(conn, migrations);
    if (!status) {
        co_return status.error();
    }
    if (!status->unknown.empty()) {
        std::string names;
        for (const auto& n : status->unknown) {
            names += names.empty() ? n : ", " + n;
        }
        const auto carried = sorted_by_name(migrations, resources::source_kind::migration);
        co_return detail::make_failure(
            errc::bad_result,
            "the database's schema is newer than this binary: it records migration(s) " + names +
                " that this release does not carry (its newest is " +
                (carried.empty() ? std::string("none") : std::string(carried.back().name)) +
                "); run the release that migrated it, or a newer one");
    }
    migration_report report;
    for (const auto& m : sorted_by_name(migrations, resources::source_kind::migration)) {
        auto stepped =
            co_await in_transaction(conn, transaction_options{},
                                    std::bind_front(&apply_one, std::string{m.name},
                                                    std::string{m.sql}, sha256_hex(m.sql)));
        if (!stepped) {
            co_return stepped.error();
        }
        if (*stepped == step::applied) {
            report.applied.emplace_back(m.name);
        } else {
            ++report.already_applied;
        }
    }
    auto functions = sorted_by_name(migrations, resources::source_kind::function);
    if (functions.empty()) {
        co_return report;
    }
    const bool partitioned = std::any_of(functions.begin(), functions.end(), [](const auto& f) {
        return f.name == "fulltime_history_ensure.sql";
    });
    auto applied = co_await in_transaction(conn, transaction_options{},
                                           std::bind_front(&apply_functions, std::move(functions)));
    if (!applied) {
        co_return applied.error();
    }
    report.functions_applied = std::move(applied->applied);
    report.functions_unchanged = applied->unchanged;
    if (partitioned) {
        // The periods ahead of now and their partitions (docs/schema.md, "Time partitions"): a
        // migrated database takes bets at once, before any partition keeper has run.
        auto added = co_await conn.query("SELECT fulltime_history_ensure()");
        if (!added) {
            co_return added.error();
        }
        auto count = added->get<std::int64_t>(0, 0);
        report.periods_added = count ? *count : 0;
    }
    co_return report;
}

}  // namespace

asio::awaitable<outcome<void>> set_history_period(connection& conn, std::string period) {
    auto set = co_await conn.query("SELECT set_config('fulltime.history_period', $1, false)",
                                   params{std::move(period)});
    if (!set) {
        co_return set.error();
    }
    co_return outcome<void>{};
}

asio::awaitable<outcome<bool>> is_migrated(connection& conn,
                                           std::vector<resources::migration_source> migrations) {
    auto status = co_await read_migration_status(conn, std::move(migrations));
    if (!status) {
        co_return status.error();
    }
    // A function file counts only with the checksum of the text this binary carries.
    co_return status->pending.empty() && status->functions_changed.empty();
}

}  // namespace fulltime::db

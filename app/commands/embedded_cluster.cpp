#include "app/commands/embedded_cluster.hpp"

#include "fulltime/core/log.hpp"

#include <libpq-fe.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace fulltime::app {

namespace fs = std::filesystem;

namespace {

// Unix socket paths are limited to 107 bytes (sun_path); PostgreSQL appends "/.s.PGSQL.5432".
constexpr std::size_t socket_dir_bytes_max = 90;
constexpr const char* database_name = "fulltime";
// The cluster's superuser, for its administrator (base backups, psql as an operator), and the
// role the engine connects as, which is not one.
constexpr const char* superuser_name = "postgres";
constexpr const char* engine_role = "fulltime";
// The private cluster's WAL settings (docs/config.md, "WAL settings"): full-page images
// compressed with lz4, and checkpoints spaced further apart than PostgreSQL's defaults (5 min,
// 1 GB), so that fewer page writes after a checkpoint carry a whole page.
constexpr const char* wal_options =
    " -c wal_compression=lz4 -c checkpoint_timeout=15min -c max_wal_size=2GB";
// The private cluster's guard rails (docs/config.md, "Guard rails at the peak"): any session,
// an operator's psql included, that leaves a transaction open while idle is ended after a
// minute (it would hold vacuum and the settlement fence back), and a lock wait longer than
// deadlock_timeout (1 s) is logged with who holds the lock.
constexpr const char* guard_options =
    " -c idle_in_transaction_session_timeout=60s -c log_lock_waits=on";

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("embedded PostgreSQL: " + what);
}

std::string short_hash(const std::string& text) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < 6; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 0xf];
    }
    return out;
}

void make_directory(const std::string& dir, const std::optional<run_as>& owner, mode_t mode) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        fail("cannot create " + dir + ": " + ec.message());
    }
    ::chmod(dir.c_str(), mode);
    if (owner &&
        ::chown(dir.c_str(), static_cast<uid_t>(owner->uid), static_cast<gid_t>(owner->gid)) != 0) {
        fail("cannot give " + dir + " to user " + owner->user);
    }
}

// Runs a server binary and turns a non-zero exit into a one-line error naming its log.
void run_checked(const std::vector<std::string>& argv, const std::string& log_path,
                 const std::optional<run_as>& owner, const std::string& what) {
    const int status = run_process(argv, log_path, owner);
    if (status != 0) {
        std::string last = tail_of_file(log_path, 1);
        while (!last.empty() && last.back() == '\n') {
            last.pop_back();
        }
        fail(what + " failed (exit " + std::to_string(status) + "): " + last + " (see " + log_path +
             ")");
    }
}

using pg_connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using pg_result = std::unique_ptr<PGresult, decltype(&PQclear)>;

pg_connection connect_as(const std::string& socket_dir, const char* role) {
    const std::string conninfo =
        "host=" + socket_dir + " port=5432 user=" + role + " dbname=postgres connect_timeout=10";
    return pg_connection(PQconnectdb(conninfo.c_str()), &PQfinish);
}

std::string first_line(const char* message) {
    std::string msg = message;
    return msg.substr(0, msg.find('\n'));
}

// Runs `sql` (constants of ours, never user input) with `value` as $1 and returns its result,
// which holds tuples or nothing; fails with `what` otherwise.
pg_result run_sql(PGconn* conn, const char* sql, const char* value, const std::string& what) {
    const char* values[] = {value};
    pg_result res(
        PQexecParams(conn, sql, value != nullptr ? 1 : 0, nullptr, values, nullptr, nullptr, 0),
        &PQclear);
    const auto status = PQresultStatus(res.get());
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        fail("cannot " + what + ": " + first_line(PQresultErrorMessage(res.get())));
    }
    return res;
}

// Makes the engine's role and database in the started cluster when they are missing, as
// docs/operations.md ("The database role") sets up a server of one's own: a role that logs in,
// owns its database and has pg_monitor, and is not a superuser. Returns the role to connect as.
// A cluster made by an earlier release has no `postgres` role: its superuser, `fulltime`, is
// the engine's role, and it stays so (a bootstrap superuser cannot be demoted); the start-up
// check then warns about it.
std::string ensure_role_and_database(const std::string& socket_dir) {
    auto conn = connect_as(socket_dir, superuser_name);
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        const std::string why = first_line(PQerrorMessage(conn.get()));
        auto legacy = connect_as(socket_dir, engine_role);
        const char* superuser = PQparameterStatus(legacy.get(), "is_superuser");
        if (PQstatus(legacy.get()) != CONNECTION_OK || superuser == nullptr ||
            std::string_view(superuser) != "on") {
            fail("cannot connect to the started cluster: " + why);
        }
        log::warn(
            "this private cluster was made by an earlier release: the engine connects as "
            "its superuser, fulltime (docs/operations.md, \"The database role\")");
        conn = std::move(legacy);
    } else {
        auto role = run_sql(conn.get(), "SELECT 1 FROM pg_roles WHERE rolname = $1", engine_role,
                            "list roles");
        if (PQntuples(role.get()) == 0) {
            run_sql(conn.get(), "CREATE ROLE fulltime LOGIN", nullptr, "create role fulltime");
            run_sql(conn.get(), "GRANT pg_monitor TO fulltime", nullptr,
                    "grant pg_monitor to fulltime");
        }
    }
    auto exists = run_sql(conn.get(), "SELECT 1 FROM pg_database WHERE datname = $1", database_name,
                          "list databases");
    if (PQntuples(exists.get()) == 0) {
        run_sql(conn.get(), "CREATE DATABASE fulltime OWNER fulltime", nullptr,
                "create database fulltime");
    }
    return engine_role;
}

}  // namespace

embedded_cluster embedded_cluster::start(const config& cfg, bool create) {
    embedded_cluster c;
    c.bin_dir_ = cfg.embedded.bin_dir;
    for (const char* tool : {"initdb", "pg_ctl", "postgres"}) {
        const std::string path = c.bin_dir_ + "/" + tool;
        if (::access(path.c_str(), X_OK) != 0) {
            fail(path + " not found: install postgresql-15 or set embedded.bin_dir");
        }
    }

    std::error_code ec;
    fs::create_directories(cfg.state_dir, ec);
    if (ec) {
        fail("cannot create state directory " + cfg.state_dir + ": " + ec.message());
    }
    const std::string state_dir = fs::canonical(cfg.state_dir).string();
    c.root_dir_ = state_dir + "/postgres";

    if (running_as_root()) {
        // initdb and postgres refuse to run as root: the cluster belongs to another user.
        c.owner_ = find_user(cfg.embedded.run_as_user);
        if (!c.owner_) {
            fail("running as root, but user '" + cfg.embedded.run_as_user +
                 "' does not exist to own the cluster (install postgresql-15 or set "
                 "embedded.run_as_user)");
        }
        make_directory(c.root_dir_, c.owner_, 0700);
        if (!user_can_use_directory(*c.owner_, c.root_dir_)) {
            // A state directory under a private home (e.g. /root) is not reachable by the
            // cluster's owner; keep the cluster in a system location tied to this state dir.
            const std::string fallback = "/var/lib/fulltime/clusters/" + short_hash(state_dir);
            log::warn("user " + c.owner_->user + " cannot reach " + c.root_dir_ +
                      "; the private cluster lives in " + fallback + " instead");
            fs::remove(c.root_dir_, ec);  // the empty directory just made; ignore failure
            c.root_dir_ = fallback;
            make_directory("/var/lib/fulltime/clusters", std::nullopt, 0755);
            make_directory(c.root_dir_, c.owner_, 0700);
        }
    } else {
        make_directory(c.root_dir_, std::nullopt, 0700);
    }
    c.data_dir_ = c.root_dir_ + "/data";

    std::string socket_dir = c.root_dir_ + "/run";
    if (socket_dir.size() > socket_dir_bytes_max) {
        socket_dir = "/tmp/fulltime-" + short_hash(c.root_dir_);
    }
    make_directory(socket_dir, c.owner_, 0700);

    const std::string log_dir = c.root_dir_;
    if (!fs::exists(c.data_dir_ + "/PG_VERSION")) {
        if (!create) {
            throw no_cluster("embedded PostgreSQL: there is no private cluster in " + c.data_dir_ +
                             ": `fulltime serve` makes it on its first start; is " + cfg.state_dir +
                             " the state directory the engine runs with (--config)?");
        }
        log::info("creating a private PostgreSQL cluster in " + c.data_dir_);
        fs::remove_all(c.data_dir_, ec);  // a half-made cluster from an interrupted initdb
        run_checked({c.bin_dir_ + "/initdb", "-D", c.data_dir_, "-U", superuser_name,
                     "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"},
                    log_dir + "/initdb.log", c.owner_, "initdb");
    }

    const std::string server_log = log_dir + "/postgresql.log";
    const int status = run_process({c.bin_dir_ + "/pg_ctl", "-D", c.data_dir_, "status"},
                                   log_dir + "/pg_ctl.log", c.owner_);
    if (status == 0) {
        // An engine that was killed left its cluster running: adopt it.
        log::info("adopting the private PostgreSQL cluster already running in " + c.data_dir_);
        c.adopted_ = true;
    } else {
        const auto timeout_s = std::max<std::int64_t>(1, cfg.embedded.start_timeout_ms / 1000);
        run_checked({c.bin_dir_ + "/pg_ctl", "-D", c.data_dir_, "-l", server_log, "-w", "-t",
                     std::to_string(timeout_s), "start", "-o",
                     "-c listen_addresses='' -c unix_socket_directories='" + socket_dir +
                         "' -c unix_socket_permissions=0700" + wal_options + guard_options},
                    log_dir + "/pg_ctl.log", c.owner_, "pg_ctl start");
        log::info("private PostgreSQL cluster started (socket in " + socket_dir + ")");
    }
    c.running_ = true;
    const std::string role = ensure_role_and_database(socket_dir);
    c.conninfo_ = "host=" + socket_dir + " port=5432 user=" + role + " dbname=" + database_name;
    return c;
}

embedded_cluster::embedded_cluster(embedded_cluster&& other) noexcept
    : bin_dir_(std::move(other.bin_dir_)),
      root_dir_(std::move(other.root_dir_)),
      data_dir_(std::move(other.data_dir_)),
      conninfo_(std::move(other.conninfo_)),
      owner_(std::move(other.owner_)),
      running_(std::exchange(other.running_, false)),
      adopted_(other.adopted_) {}

embedded_cluster::~embedded_cluster() { stop(); }

void embedded_cluster::stop() {
    if (!running_) {
        return;
    }
    running_ = false;
    const int status =
        run_process({bin_dir_ + "/pg_ctl", "-D", data_dir_, "-m", "fast", "-w", "-t", "60", "stop"},
                    root_dir_ + "/pg_ctl.log", owner_);
    if (status == 0) {
        log::info("private PostgreSQL cluster stopped");
    } else {
        log::error("pg_ctl stop failed (exit " + std::to_string(status) + "); see " + root_dir_ +
                   "/pg_ctl.log");
    }
}

}  // namespace fulltime::app

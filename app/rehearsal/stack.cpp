#include "app/rehearsal/stack.hpp"

#include "app/commands/embedded_cluster.hpp"
#include "app/commands/process.hpp"

#include "fulltime/db/peak_statements.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace fulltime::app::rehearsal {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr auto engine_start_timeout = std::chrono::seconds(120);
constexpr auto pgbouncer_start_timeout = std::chrono::seconds(30);
constexpr auto engine_stop_timeout = std::chrono::seconds(60);
constexpr const char* pgbouncer_binary = "/usr/sbin/pgbouncer";
// PgBouncer's server connections for the engine's database: the engine's pools together open
// at most this many at once in the shipped configuration, and transaction pooling shares them.
constexpr int pgbouncer_pool_size = 20;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("rehearse: " + what); }

// A loopback port nothing listens on now, for the engine to keep across its restarts.
std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        fail("cannot open a socket to find a free port");
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        fail("cannot find a free loopback port");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::string self_binary() {
    std::error_code ec;
    auto p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
        fail("cannot find this program's path: " + ec.message());
    }
    return p.string();
}

std::uintmax_t file_size_or_zero(const std::string& path) {
    std::error_code ec;
    const auto n = fs::file_size(path, ec);
    return ec ? 0 : n;
}

// Whether the log, from byte `from` on, says the engine listens.
bool says_listening(const std::string& path, std::uintmax_t from) {
    std::ifstream in(path);
    in.seekg(static_cast<std::streamoff>(from));
    std::string line;
    while (std::getline(in, line)) {
        if (line.find("listening on http://") != std::string::npos) {
            return true;
        }
    }
    return false;
}

}  // namespace

struct stack::impl {
    config cfg;
    stack_settings settings;
    std::string binary;
    std::uint16_t port = 0;
    std::optional<embedded_cluster> cluster;
    std::string direct_url;
    std::string engine_url;
    std::string bouncer_admin_url;
    int bouncer_pid = -1;
    int engine_pid = -1;
    std::string log_path;
    std::optional<run_as> owner;  // PgBouncer's user when running as root

    std::vector<std::string> engine_environment() const {
        std::vector<std::string> env;
        // The operator's FULLTIME_* settings reach the engine, but for those the stack sets.
        const auto ours = [](const std::string& entry) {
            for (const char* name :
                 {"FULLTIME_DATABASE_URL=", "FULLTIME_LISTEN=", "FULLTIME_STATE_DIR=",
                  "FULLTIME_TOKEN_SECRET=", "FULLTIME_DATABASE_PREPARED_STATEMENTS=",
                  "FULLTIME_DATABASE_SESSION_TIMEOUTS=",
                  "FULLTIME_DIAGNOSTICS_PGBOUNCER_ADMIN_URL="}) {
                if (entry.rfind(name, 0) == 0) {
                    return true;
                }
            }
            return false;
        };
        for (char** e = environ; *e != nullptr; ++e) {
            if (!ours(*e)) {
                env.emplace_back(*e);
            }
        }
        env.push_back("FULLTIME_DATABASE_URL=" + engine_url);
        env.push_back("FULLTIME_LISTEN=127.0.0.1:" + std::to_string(port));
        env.push_back("FULLTIME_STATE_DIR=" + settings.work_dir + "/engine-state");
        env.push_back("FULLTIME_TOKEN_SECRET=" + settings.token_secret);
        if (settings.pgbouncer) {
            // Transaction pooling: no protocol-level prepared statements, no session settings
            // in the startup packet (docs/config.md).
            env.push_back("FULLTIME_DATABASE_PREPARED_STATEMENTS=false");
            env.push_back("FULLTIME_DATABASE_SESSION_TIMEOUTS=false");
            env.push_back("FULLTIME_DIAGNOSTICS_PGBOUNCER_ADMIN_URL=" + bouncer_admin_url);
        }
        return env;
    }

    void start_engine() {
        const auto from = file_size_or_zero(log_path);
        const auto env = engine_environment();
        engine_pid = spawn_process({binary, "serve"}, log_path, std::nullopt, &env);
        if (engine_pid < 0) {
            fail("cannot start the engine (" + binary + " serve)");
        }
        const auto until = clock_type::now() + engine_start_timeout;
        while (!says_listening(log_path, from)) {
            if (auto status = poll_process(engine_pid)) {
                engine_pid = -1;
                fail("the engine exited with status " + std::to_string(*status) +
                     " before listening: " + tail_of_file(log_path, 3));
            }
            if (clock_type::now() > until) {
                fail("the engine did not listen within 120 s: " + tail_of_file(log_path, 3));
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    void start_pgbouncer() {
        const std::string dir = settings.work_dir + "/pgbouncer";
        fs::create_directories(dir);
        const std::string host = db::conninfo_value(direct_url, "host");
        const std::string server_port = db::conninfo_value(direct_url, "port");
        const std::string dbname = db::conninfo_value(direct_url, "dbname");
        const std::string user = db::conninfo_value(direct_url, "user");
        if (host.empty() || dbname.empty() || user.empty()) {
            fail("PgBouncer needs the database as host=... dbname=... user=... (got '" +
                 direct_url + "')");
        }
        const std::uint16_t bouncer_port = free_port();
        {
            std::ofstream users(dir + "/users.txt");
            users << '"' << user << "\" \"\"\n";
            std::ofstream ini(dir + "/pgbouncer.ini");
            ini << "[databases]\n"
                << dbname << " = host=" << host
                << " port=" << (server_port.empty() ? "5432" : server_port) << " dbname=" << dbname
                << " user=" << user << "\n"
                << "[pgbouncer]\n"
                << "listen_addr =\n"
                << "listen_port = " << bouncer_port << "\n"
                << "unix_socket_dir = " << dir << "\n"
                << "auth_type = trust\n"
                << "auth_file = " << dir << "/users.txt\n"
                << "admin_users = " << user << "\n"
                << "pool_mode = transaction\n"
                // As docs/operations.md advises: with the default (15 s), one server login that
                // fails during restart_postgres refuses every client for 15 s.
                << "server_login_retry = 1\n"
                << "default_pool_size = " << pgbouncer_pool_size << "\n"
                << "max_client_conn = 1000\n"
                << "logfile = " << dir << "/pgbouncer.log\n"
                << "pidfile = " << dir << "/pgbouncer.pid\n";
        }
        std::vector<std::string> argv{pgbouncer_binary};
        if (running_as_root()) {
            // PgBouncer refuses to run as root.
            owner = find_user(cfg.embedded.run_as_user);
            if (!owner) {
                fail("running as root, but user '" + cfg.embedded.run_as_user +
                     "' does not exist to run PgBouncer");
            }
            for (const auto& p : {dir, dir + "/users.txt", dir + "/pgbouncer.ini"}) {
                [[maybe_unused]] int rc = ::chown(p.c_str(), static_cast<uid_t>(owner->uid),
                                                  static_cast<gid_t>(owner->gid));
            }
            argv.push_back("-u");
            argv.push_back(owner->user);
        }
        argv.push_back(dir + "/pgbouncer.ini");
        bouncer_pid =
            spawn_process(argv, settings.work_dir + "/pgbouncer.out", std::nullopt, nullptr);
        if (bouncer_pid < 0) {
            fail(std::string("cannot start ") + pgbouncer_binary + " (apt-get install pgbouncer)");
        }
        const std::string socket = dir + "/.s.PGSQL." + std::to_string(bouncer_port);
        const auto until = clock_type::now() + pgbouncer_start_timeout;
        while (!fs::exists(socket)) {
            if (auto status = poll_process(bouncer_pid)) {
                bouncer_pid = -1;
                fail("PgBouncer exited with status " + std::to_string(*status) + ": " +
                     tail_of_file(settings.work_dir + "/pgbouncer.out", 3));
            }
            if (clock_type::now() > until) {
                fail("PgBouncer did not listen within 30 s");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        engine_url = "host=" + dir + " port=" + std::to_string(bouncer_port) + " dbname=" + dbname +
                     " user=" + user;
        bouncer_admin_url = "host=" + dir + " port=" + std::to_string(bouncer_port) +
                            " dbname=pgbouncer user=" + user;
    }

    void stop_engine() {
        if (engine_pid < 0) {
            return;
        }
        ::kill(engine_pid, SIGTERM);
        const auto until = clock_type::now() + engine_stop_timeout;
        while (!poll_process(engine_pid)) {
            if (clock_type::now() > until) {
                ::kill(engine_pid, SIGKILL);
                wait_process(engine_pid);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        engine_pid = -1;
    }

    void stop_all() {
        stop_engine();
        if (bouncer_pid >= 0) {
            ::kill(bouncer_pid, SIGTERM);
            wait_process(bouncer_pid);
            bouncer_pid = -1;
        }
        if (cluster) {
            cluster->stop();
            cluster.reset();
        }
    }
};

stack::stack(const config& cfg, stack_settings settings) : impl_(std::make_unique<impl>()) {
    auto& s = *impl_;
    s.cfg = cfg;
    s.settings = std::move(settings);
    s.binary = self_binary();
    s.port = free_port();
    fs::create_directories(s.settings.work_dir);
    s.log_path = s.settings.work_dir + "/engine.log";
    try {
        if (s.settings.database_url.empty()) {
            // The private cluster, as `fulltime serve` runs it, in the rehearsal's directory.
            s.cfg.state_dir = s.settings.work_dir + "/cluster";
            s.cluster.emplace(embedded_cluster::start(s.cfg));
            s.direct_url = s.cluster->conninfo();
        } else {
            s.direct_url = s.settings.database_url;
        }
        s.engine_url = s.direct_url;
        if (s.settings.pgbouncer) {
            s.start_pgbouncer();
        }
        s.start_engine();
    } catch (...) {
        s.stop_all();
        throw;
    }
}

stack::~stack() { impl_->stop_all(); }

std::uint16_t stack::port() const noexcept { return impl_->port; }
const std::string& stack::database_url() const noexcept { return impl_->direct_url; }
const std::string& stack::engine_log() const noexcept { return impl_->log_path; }
bool stack::owns_database() const noexcept { return impl_->cluster.has_value(); }

double stack::kill_and_restart_engine() {
    auto& s = *impl_;
    const auto start = clock_type::now();
    if (s.engine_pid >= 0) {
        ::kill(s.engine_pid, SIGKILL);
        wait_process(s.engine_pid);
        s.engine_pid = -1;
    }
    s.start_engine();
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

double stack::restart_database() {
    auto& s = *impl_;
    if (!s.cluster) {
        fail("restart_postgres needs the rehearsal's own PostgreSQL (run without --database-url)");
    }
    const auto start = clock_type::now();
    s.cluster->stop();
    s.cluster.reset();
    s.cluster.emplace(embedded_cluster::start(s.cfg));
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

void stack::stop_engine() { impl_->stop_engine(); }

}  // namespace fulltime::app::rehearsal

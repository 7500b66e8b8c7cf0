#pragma once
/// What a rehearsal starts and may break: a PostgreSQL of its own (or the one it is given),
/// PgBouncer in transaction pooling mode in front of it, and the engine (`fulltime serve`, this
/// same binary) as a child process it can kill and start again. Blocking: the rehearsal's main
/// thread only.

#include "fulltime/config/config.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace fulltime::app::rehearsal {

/// Holds how to build the stack.
struct stack_settings {
    std::string work_dir;      ///< the rehearsal's files: cluster, PgBouncer, engine state, logs
    std::string database_url;  ///< an existing database; empty: a private cluster in work_dir
    bool pgbouncer = false;    ///< PgBouncer (Debian's) between the engine and the database
    std::string token_secret;  ///< the engine's FULLTIME_TOKEN_SECRET
};

/// Owns the stack's processes; stops them all on destruction.
class stack {
public:
    /// Starts the database (unless given), PgBouncer when asked, and the engine, and waits
    /// until the engine listens. Throws std::runtime_error with a one-line message on failure.
    stack(const config& cfg, stack_settings settings);
    ~stack();
    stack(const stack&) = delete;
    stack& operator=(const stack&) = delete;

    /// Returns the port the engine listens on (the same across restarts).
    std::uint16_t port() const noexcept;
    /// Returns the database's conninfo, direct (never through PgBouncer).
    const std::string& database_url() const noexcept;
    /// Returns the path of the engine's log (every start appends to it).
    const std::string& engine_log() const noexcept;
    /// Returns whether the database is the stack's own (so it may be restarted).
    bool owns_database() const noexcept;

    /// Kills the engine with SIGKILL and starts it again; returns the seconds until it listened
    /// again. Throws std::runtime_error when it does not come back.
    double kill_and_restart_engine();
    /// Stops the stack's PostgreSQL (fast shutdown) and starts it again; returns the seconds it
    /// took. Throws std::runtime_error when it is not the stack's own, or does not come back.
    double restart_database();
    /// Stops the engine with SIGTERM (its orderly drain) and waits for it.
    void stop_engine();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace fulltime::app::rehearsal

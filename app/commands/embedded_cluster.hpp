#pragma once
/// The private PostgreSQL cluster `fulltime serve` runs when no database URL is configured:
/// created in the state directory with the installed server binaries, listening on a Unix
/// socket only, owned by the `postgres` user when the engine runs as root. Its superuser is
/// `postgres`; the engine connects as `fulltime`, which owns the `fulltime` database, has
/// pg_monitor and is not a superuser.

#include "fulltime/config/config.hpp"

#include <optional>
#include <stdexcept>
#include <string>

#include "app/commands/process.hpp"

namespace fulltime::app {

/// Thrown by embedded_cluster::start when there is no cluster and it may not make one.
class no_cluster : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Owns a running private cluster; stops it on stop() or destruction.
class embedded_cluster {
public:
    /// Creates the cluster on first use (initdb) when `create` is true, starts it (or adopts
    /// one left running, by a `fulltime serve` or an engine that was killed), and creates the
    /// `fulltime` role and database. Throws std::runtime_error with a one-line message on
    /// failure, and no_cluster when there is no cluster to start and `create` is false.
    static embedded_cluster start(const config& cfg, bool create = true);

    embedded_cluster(embedded_cluster&& other) noexcept;
    embedded_cluster& operator=(embedded_cluster&&) = delete;
    ~embedded_cluster();

    /// Returns the libpq conninfo of the `fulltime` database.
    const std::string& conninfo() const noexcept { return conninfo_; }
    /// Returns the cluster's data directory.
    const std::string& data_dir() const noexcept { return data_dir_; }

    /// Stops the cluster (fast shutdown), waiting for it. Safe to call twice.
    void stop();

    /// Returns whether start() found the cluster already running (a `fulltime serve`'s, or one
    /// left by an engine that was killed) rather than starting it.
    bool adopted() const noexcept { return adopted_; }
    /// Leaves the cluster running when this object goes away: for a command that borrowed the
    /// cluster of a running `fulltime serve` and must not stop it under that engine.
    void leave_running() noexcept { running_ = false; }

private:
    embedded_cluster() = default;

    std::string bin_dir_;
    std::string root_dir_;
    std::string data_dir_;
    std::string conninfo_;
    std::optional<run_as> owner_;
    bool running_ = false;
    bool adopted_ = false;
};

}  // namespace fulltime::app

#pragma once
/// What /readyz answers: the newest of the checks the gateway makes once per
/// limits::readiness_interval_ms (the database answers, every migration is applied) on a
/// database connection of its own. A probe costs no database work and no pool connection, so a
/// flood of /readyz cannot take the connections that deposits or settlement need, and a load
/// balancer is never told "not ready" because the engine was busy answering load balancers.

#include "fulltime/config/config.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::net::detail {

/// Names what a readiness check found.
enum class readiness : std::uint8_t { ready, unreachable, pending };

/// Checks the database periodically and keeps the newest finding. current() may be called from
/// any thread; run() and stop() belong to the probe's executor.
class readiness_probe : public std::enable_shared_from_this<readiness_probe> {
public:
    using clock = std::chrono::steady_clock;

    /// Makes a probe of the database at `conninfo` that checks `migrations` are applied; its
    /// connection opens on `executor` at the first check, within the settings' connect timeout
    /// and never longer than limits::readiness_timeout_ms.
    readiness_probe(boost::asio::any_io_executor executor, std::string conninfo,
                    const database_settings& settings,
                    std::vector<resources::migration_source> migrations);

    /// Returns what /readyz answers at `now`: the newest check's finding, or unreachable before
    /// the first check has finished or when the newest is older than the checks' interval plus
    /// their deadline (the checks are stuck).
    readiness current(clock::time_point now) const;

    /// Checks at once, then every limits::readiness_interval_ms until stop(); closes the
    /// connection when it returns. The caller keeps the probe alive until then.
    boost::asio::awaitable<void> run();

    /// Ends run() after the check under way, if any. Callable from any thread; the probe must be
    /// owned by a shared_ptr.
    void stop();

private:
    boost::asio::awaitable<readiness> check();
    void record(readiness r, const std::string& why);

    boost::asio::any_io_executor executor_;
    std::string conninfo_;
    std::chrono::milliseconds connect_timeout_;
    std::chrono::milliseconds query_timeout_;
    db::session_options session_;
    std::vector<resources::migration_source> migrations_;
    boost::asio::steady_timer timer_;
    std::unique_ptr<db::connection> connection_;
    bool stopped_ = false;             ///< on executor_
    std::optional<readiness> logged_;  ///< on executor_: the finding the log said last
    mutable std::mutex mutex_;         ///< guards the two below
    std::optional<readiness> newest_;  ///< the newest finding
    clock::time_point newest_at_{};    ///< when it was made
};

}  // namespace fulltime::net::detail

#pragma once
/// The CAF actor system of one engine instance, started and stopped by the app.

#include "fulltime/config/config.hpp"

#include <memory>

namespace caf {
class actor_system;
}

namespace fulltime::actors {

/// Owns the actor system. Construction starts its scheduler; shutdown() stops it.
class runtime {
public:
    /// Starts an actor system with the given settings.
    explicit runtime(const actor_settings& settings);
    /// Shuts down if not done yet.
    ~runtime();
    runtime(const runtime&) = delete;
    runtime& operator=(const runtime&) = delete;

    /// Returns the actor system, for spawning actors and for actors::ask.
    caf::actor_system& system() noexcept;

    /// Waits until every actor has terminated (the caller has told long-lived actors to quit),
    /// then stops the scheduler. Blocking: call it from main only.
    void shutdown();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace fulltime::actors

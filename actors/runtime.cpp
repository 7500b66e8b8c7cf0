#include "fulltime/actors/runtime.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <optional>

namespace fulltime::actors {

struct runtime::impl {
    caf::actor_system_config config;
    std::optional<caf::actor_system> system;
};

runtime::runtime(const actor_settings& settings) : impl_(std::make_unique<impl>()) {
    if (settings.scheduler_threads > 0) {
        impl_->config.set("scheduler.max-threads", settings.scheduler_threads);
    }
    // CAF's work-stealing workers poll for work before they sleep; on a small machine that
    // spinning takes CPU from PostgreSQL, so the default is the sharing policy, whose idle
    // workers wait on a condition variable.
    impl_->config.set("scheduler.policy", settings.scheduler_policy == "stealing"
                                              ? caf::atom("stealing")
                                              : caf::atom("sharing"));
    impl_->system.emplace(impl_->config);
}

runtime::~runtime() { shutdown(); }

caf::actor_system& runtime::system() noexcept { return *impl_->system; }

void runtime::shutdown() {
    if (impl_ && impl_->system) {
        impl_->system->await_all_actors_done();
        impl_->system.reset();
    }
}

}  // namespace fulltime::actors

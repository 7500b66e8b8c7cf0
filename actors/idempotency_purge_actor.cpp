// The idempotency purge actor: a round every interval and on request, each round a coroutine
// on the io_context whose count comes back to the actor as a message.

#include "actors/idempotency_purge_actor.hpp"

#include "actors/io_handoff.hpp"

#include <caf/all.hpp>

#include <optional>
#include <vector>

// The round's count never leaves the process: no serialization needed.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::optional<std::int64_t>)

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

using tick_atom = caf::atom_constant<caf::atom("ft_tick")>;
using purged_atom = caf::atom_constant<caf::atom("ft_purged")>;

struct purge_state {
    std::shared_ptr<purge_worker> worker;
    asio::any_io_executor io;
    std::chrono::milliseconds interval{0};
    bool running = false;
    bool tick_pending = false;
    std::vector<caf::response_promise> waiting;  ///< purge_now callers of the running round
    static inline const char* name = "fulltime.idempotency_purge";
};

using purge_actor = caf::stateful_actor<purge_state>;

void start_round(purge_actor* self) {
    auto& st = self->state;
    if (st.running) {
        return;
    }
    st.running = true;
    run_on_io<purged_atom>(self, st.io, [worker = st.worker] { return purge_round(worker); });
}

void schedule_tick(purge_actor* self) {
    auto& st = self->state;
    if (!st.tick_pending) {
        st.tick_pending = true;
        self->delayed_send(self, st.interval, tick_atom::value);
    }
}

caf::behavior purge_behavior(purge_actor* self, std::shared_ptr<purge_worker> worker,
                             asio::any_io_executor io, std::chrono::milliseconds interval) {
    self->state.worker = std::move(worker);
    self->state.io = std::move(io);
    self->state.interval = interval;
    self->set_exit_handler([self](caf::exit_msg& msg) {
        for (auto& p : self->state.waiting) {
            p.deliver(caf::make_error(caf::sec::request_receiver_down));
        }
        self->state.waiting.clear();
        self->quit(msg.reason);
    });
    schedule_tick(self);
    return {
        [self](tick_atom) {
            self->state.tick_pending = false;
            start_round(self);
        },
        [self](purge_atom) -> caf::result<std::int64_t> {
            auto promise = self->make_response_promise();
            self->state.waiting.push_back(promise);
            start_round(self);
            return promise;
        },
        // `deleted` is nullopt when a batch failed (what earlier batches deleted stays deleted).
        [self](purged_atom, std::optional<std::int64_t>& deleted) {
            auto& st = self->state;
            st.running = false;
            for (auto& p : st.waiting) {
                if (deleted) {
                    p.deliver(*deleted);
                } else {
                    p.deliver(caf::make_error(caf::sec::runtime_error));
                }
            }
            st.waiting.clear();
            schedule_tick(self);
        },
    };
}

}  // namespace

caf::actor spawn_idempotency_purge_actor(caf::actor_system& system,
                                         std::shared_ptr<purge_worker> worker,
                                         asio::any_io_executor io,
                                         std::chrono::milliseconds interval) {
    return system.spawn(purge_behavior, std::move(worker), std::move(io), interval);
}

}  // namespace fulltime::actors::detail

// The settlement coordinator: the market actors, the step slots, the periodic scan. See
// settlement.hpp for the shape.

#include "actors/settlement_coordinator.hpp"

#include "actors/io_handoff.hpp"
#include "actors/settlement_market_actor.hpp"
#include "fulltime/core/metrics.hpp"

#include <caf/all.hpp>

#include <deque>
#include <map>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

using tick_atom = caf::atom_constant<caf::atom("st_tick")>;
using scanned_atom = caf::atom_constant<caf::atom("st_scan")>;

struct market_entry {
    caf::actor actor;
    std::uint64_t wakes = 0;
};

struct coordinator_state {
    settlement_actor_settings settings;
    std::map<std::int64_t, market_entry> markets;
    std::size_t slots_free = 0;
    std::deque<caf::actor> waiting;  ///< market actors waiting for a slot, FIFO
    bool scanning = false;
    static inline const char* name = "fulltime.settlement";
};

using coordinator_actor = caf::stateful_actor<coordinator_state>;

void wake(coordinator_actor* self, std::int64_t market_id) {
    auto& st = self->state;
    auto it = st.markets.find(market_id);
    if (it == st.markets.end()) {
        auto actor = spawn_market_actor(self, market_id, st.settings);
        it = st.markets.emplace(market_id, market_entry{std::move(actor), 0}).first;
    }
    ++it->second.wakes;
    self->send(it->second.actor, wake_atom::value, it->second.wakes);
}

void start_scan(coordinator_actor* self) {
    auto& st = self->state;
    if (st.scanning) {
        return;
    }
    st.scanning = true;
    run_on_io<scanned_atom>(self, st.settings.io,
                            [worker = st.settings.worker] { return scan_backlog(worker); });
}

caf::behavior coordinator_behavior(coordinator_actor* self, settlement_actor_settings settings,
                                   std::size_t slots) {
    self->state.settings = std::move(settings);
    self->state.slots_free = slots;
    self->set_exit_handler([self](caf::exit_msg& msg) {
        for (auto& [id, entry] : self->state.markets) {
            self->send_exit(entry.actor, msg.reason);
        }
        self->state.markets.clear();
        self->quit(msg.reason);
    });
    start_scan(self);
    return {
        [self](wake_atom, std::int64_t market_id) { wake(self, market_id); },
        [self](slot_atom) {
            auto& st = self->state;
            auto asker = caf::actor_cast<caf::actor>(self->current_sender());
            if (!asker) {
                return;
            }
            if (st.slots_free > 0) {
                --st.slots_free;
                self->send(asker, granted_atom::value);
            } else {
                st.waiting.push_back(std::move(asker));
            }
        },
        [self](release_atom) {
            auto& st = self->state;
            if (!st.waiting.empty()) {
                auto next = std::move(st.waiting.front());
                st.waiting.pop_front();
                self->send(next, granted_atom::value);
            } else {
                ++st.slots_free;
            }
        },
        [self](idle_atom, std::int64_t market_id, std::uint64_t seen) {
            auto& st = self->state;
            auto it = st.markets.find(market_id);
            if (it == st.markets.end()) {
                return;
            }
            if (it->second.wakes == seen) {
                // Nothing arrived since the actor last looked: it retires. (An exit with reason
                // `normal` would be ignored by the actor.)
                self->send_exit(it->second.actor, caf::exit_reason::user_shutdown);
                st.markets.erase(it);
            } else {
                self->send(it->second.actor, wake_atom::value, it->second.wakes);
            }
        },
        [self](tick_atom) { start_scan(self); },
        [self](scanned_atom, backlog& b) {
            auto& st = self->state;
            st.scanning = false;
            if (b.ok) {
                st.settings.metrics->backlog_events.set(b.events);
                st.settings.metrics->backlog_markets.set(
                    static_cast<std::int64_t>(b.markets.size()));
                st.settings.metrics->backlog_age_ms.set(b.oldest_age_ms);
                for (auto market_id : b.markets) {
                    // A market whose actor is working needs no wake: it will find the event.
                    if (st.markets.find(market_id) == st.markets.end()) {
                        wake(self, market_id);
                    }
                }
            }
            self->delayed_send(self, st.settings.poll_interval, tick_atom::value);
        },
    };
}

}  // namespace

caf::actor spawn_settlement_coordinator(caf::actor_system& system,
                                        settlement_actor_settings settings, std::size_t slots) {
    return system.spawn(coordinator_behavior, std::move(settings), slots);
}

}  // namespace fulltime::actors::detail

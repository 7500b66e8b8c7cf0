#include "fulltime/net/server.hpp"

#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/limits.hpp"
#include "net/accept_backoff.hpp"
#include "net/http_session.hpp"
#include "net/server_state.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <malloc.h>

#include <stdexcept>

namespace fulltime::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace detail {

namespace {

metrics::registry& pick_registry(services& s, std::unique_ptr<metrics::registry>& own) {
    if (s.metrics != nullptr) {
        return *s.metrics;
    }
    own = std::make_unique<metrics::registry>();
    return *own;
}

// Whether an accept failed for want of descriptors, the process's (EMFILE) or the system's
// (ENFILE), or of kernel memory for a socket: a pause lets connections close meanwhile.
bool out_of_descriptors(const boost::system::error_code& ec) {
    return ec == asio::error::no_descriptors || ec == boost::system::errc::too_many_files_open ||
           ec == boost::system::errc::too_many_files_open_in_system ||
           ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

asio::awaitable<void> accept_loop(std::shared_ptr<server_state> state, listener which,
                                  [[maybe_unused]] gate_entry entry) {
    tcp::acceptor& acceptor =
        which == listener::operators ? state->admin_acceptor : state->acceptor;
    accept_backoff backoff(std::chrono::milliseconds(limits::accept_backoff_ms_min),
                           std::chrono::milliseconds(limits::accept_backoff_ms_max));
    asio::steady_timer pause(state->ioc);
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(state->pick_loop()),
                                                           asio::as_tuple(asio::use_awaitable));
        if (state->stopping.load()) {
            break;
        }
        if (ec) {
            if (ec == asio::error::operation_aborted) {
                break;
            }
            // Out of descriptors, or a connection reset before accept: keep serving, but neither
            // spin on a persistent error nor write a line per failure. The pending connections
            // wait in the listen backlog meanwhile.
            state->note_accept_failure(ec);
            pause.expires_after(out_of_descriptors(ec)
                                    ? backoff.failed()
                                    : std::chrono::milliseconds(limits::accept_backoff_ms_min));
            co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        backoff.succeeded();
        boost::system::error_code peer_ec;
        const auto peer = socket.remote_endpoint(peer_ec);
        if (peer_ec) {
            // Gone before it was served.
            continue;
        }
        std::string who = address_key(peer.address());
        if (state->open_connections.load() >= state->settings.connections_max) {
            state->note_refusal(refusal::connections, who);
            start_refusal(state, std::move(socket), std::move(who), refusal::connections);
            continue;
        }
        share slot = state->address_shares.take(who);
        if (!slot) {
            state->note_refusal(refusal::address, who);
            start_refusal(state, std::move(socket), std::move(who), refusal::address);
            continue;
        }
        // Replies are small and several may be in flight on one connection: without
        // TCP_NODELAY, Nagle holds a reply until the previous one is acknowledged, and the
        // client's delayed ACK turns that into tens of milliseconds per reply.
        boost::system::error_code nodelay_ec;
        socket.set_option(asio::ip::tcp::no_delay(true), nodelay_ec);
        state->open_connections.fetch_add(1);
        state->metrics.open_connections.add(1);
        start_http_session(state, std::move(socket), which, std::move(slot));
    }
}

asio::awaitable<void> run_readiness(std::shared_ptr<readiness_probe> probe,
                                    [[maybe_unused]] gate_entry entry) {
    co_await probe->run();
}

// Opens, binds and listens `acceptor` on host:port; returns the port bound. Throws
// std::runtime_error naming the address and the setting.
std::uint16_t open_acceptor(tcp::acceptor& acceptor, const std::string& setting,
                            const std::string& host, std::uint16_t port) {
    const std::string where = host + ":" + std::to_string(port);
    const auto fail = [&](const boost::system::error_code& e) {
        boost::system::error_code ignored;
        acceptor.close(ignored);
        throw std::runtime_error("cannot listen on " + where + " (" + setting +
                                 "): " + e.message());
    };
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) {
        fail(ec);
    }
    const tcp::endpoint endpoint(address, port);
    acceptor.open(endpoint.protocol(), ec);
    if (ec) {
        fail(ec);
    }
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (ec) {
        fail(ec);
    }
    acceptor.bind(endpoint, ec);
    if (ec) {
        fail(ec);
    }
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        fail(ec);
    }
    return acceptor.local_endpoint().port();
}

// Waits until the gate is empty or `until` passes; returns whether it emptied.
asio::awaitable<bool> wait_for_gate(server_state& state,
                                    std::chrono::steady_clock::time_point until) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (state.gate.load() > 0) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) {
            co_return false;
        }
        timer.expires_after(std::min<std::chrono::steady_clock::duration>(
            std::chrono::milliseconds(limits::shutdown_gate_poll_ms), until - now));
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    co_return true;
}

}  // namespace

bool serves_route(listener l, const http_route& route) noexcept {
    return l != listener::bettors || route.for_bettors;
}

asio::io_context& server_state::pick_loop() noexcept {
    if (svc.loops.empty()) {
        return ioc;
    }
    return *svc.loops[next_loop.fetch_add(1, std::memory_order_relaxed) % svc.loops.size()];
}

server_state::server_state(asio::io_context& io, services s)
    : ioc(io),
      svc(std::move(s)),
      settings(svc.cfg->gateway),
      registry(pick_registry(svc, own_metrics)),
      metrics(registry, !svc.token_keys.previous.empty()),
      acceptor(io),
      admin_acceptor(io),
      address_shares(settings.connections_per_address_max),
      refusal_shares(limits::refusals_per_address_max),
      session_shares(settings.sessions_per_account_max),
      connections_reports_(std::chrono::milliseconds(limits::refusal_log_interval_ms)),
      address_reports_(std::chrono::milliseconds(limits::refusal_log_interval_ms)),
      account_reports_(std::chrono::milliseconds(limits::refusal_log_interval_ms)),
      accept_failure_reports_(std::chrono::milliseconds(limits::refusal_log_interval_ms)) {
    metrics.connections_max.set(static_cast<std::int64_t>(settings.connections_max));
    if (!svc.readiness_conninfo.empty()) {
        readiness = std::make_shared<readiness_probe>(
            svc.db_executor ? svc.db_executor : asio::any_io_executor(ioc.get_executor()),
            svc.readiness_conninfo, svc.cfg->database, svc.migrations);
    }
    routes = builtin_routes(*this);
    for (auto& r : svc.routes) {
        for (const auto& b : routes) {
            // A feature may not shadow a built-in route: health checks must stay as they are.
            FULLTIME_ASSERT(!(b.path == r.path && b.method == r.method && !r.prefix));
        }
        routes.push_back(std::move(r));
    }
    svc.routes.clear();
}

void server_state::trim_memory() noexcept {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
    auto last = last_trim_ms.load();
    if (now - last < limits::memory_trim_interval_ms ||
        !last_trim_ms.compare_exchange_strong(last, now)) {
        return;
    }
    // glibc keeps freed chunks in its arenas (one per thread that allocated them); a queue of
    // replies freed on a close would otherwise stay in the process's RSS until reused.
    ::malloc_trim(0);
}

void server_state::track(std::uint64_t id, std::weak_ptr<tracked_connection> c) {
    std::lock_guard lock(mutex_);
    live_[id] = std::move(c);
}

void server_state::untrack(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    live_.erase(id);
}

void server_state::note_refusal(refusal why, std::string_view who) {
    metrics.rejected_connections(why).inc();
    report_throttle& reports = why == refusal::connections ? connections_reports_
                               : why == refusal::address   ? address_reports_
                                                           : account_reports_;
    const auto count = reports.note(report_throttle::clock::now());
    if (!count) {
        return;
    }
    std::string what;
    switch (why) {
        case refusal::connections:
            what = "gateway.connections_max (" + std::to_string(settings.connections_max) +
                   ") reached";
            break;
        case refusal::address:
            what = "the address's share, gateway.connections_per_address_max (" +
                   std::to_string(settings.connections_per_address_max) + "), taken";
            break;
        case refusal::account:
            what = "the account's share, gateway.sessions_per_account_max (" +
                   std::to_string(settings.sessions_per_account_max) + "), taken";
            break;
    }
    log::warn("refused " + std::to_string(*count) + " connection" + (*count == 1 ? "" : "s") +
                  " since the last such line: " + what,
              {{"reason", refusal_name(why)}, {"last", who}});
}

void server_state::note_accept_failure(const boost::system::error_code& ec) {
    metrics.accept_failures.inc();
    if (const auto count = accept_failure_reports_.note(report_throttle::clock::now())) {
        log::warn("accept failed " + std::to_string(*count) + " time" + (*count == 1 ? "" : "s") +
                  " since the last such line: " + ec.message() +
                  " (backing off; process_open_fds and process_max_fds in /metrics)");
    }
}

std::vector<std::shared_ptr<tracked_connection>> server_state::live() const {
    std::vector<std::shared_ptr<tracked_connection>> out;
    std::lock_guard lock(mutex_);
    out.reserve(live_.size());
    for (const auto& [id, weak] : live_) {
        if (auto c = weak.lock()) {
            out.push_back(std::move(c));
        }
    }
    return out;
}

}  // namespace detail

server::server(asio::io_context& ioc, services s) {
    if (s.cfg == nullptr) {
        throw std::invalid_argument("net::server needs a configuration");
    }
    state_ = std::make_shared<detail::server_state>(ioc, std::move(s));
    // The collector holds the state weakly: the registry may outlive the server.
    std::weak_ptr<detail::server_state> weak = state_;
    state_->registry.add_collector([weak](std::string& out) {
        if (auto st = weak.lock()) {
            st->metrics.render_requests(out);
            if (st->svc.pools != nullptr) {
                detail::render_pool_metrics(*st->svc.pools, out);
            }
        }
    });
}

server::~server() = default;

void server::start() {
    auto& st = *state_;
    st.port = detail::open_acceptor(st.acceptor, "listen", st.settings.host, st.settings.port);
    const bool split = st.settings.admin_host.has_value();
    if (split) {
        try {
            st.admin_port = detail::open_acceptor(st.admin_acceptor, "admin_listen",
                                                  *st.settings.admin_host, st.settings.admin_port);
        } catch (...) {
            boost::system::error_code ignored;
            st.acceptor.close(ignored);
            throw;
        }
        asio::co_spawn(
            st.admin_acceptor.get_executor(),
            detail::accept_loop(state_, detail::listener::operators, detail::gate_entry(*state_)),
            asio::detached);
    }
    asio::co_spawn(
        st.acceptor.get_executor(),
        detail::accept_loop(state_, split ? detail::listener::bettors : detail::listener::all,
                            detail::gate_entry(*state_)),
        asio::detached);
    if (st.readiness) {
        // On the probe's own executor (the pools'), where its connection lives.
        auto probe = st.readiness;
        asio::co_spawn(
            st.svc.db_executor ? st.svc.db_executor : asio::any_io_executor(st.ioc.get_executor()),
            detail::run_readiness(std::move(probe), detail::gate_entry(*state_)), asio::detached);
    }
}

std::uint16_t server::port() const noexcept { return state_->port; }

std::optional<std::uint16_t> server::admin_port() const noexcept {
    if (!state_->settings.admin_host) {
        return std::nullopt;
    }
    return state_->admin_port;
}

std::size_t server::open_connections() const noexcept { return state_->open_connections.load(); }

connection_registry& server::connections() noexcept { return state_->connections; }

asio::awaitable<void> server::shutdown(std::chrono::milliseconds deadline) {
    auto state = state_;
    const auto until = std::chrono::steady_clock::now() + deadline;
    state->stopping.store(true);
    // The acceptor belongs to the io_context's executor; close it there.
    asio::post(state->acceptor.get_executor(), [state] {
        boost::system::error_code ignored;
        state->acceptor.close(ignored);
        state->admin_acceptor.close(ignored);
    });
    if (state->readiness) {
        state->readiness->stop();
    }
    auto live = state->live();
    log::info("shutting down: " + std::to_string(live.size()) + " connections");
    for (const auto& c : live) {
        c->begin_shutdown();
    }
    live.clear();
    const bool drained = co_await detail::wait_for_gate(*state, until);
    if (drained) {
        log::info("shutdown complete");
        co_return;
    }
    live = state->live();
    log::warn("shutdown deadline passed: force-closing " + std::to_string(live.size()) +
              " connections");
    for (const auto& c : live) {
        c->force_close();
    }
    live.clear();
    const bool unwound = co_await detail::wait_for_gate(
        *state, std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(limits::shutdown_force_close_grace_ms));
    if (!unwound) {
        log::error(std::to_string(state->gate.load()) +
                   " coroutines still running after force-close");
    }
}

}  // namespace fulltime::net

// The built-in routes: liveness, readiness and metrics. No Beast here: handlers see only the
// gateway's own request and response types.

#include "fulltime/core/log.hpp"
#include "fulltime/db/migrations.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/limits.hpp"
#include "net/server_state.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <optional>

namespace fulltime::net::detail {

namespace asio = boost::asio;

namespace {

enum class readiness { ready, unreachable, pending };

// Shared between the waiting handler and the detached check: whichever finishes last frees it.
struct readiness_check {
    explicit readiness_check(asio::any_io_executor ex) : done(std::move(ex)) {}
    asio::steady_timer done;
    std::optional<readiness> result;
};

asio::awaitable<void> check_readiness(std::shared_ptr<server_state> holder,
                                      [[maybe_unused]] gate_entry entry,
                                      std::shared_ptr<readiness_check> check,
                                      asio::any_io_executor reply_executor) {
    server_state& state = *holder;
    readiness r = readiness::unreachable;
    try {
        auto conn = co_await state.svc.pools->background->acquire();
        if (!conn) {
            log::warn("readyz: " + db::describe(conn.error()));
        } else {
            auto migrated = co_await db::is_migrated(**conn, state.svc.migrations);
            if (!migrated) {
                log::warn("readyz: " + db::describe(migrated.error()));
            } else {
                r = *migrated ? readiness::ready : readiness::pending;
            }
        }
    } catch (const std::exception& e) {
        log::error(std::string("readyz: ") + e.what());
    }
    asio::post(reply_executor, [check, r] {
        check->result = r;
        check->done.cancel();
    });
}

http_response status_body(unsigned status, nlohmann::json body) {
    http_response r;
    r.status = status;
    r.body = body.dump();
    return r;
}

asio::awaitable<http_response> readyz(server_state& state) {
    const auto not_ready = [](std::string_view reason) {
        return status_body(503, {{"status", "not_ready"}, {"reason", reason}});
    };
    if (state.svc.pools == nullptr || state.svc.pools->background == nullptr) {
        co_return not_ready("database unreachable");
    }
    // `result` and the timer belong to this connection's executor (its strand); the check runs
    // on the pools' executor because a pool is used from the executor it was made with,
    // and posts its result back.
    auto ex = co_await asio::this_coro::executor;
    auto check = std::make_shared<readiness_check>(ex);
    check->done.expires_after(std::chrono::milliseconds(limits::readiness_timeout_ms));
    // Detached so that the answer is bounded even if the pool ignores cancellation; the check
    // holds the state and a gate entry, so shutdown waits for it.
    auto db_executor = state.svc.db_executor ? state.svc.db_executor
                                             : asio::any_io_executor(state.ioc.get_executor());
    asio::co_spawn(db_executor,
                   check_readiness(state.shared_from_this(), gate_entry(state), check, ex),
                   asio::detached);
    co_await check->done.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!check->result || *check->result == readiness::unreachable) {
        co_return not_ready("database unreachable");
    }
    if (*check->result == readiness::pending) {
        co_return not_ready("migrations pending");
    }
    co_return status_body(200, {{"status", "ready"}});
}

asio::awaitable<http_response> metrics_page(server_state& state) {
    http_response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = state.registry.render();
    co_return r;
}

}  // namespace

http_routes builtin_routes(server_state& state) {
    http_routes routes;
    routes.push_back(http_route{"healthz", "GET", "/healthz", false, route_auth::none,
                                [](http_request) -> asio::awaitable<http_response> {
                                    co_return status_body(200, {{"status", "ok"}});
                                },
                                true});
    // The state owns these routes, so a plain pointer to it lives exactly as long as they do.
    server_state* s = &state;
    routes.push_back(http_route{"readyz", "GET", "/readyz", false, route_auth::none,
                                [s](http_request) { return readyz(*s); }, true});
    routes.push_back(http_route{"metrics", "GET", "/metrics", false, route_auth::none,
                                [s](http_request) { return metrics_page(*s); }});
    return routes;
}

}  // namespace fulltime::net::detail

// `fulltime void-overdue --market M [--key K] [--force] [--operator NAME]`: the operator's
// release of a market's overdue reservations. It stores one void_open event (see
// db/functions/fulltime_void_overdue.sql) and exits; the settlement of a
// running `fulltime serve` finds it on its next scan (settlement.poll_interval_ms) and applies
// it like any result event. With no engine running the event waits, durable, and the next
// `fulltime serve` applies it when it starts.

#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/db/connection.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/reservation_statements.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace fulltime::app {

namespace {

namespace asio = boost::asio;

// result_events.event_key's bounds (0001_baseline.sql) and the producer name's (payload only).
constexpr std::size_t key_bytes_max = 255;
constexpr std::size_t operator_bytes_max = 64;

asio::awaitable<db::outcome<db::void_overdue_record>> run(asio::any_io_executor executor,
                                                          std::string conninfo, config cfg,
                                                          db::void_overdue_request request) {
    auto conn = co_await db::connection::open(
        executor, conninfo, std::chrono::milliseconds(cfg.database.connect_timeout_ms),
        std::chrono::milliseconds(cfg.database.query_timeout_ms));
    if (!conn) {
        co_return conn.error();
    }
    const db::transaction_options options{cfg.admin.lock_timeout_ms,
                                          cfg.database.statement_timeout_ms};
    auto done =
        co_await db::void_overdue(**conn, std::move(request), options, cfg.admin.lock_retries_max);
    co_return done;
}

}  // namespace

int void_overdue_command(const config& cfg, const void_overdue_options& o) {
    db::void_overdue_request request;
    request.market_id = o.market_id;
    request.force = o.force;
    if (o.key) {
        request.event_key = *o.key;
        if (request.event_key.empty() || request.event_key.size() > key_bytes_max) {
            throw std::invalid_argument("--key must be 1 to 255 bytes");
        }
    }
    request.operator_name = o.operator_name;
    if (request.operator_name.empty() || request.operator_name.size() > operator_bytes_max) {
        throw std::invalid_argument("--operator must be 1 to 64 bytes");
    }
    request.grace_s = cfg.reservations.grace_s;
    request.default_deadline_s = cfg.reservations.default_deadline_s;
    const std::int64_t market_id = request.market_id;

    // Never a new private cluster: a void on an empty database has nothing to void.
    const database_target target = open_command_target(cfg);
    asio::io_context ioc{1};
    auto fut = asio::co_spawn(
        ioc, run(ioc.get_executor(), target.conninfo, cfg, std::move(request)), asio::use_future);
    ioc.run();
    auto done = fut.get();
    if (!done) {
        throw_failure("void-overdue failed", done.error());
    }
    const bool accepted = done->status == db::void_overdue_status::stored ||
                          done->status == db::void_overdue_status::duplicate;
    nlohmann::json out{
        {"market_id", market_id}, {"event_key", done->event_key}, {"message", done->message}};
    if (accepted) {
        out["outcome"] = std::string(db::to_string(done->status));
        out["duplicate"] = done->status == db::void_overdue_status::duplicate;
        out["seq"] = done->seq;
    } else {
        out["code"] = std::string(db::to_string(done->status));
    }
    if (!done->deadline.empty()) {
        out["deadline"] = done->deadline;
    }
    std::printf("%s\n", out.dump().c_str());
    if (!accepted) {
        std::fprintf(stderr, "fulltime: %s: %s\n", std::string(db::to_string(done->status)).c_str(),
                     done->message.c_str());
        return 1;
    }
    return 0;
}

}  // namespace fulltime::app

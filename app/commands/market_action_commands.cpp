// The operator's actions on a market's feed from the command line. Each stores one event in
// result_events and exits; the settlement of a running `fulltime serve` finds it on its next
// scan (settlement.poll_interval_ms) and applies it like any result event. With no engine
// running the event waits, durable, and the next `fulltime serve` applies it when it starts.
// - `fulltime void-overdue --market M [--key K] [--force] [--operator NAME]`: the release of a
//   market's overdue reservations, a void_open event (db/functions/fulltime_void_overdue.sql).
// - `fulltime close-gap --market M --from A --through B [--key K] [--operator NAME]`: the
//   decision that seqs A to B of the market's feed will never come, a gap_closed event
//   (db/functions/fulltime_close_gap.sql), as POST /v1/feed/markets/{id}/close-gap does.

#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/core/feed_protocol.hpp"
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

// Opens one connection to the command's database and runs `action(connection, options,
// retries)` on it (an operator transaction, as the admin routes run theirs); returns its outcome.
template <typename Action>
auto run_on_database(const config& cfg, Action action) {
    // Never a new private cluster: an action on an empty database has nothing to act on.
    const database_target target = open_command_target(cfg);
    using outcome = typename decltype(action(std::declval<db::connection&>(),
                                             db::transaction_options{}, std::size_t{}))::value_type;
    asio::io_context ioc{1};
    auto fut = asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<outcome> {
            auto conn = co_await db::connection::open(
                ioc.get_executor(), target.conninfo,
                std::chrono::milliseconds(cfg.database.connect_timeout_ms),
                std::chrono::milliseconds(cfg.database.query_timeout_ms));
            if (!conn) {
                co_return conn.error();
            }
            const db::transaction_options options{cfg.admin.lock_timeout_ms,
                                                  cfg.database.statement_timeout_ms};
            co_return co_await action(**conn, options, cfg.admin.lock_retries_max);
        },
        asio::use_future);
    ioc.run();
    return fut.get();
}

void check_operator(const std::string& name) {
    if (name.empty() || name.size() > operator_bytes_max) {
        throw std::invalid_argument("--operator must be 1 to 64 bytes");
    }
}

// Prints the action's answer as one JSON line: `out`, with `if_accepted` merged in and the
// outcome when the event is stored or was before, else the refusal's code (said on stderr too).
// Returns the exit status: 0 accepted, 1 refused.
template <typename Status>
int answer(nlohmann::json out, const nlohmann::json& if_accepted, Status status,
           const std::string& message) {
    const bool accepted = status == Status::stored || status == Status::duplicate;
    const std::string name(db::to_string(status));
    out["message"] = message;
    if (accepted) {
        out.update(if_accepted);
        out["outcome"] = name;
        out["duplicate"] = status == Status::duplicate;
    } else {
        out["code"] = name;
    }
    std::printf("%s\n", out.dump().c_str());
    if (!accepted) {
        std::fprintf(stderr, "fulltime: %s: %s\n", name.c_str(), message.c_str());
        return 1;
    }
    return 0;
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
    check_operator(o.operator_name);
    request.operator_name = o.operator_name;
    request.grace_s = cfg.reservations.grace_s;
    request.default_deadline_s = cfg.reservations.default_deadline_s;
    const std::int64_t market_id = request.market_id;

    auto done = run_on_database(
        cfg,
        [&request](db::connection& conn, db::transaction_options options, std::size_t retries) {
            return db::void_overdue(conn, std::move(request), options, retries);
        });
    if (!done) {
        throw_failure("void-overdue failed", done.error());
    }
    nlohmann::json out{{"market_id", market_id}, {"event_key", done->event_key}};
    if (!done->deadline.empty()) {
        out["deadline"] = done->deadline;
    }
    return answer(std::move(out), {{"seq", done->seq}}, done->status, done->message);
}

int close_gap_command(const config& cfg, const close_gap_options& o) {
    // The route's own reading of a request body, so the command and the route refuse alike.
    nlohmann::json body{{"from", o.from}, {"through", o.through}};
    if (o.key) {
        body["key"] = *o.key;
    }
    auto parsed = feed::parse_close_gap_request(body);
    if (!parsed) {
        throw std::invalid_argument(parsed.error().message);
    }
    check_operator(o.operator_name);
    db::close_gap_request request;
    request.market_id = o.market_id;
    request.from = parsed->from;
    request.through = parsed->through;
    request.event_key = std::move(parsed->key).value_or(std::string());
    request.operator_name = o.operator_name;

    auto done = run_on_database(
        cfg,
        [&request](db::connection& conn, db::transaction_options options, std::size_t retries) {
            return db::close_gap(conn, std::move(request), options, retries);
        });
    if (!done) {
        throw_failure("close-gap failed", done.error());
    }
    return answer({{"market_id", o.market_id},
                   {"from", parsed->from},
                   {"through", parsed->through},
                   {"event_key", done->event_key}},
                  nlohmann::json::object(), done->status, done->message);
}

}  // namespace fulltime::app

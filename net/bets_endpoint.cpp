#include "fulltime/net/bets_endpoint.hpp"

#include "fulltime/actors/placement.hpp"
#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/bets_statements.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/projection_statements.hpp"
#include "fulltime/db/read_router.hpp"
#include "fulltime/limits.hpp"
#include "fulltime/net/account_writes.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

const char* const read_busy = "the database is busy: retry shortly";

// Logs a read that failed and is answered busy. A full read pool (no connection in time, or
// its queue full) is load being shed: the pool's metrics count it, and a line per request
// would let one client flood the log; anything else is worth a line.
void note_read_failure(std::string_view what, const db::failure& f) {
    if (f.code == db::errc::pool_timeout || f.code == db::errc::pool_queue_full) {
        return;
    }
    log::warn(std::string(what) + ": " + db::describe(f));
}

json id_of(const json& message) {
    auto it = message.find("id");
    return it == message.end() ? json(nullptr) : *it;
}

using steady = std::chrono::steady_clock;

std::chrono::microseconds since(steady::time_point from, steady::time_point to) {
    return std::chrono::duration_cast<std::chrono::microseconds>(to - from);
}

// Runs on the connection's own loop (see add_bets_handlers): it touches only the placement
// service, which hands the request to an actor of this loop, and atomic metrics.
asio::awaitable<json> handle_place(bets_endpoint_services s, std::int64_t account_id,
                                   account_writes* writes, steady::time_point received,
                                   json message) {
    auto request = bets::parse_place(message, account_id);
    if (!request) {
        s.metrics->invalid.inc();
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    std::string fingerprint = bets::fingerprint(*request);
    s.metrics->stage(actors::placement_stage::parse).record(since(received, steady::now()));
    steady::time_point answered;
    auto result =
        co_await s.placement->place(std::move(*request), std::move(fingerprint), &answered);
    if (writes != nullptr && result.xid != 0) {
        writes->note(account_id, result.xid, result.commit_lsn);
    }
    json reply = bets::render_place_result(id_of(message), result);
    s.metrics->stage(actors::placement_stage::reply).record(since(answered, steady::now()));
    co_return reply;
}

// The account's own writes, as its reads must see them: every placement this engine answered
// for it, on any of its sessions, and every settlement pushed to it (nothing when
// read-your-writes is off or there are none).
account_writes::seen own_writes(const bets_endpoint_services& s, const request_context& context) {
    return s.reads_settings.read_your_writes && context.writes != nullptr
               ? context.writes->of(context.claims.account_id)
               : account_writes::seen{};
}

asio::awaitable<json> handle_balance(bets_endpoint_services s, const request_context& context,
                                     json message) {
    auto request = bets::parse_balance(message, context.claims.account_id);
    if (!request) {
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    const db::read_need need{std::chrono::milliseconds(s.reads_settings.balance_staleness_ms),
                             own_writes(s, context).commit_lsn};
    const std::int64_t account_id = request->account_id;
    auto balance = co_await s.reads->run(
        need, [account_id](db::connection& conn) { return db::read_balance(conn, account_id); });
    if (!balance) {
        if (balance.error().code == db::errc::bad_result) {
            throw std::runtime_error("balance: unexpected result shape");
        }
        note_read_failure("balance", balance.error());
        co_return bets::render_busy(id_of(message), read_busy);
    }
    if (!*balance) {
        co_return bets::render_invalid(id_of(message), "the account does not exist");
    }
    co_return bets::render_balance(id_of(message), **balance);
}

// One page of the read model, once its projector has passed `xid` (the account's last write; 0:
// none): nullopt when it did not within ryw_wait, or has not and is yielding to a settlement
// (`yielding`, this engine's projector's gauge; nullptr: none runs here), and the page must come
// from the write tables.
asio::awaitable<db::outcome<std::optional<bets::bets_page>>> read_model_page(
    db::connection& conn, const read_settings& settings, bets::bets_request request,
    std::uint64_t xid, const metrics::gauge* yielding) {
    if (xid != 0) {
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(settings.ryw_wait_ms);
        asio::steady_timer timer(co_await asio::this_coro::executor);
        for (;;) {
            auto passed = co_await db::projection_passed(conn, settings.projector_consumer, xid);
            if (!passed) {
                co_return passed.error();
            }
            if (*passed) {
                break;
            }
            if (std::chrono::steady_clock::now() >= deadline ||
                (yielding != nullptr && yielding->value() != 0)) {
                co_return std::optional<bets::bets_page>{};
            }
            timer.expires_after(std::chrono::milliseconds(limits::read_ryw_poll_ms));
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }
    auto page = co_await db::list_bet_views(conn, request.account_id, request.status, request.limit,
                                            request.before);
    if (!page) {
        co_return page.error();
    }
    co_return std::optional<bets::bets_page>{std::move(*page)};
}

asio::awaitable<json> handle_bets(bets_endpoint_services s, const request_context& context,
                                  json message) {
    auto request = bets::parse_bets(message, context.claims.account_id);
    if (!request) {
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    const bets::bets_request r = *request;
    db::outcome<bets::bets_page> page = db::failure{db::errc::server_error, {}, "not read"};
    if (s.reads_settings.bets_source == "read_model") {
        // The read model answers for every write the projector has passed; the standby holds
        // it as of its replay. An account whose own placement is not there yet gets its page
        // from the write tables on the primary, which hold every committed bet.
        const db::read_need need{std::chrono::milliseconds(s.reads_settings.bets_staleness_ms), 0};
        const std::uint64_t xid = own_writes(s, context).xid;
        const read_settings settings = s.reads_settings;
        const metrics::gauge* yielding = s.projector_yielding;
        auto projected =
            co_await s.reads->run(need, [&settings, r, xid, yielding](db::connection& conn) {
                return read_model_page(conn, settings, r, xid, yielding);
            });
        if (!projected) {
            page = projected.error();
        } else if (*projected) {
            page = std::move(**projected);
        } else {
            s.reads_behind->inc();
            page = co_await s.reads->run(db::read_need{}, [r](db::connection& conn) {
                return db::list_bets(conn, r.account_id, r.status, r.limit, r.before);
            });
        }
    } else {
        const db::read_need need{std::chrono::milliseconds(s.reads_settings.bets_staleness_ms),
                                 own_writes(s, context).commit_lsn};
        page = co_await s.reads->run(need, [r](db::connection& conn) {
            return db::list_bets(conn, r.account_id, r.status, r.limit, r.before);
        });
    }
    if (!page) {
        if (page.error().code == db::errc::bad_result) {
            throw std::runtime_error("bets: unexpected result shape");
        }
        note_read_failure("bets", page.error());
        co_return bets::render_busy(id_of(message), read_busy);
    }
    co_return bets::render_bets(id_of(message), *page);
}

}  // namespace

void add_bets_handlers(endpoint_handlers& handlers, bets_endpoint_services services) {
    endpoint_handler& place = handlers["place"];
    place.run = [services](const request_context& context, json message) {
        return handle_place(services, context.claims.account_id, context.writes,
                            context.received_at, std::move(message));
    };
    place.on_connection_loop = true;
    place.write_time = &services.metrics->stage(actors::placement_stage::write);
    place.total_time = &services.metrics->stage(actors::placement_stage::total);
    handlers["balance"] = [services](const request_context& context, json message) {
        return handle_balance(services, context, std::move(message));
    };
    handlers["bets"] = [services](const request_context& context, json message) {
        return handle_bets(services, context, std::move(message));
    };
}

}  // namespace fulltime::net

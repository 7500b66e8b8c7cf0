#include "fulltime/net/operator_routes.hpp"

#include "fulltime/config/config.hpp"
#include "fulltime/core/feed_protocol.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/wallet_statements.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <memory>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr std::string_view accounts_path = "/v1/accounts";

/// Names how one deposit or withdrawal request ended, as the metric's `outcome` label.
enum class wallet_outcome {
    applied = 0,
    replayed,
    key_reused,
    insufficient_funds,
    unknown_account,
    invalid,
    busy,
    error
};
constexpr std::array<std::string_view, 8> wallet_outcomes = {
    "applied",         "replayed", "key_reused", "insufficient_funds",
    "unknown_account", "invalid",  "busy",       "error"};

struct operator_state {
    const config* cfg = nullptr;
    db::pools* pools = nullptr;
    // [deposit, withdrawal][outcome]
    std::array<std::array<metrics::counter*, wallet_outcomes.size()>, 2> counters{};
    metrics::counter* lock_retries = nullptr;

    void count(db::transfer_kind kind, wallet_outcome o) {
        counters[kind == db::transfer_kind::deposit ? 0 : 1][static_cast<std::size_t>(o)]->inc();
    }

    db::transaction_options options() const {
        return db::transaction_options{cfg->admin.lock_timeout_ms,
                                       cfg->database.statement_timeout_ms};
    }
};

json account_json(const db::account_row& a) {
    return json{{"account_id", a.account_id},
                {"currency", a.currency},
                {"available", money::format_amount(a.available_minor, a.currency)},
                {"reserved", money::format_amount(a.reserved_minor, a.currency)},
                {"owed", money::format_amount(a.owed_minor, a.currency)}};
}

// Turns a database failure into 503 busy or unavailable; details stay in the log.
http_response wallet_failed(const db::failure& f, std::string_view what) {
    if (f.code == db::errc::lock_timeout || f.code == db::errc::pool_timeout ||
        f.code == db::errc::pool_queue_full || f.retryable()) {
        return problem(503, "busy", "the wallet is busy; retry with the same key");
    }
    log::error("operator api: " + std::string(what) + " failed: " + db::describe(f));
    return problem(503, "unavailable", "the database is unavailable; retry");
}

http_response unknown_account(std::int64_t account_id) {
    return problem(404, "unknown_account",
                   "account " + std::to_string(account_id) + " does not exist");
}

asio::awaitable<http_response> create_account(std::shared_ptr<operator_state> st,
                                              http_request request) {
    auto body = parse_body(request.body);
    if (!body) {
        co_return std::move(body.error());
    }
    auto parsed = feed::parse_account_request(*body);
    if (!parsed) {
        co_return problem(400, "invalid_request", parsed.error().message);
    }
    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        co_return wallet_failed(conn.error(), "create account");
    }
    auto done =
        co_await db::create_account(**conn, parsed->account_id, parsed->currency, st->options());
    if (!done) {
        co_return wallet_failed(done.error(), "create account");
    }
    const char* outcome = done->status == db::account_creation::created    ? "created"
                          : done->status == db::account_creation::existing ? "existing"
                                                                           : "currency_conflict";
    log::info("operator: create account", {{"operator", operator_of(request)},
                                           {"account", parsed->account_id},
                                           {"currency", parsed->currency},
                                           {"outcome", outcome}});
    switch (done->status) {
        case db::account_creation::created:
            co_return json_response(201, account_json(done->account));
        case db::account_creation::existing:
            co_return json_response(200, account_json(done->account));
        case db::account_creation::currency_conflict:
            break;
    }
    co_return problem(409, "account_exists",
                      "account " + std::to_string(done->account.account_id) +
                          " exists with currency " + done->account.currency);
}

asio::awaitable<http_response> get_account(std::shared_ptr<operator_state> st,
                                           std::int64_t account_id) {
    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        co_return wallet_failed(conn.error(), "get account");
    }
    auto found = co_await db::find_account(**conn, account_id);
    if (!found) {
        co_return wallet_failed(found.error(), "get account");
    }
    if (!*found) {
        co_return unknown_account(account_id);
    }
    co_return json_response(200, account_json(**found));
}

// The answer to a transfer the database decided, counted and logged with the operator.
http_response answer_transfer(operator_state& st, db::transfer_kind kind, std::int64_t account_id,
                              const http_request& request, const feed::transfer_request& parsed,
                              std::int64_t amount_minor, const std::string& currency,
                              const db::transfer_result& done) {
    const std::string what(db::to_string(kind));
    // Every outcome is logged with the operator: money moved, or why it did not.
    const auto note = [&](std::string_view outcome) {
        log::info("operator: " + what, {{"operator", operator_of(request)},
                                        {"account", account_id},
                                        {"key", parsed.key},
                                        {"amount", money::format_amount(amount_minor, currency)},
                                        {"outcome", outcome},
                                        {"transfer_id", done.transfer_id}});
    };
    const json described{{"transfer_id", done.transfer_id},
                         {"account_id", account_id},
                         {"kind", what},
                         {"key", parsed.key},
                         {"amount", money::format_amount(done.amount_minor, currency)},
                         {"currency", done.currency},
                         {"created_at", done.created_at}};
    switch (done.status) {
        case db::transfer_status::applied: {
            st.count(kind, wallet_outcome::applied);
            note("applied");
            json reply = described;
            reply["replayed"] = false;
            return json_response(201, reply);
        }
        case db::transfer_status::replayed: {
            st.count(kind, wallet_outcome::replayed);
            note("replayed");
            json reply = described;
            reply["replayed"] = true;
            return json_response(200, reply);
        }
        case db::transfer_status::key_reused:
            st.count(kind, wallet_outcome::key_reused);
            note("key_reused");
            return problem(409, "idempotency_key_reused",
                           "key \"" + parsed.key.substr(0, 64) + "\" already " +
                               (kind == db::transfer_kind::deposit ? "deposited " : "withdrew ") +
                               money::format_amount(done.amount_minor, currency) +
                               "; a key moves one amount once");
        case db::transfer_status::insufficient_funds:
            st.count(kind, wallet_outcome::insufficient_funds);
            note("insufficient_funds");
            return problem(
                409, "insufficient_funds",
                "available balance is below " + money::format_amount(amount_minor, currency));
        case db::transfer_status::unknown_account:
            break;
    }
    st.count(kind, wallet_outcome::unknown_account);
    note("unknown_account");
    return unknown_account(account_id);
}

asio::awaitable<http_response> transfer(std::shared_ptr<operator_state> st, db::transfer_kind kind,
                                        std::int64_t account_id, http_request request) {
    const std::string what(db::to_string(kind));
    auto body = parse_body(request.body);
    if (!body) {
        st->count(kind, wallet_outcome::invalid);
        co_return std::move(body.error());
    }
    if (auto clash = take_idempotency_header(request, *body)) {
        st->count(kind, wallet_outcome::invalid);
        co_return std::move(*clash);
    }
    auto parsed = feed::parse_transfer_request(*body);
    if (!parsed) {
        st->count(kind, wallet_outcome::invalid);
        co_return problem(400, "invalid_request", parsed.error().message);
    }
    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        st->count(kind, wallet_outcome::busy);
        co_return wallet_failed(conn.error(), what);
    }
    // The amount's decimals depend on the account's currency, read first: a currency never
    // changes, so the transfer's own transaction need not read it again.
    auto account = co_await db::find_account(**conn, account_id);
    if (!account) {
        st->count(kind, account.error().retryable() ? wallet_outcome::busy : wallet_outcome::error);
        co_return wallet_failed(account.error(), what);
    }
    if (!*account) {
        st->count(kind, wallet_outcome::unknown_account);
        log::info("operator: " + what, {{"operator", operator_of(request)},
                                        {"account", account_id},
                                        {"key", parsed->key},
                                        {"outcome", "unknown_account"}});
        co_return unknown_account(account_id);
    }
    const std::string currency = (*account)->currency;
    const auto amount_minor =
        money::thousandths_to_minor(parsed->amount_thousandths, money::minor_digits(currency));
    if (!amount_minor) {
        st->count(kind, wallet_outcome::invalid);
        co_return problem(400, "invalid_request",
                          "amount: " + money::describe(amount_minor.error(), currency));
    }
    std::size_t retries = 0;
    auto done =
        co_await db::apply_transfer(**conn, kind, account_id, parsed->key, *amount_minor,
                                    st->options(), st->cfg->admin.lock_retries_max, &retries);
    st->lock_retries->inc(retries);
    if (!done) {
        const bool busy = done.error().retryable();
        st->count(kind, busy ? wallet_outcome::busy : wallet_outcome::error);
        co_return wallet_failed(done.error(), what);
    }
    co_return answer_transfer(*st, kind, account_id, request, *parsed, *amount_minor, currency,
                              *done);
}

// Splits "/v1/accounts/{id}[/{rest}]" into the id text and the rest ("" when absent).
bool split_account_path(std::string_view path, std::string_view& id, std::string_view& rest) {
    if (!path.starts_with(accounts_path) || path.size() <= accounts_path.size() + 1 ||
        path[accounts_path.size()] != '/') {
        return false;
    }
    const std::string_view tail = path.substr(accounts_path.size() + 1);
    const auto slash = tail.find('/');
    id = tail.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : tail.substr(slash + 1);
    return true;
}

http_response not_found(std::string_view path) {
    return problem(404, "not_found", "no such resource: " + std::string(path.substr(0, 128)));
}

asio::awaitable<http_response> post_under_account(std::shared_ptr<operator_state> st,
                                                  http_request request) {
    std::string_view id_text;
    std::string_view rest;
    if (!split_account_path(request.path, id_text, rest) ||
        (rest != "deposits" && rest != "withdrawals")) {
        co_return not_found(request.path);
    }
    const auto account_id = feed::parse_path_id(id_text);
    if (!account_id) {
        co_return problem(400, "invalid_request",
                          "the account id in the path must be a positive integer");
    }
    const auto kind =
        rest == "deposits" ? db::transfer_kind::deposit : db::transfer_kind::withdrawal;
    auto response = co_await transfer(st, kind, *account_id, std::move(request));
    co_return response;
}

asio::awaitable<http_response> get_under_account(std::shared_ptr<operator_state> st,
                                                 http_request request) {
    std::string_view id_text;
    std::string_view rest;
    if (!split_account_path(request.path, id_text, rest) || !rest.empty()) {
        co_return not_found(request.path);
    }
    const auto account_id = feed::parse_path_id(id_text);
    if (!account_id) {
        co_return problem(400, "invalid_request",
                          "the account id in the path must be a positive integer");
    }
    auto response = co_await get_account(st, *account_id);
    co_return response;
}

}  // namespace

http_routes make_operator_routes(const config& cfg, db::pools& pools, metrics::registry& registry) {
    auto st = std::make_shared<operator_state>();
    st->cfg = &cfg;
    st->pools = &pools;
    for (std::size_t k = 0; k < 2; ++k) {
        for (std::size_t o = 0; o < wallet_outcomes.size(); ++o) {
            st->counters[k][o] =
                &registry.make_counter("fulltime_wallet_transfers_total",
                                       "Deposit and withdrawal requests, by kind and outcome.",
                                       metrics::label("kind", k == 0 ? "deposit" : "withdrawal") +
                                           "," + metrics::label("outcome", wallet_outcomes[o]));
        }
    }
    st->lock_retries = &registry.make_counter(
        "fulltime_wallet_lock_retries_total",
        "Deposit and withdrawal transactions run again after a lock timeout.");

    http_routes routes;
    http_route create;
    create.name = "accounts";
    create.method = "POST";
    create.path = std::string(accounts_path);
    create.auth = route_auth::admin;
    create.handler = [st](http_request request) { return create_account(st, std::move(request)); };
    routes.push_back(std::move(create));

    http_route post_sub;
    post_sub.name = "account_transfers";
    post_sub.method = "POST";
    post_sub.path = std::string(accounts_path);
    post_sub.prefix = true;
    post_sub.auth = route_auth::admin;
    post_sub.handler = [st](http_request request) {
        return post_under_account(st, std::move(request));
    };
    routes.push_back(std::move(post_sub));

    http_route get;
    get.name = "account";
    get.method = "GET";
    get.path = std::string(accounts_path);
    get.prefix = true;
    get.auth = route_auth::admin;
    get.handler = [st](http_request request) { return get_under_account(st, std::move(request)); };
    routes.push_back(std::move(get));
    return routes;
}

}  // namespace fulltime::net

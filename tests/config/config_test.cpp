#include "fulltime/config/config.hpp"

#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <string>

using fulltime::config_error;
using fulltime::load_config;

namespace {

// Writes `text` to a fresh temporary file and returns its path.
std::string temp_file(const std::string& text) {
    char name[] = "/tmp/fulltime-config-test-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    std::ofstream(name) << text;
    return name;
}

std::string error_of(const std::optional<std::string>& path,
                     const std::map<std::string, std::string>& env) {
    try {
        load_config(path, env);
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

// Checks that a config file of `text` is refused with a one-line error holding `expected`.
void check_error(const std::string& text, const std::string& expected) {
    const auto path = temp_file(text);
    const auto msg = error_of(path, {});
    std::remove(path.c_str());
    CAPTURE(text);
    CHECK(msg.find(expected) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.rfind("config: ", 0) == 0);
}

}  // namespace

TEST_CASE("the built-in defaults load and match config/fulltime.json") {
    const auto c = load_config(std::nullopt, {});
    CHECK(c.state_dir == "./var");
    CHECK(c.database.url.empty());
    CHECK(c.gateway.host == "127.0.0.1");
    CHECK(c.gateway.port == 8080);
    CHECK(c.database.placement.size_max == 8);
    CHECK(c.database.settlement.size_max == 4);
    CHECK(c.database.read.wait_ms_max == 500);
    CHECK(c.gateway.frame_bytes_max == 65536);
    CHECK(c.embedded.bin_dir == "/usr/lib/postgresql/15/bin");
}

TEST_CASE("a config file overrides a subset of keys and ignores comment keys") {
    const auto path = temp_file(R"({"_doc":"mine","listen":"[::1]:9000",
        "database":{"pools":{"placement":{"size_max":3}}}})");
    const auto c = load_config(path, {});
    CHECK(c.gateway.host == "::1");
    CHECK(c.gateway.port == 9000);
    CHECK(c.database.placement.size_max == 3);
    CHECK(c.database.placement.wait_ms_max == 200);  // untouched sibling keeps its default
    std::remove(path.c_str());
}

TEST_CASE("environment variables override the file") {
    const auto path = temp_file(R"({"database":{"url":"host=/file"}})");
    const auto c = load_config(path, {{"FULLTIME_DATABASE_URL", "host=/env"},
                                      {"FULLTIME_LISTEN", "0.0.0.0:0"},
                                      {"FULLTIME_STATE_DIR", "/srv/ft"},
                                      {"FULLTIME_READ_DATABASE_URL", "host=/replica"},
                                      {"FULLTIME_DATABASE_POOLS_READ_SIZE_MAX", "12"},
                                      {"FULLTIME_TEST_DATABASE_URL", "ignored by the engine"},
                                      {"FULLTIME_SKIP_DEPS", "1"},  // scripts/build's own
                                      {"FULLTIME_BUILD_DIR", "/tmp/b"}});
    CHECK(c.database.url == "host=/env");
    CHECK(c.database.read_url == "host=/replica");
    CHECK(c.gateway.host == "0.0.0.0");
    CHECK(c.gateway.port == 0);
    CHECK(c.state_dir == "/srv/ft");
    CHECK(c.database.read.size_max == 12);
    std::remove(path.c_str());
}

TEST_CASE("unknown keys, wrong types and bad values are one-line errors") {
    check_error(R"({"lisen":"1.2.3.4:1"})", "unknown key 'lisen'");
    check_error(R"({"gateway":{"frame_bytes":1}})", "unknown key 'gateway.frame_bytes'");
    check_error(R"({"gateway":{"connections_max":"10"}})", "must be an integer");
    check_error(R"({"gateway":{"connections_max":1.5}})", "must be an integer");
    check_error(R"({"database":"x"})", "'database' must be an object");
    check_error(R"({"database":{"pools":{"placement":{"size_max":0}}}})",
                "'database.pools.placement.size_max' must be between 1 and 512, got 0");
    check_error(R"({"gateway":{"frame_bytes_max":99999999}})", "gateway.frame_bytes_max");
    check_error(R"({"listen":"localhost"})", "'listen' must be host:port");
    check_error(R"({"listen":"localhost:70000"})", "port must be 0..65535");
    check_error(R"({"log_level":"loud"})", "'log_level' must be");
    check_error(R"({"token_secret":"short"})", "at least 16 characters");
    check_error(R"({"token_secret_previous":"short"})",
                "'token_secret_previous' must be at least 16 characters");
    check_error(R"({"token_secret_previous_file":7})",
                "'token_secret_previous_file' must be a string");
    check_error(R"({"token_secret_previos":"0123456789abcdef"})",
                "unknown key 'token_secret_previos'");
    check_error(R"([1,2])", "the top level must be an object");
    check_error(R"({"listen": )", "not valid JSON");
    check_error(R"({"settlement":{"batch_bets_max":0}})",
                "'settlement.batch_bets_max' must be between");
    check_error(R"({"settlement":{"batch_size":500}})", "unknown key 'settlement.batch_size'");
    check_error(R"({"reservations":{"sweep_batch_size":500}})",
                "unknown key 'reservations.sweep_batch_size'");
    check_error(R"({"feed":{"lock_timeout_ms":0}})", "'feed.lock_timeout_ms' must be between");
    check_error(R"({"admin":{"lock_retries_max":101}})",
                "'admin.lock_retries_max' must be between 0 and 100");
    check_error(R"({"settlement":{"duty_percent":0}})",
                "'settlement.duty_percent' must be between 1 and 100");
    check_error(R"({"settlement":{"batches_in_flight":9}})",
                "'settlement.batches_in_flight' (9) must not exceed");
    check_error(R"({"settlement":{"lanes":0}})", "'settlement.lanes' must be between 1 and 64");
    check_error(R"({"settlement":{"lanes":5}})",
                "'settlement.lanes' (5) must not exceed 'database.pools.settlement.size_max' (4)");
}

TEST_CASE("database.prepared_statements: on by default, off by file or environment") {
    CHECK(load_config(std::nullopt, {}).database.prepared_statements);
    const auto path = temp_file(R"({"database":{"prepared_statements":false}})");
    CHECK_FALSE(load_config(path, {}).database.prepared_statements);
    CHECK(load_config(path, {{"FULLTIME_DATABASE_PREPARED_STATEMENTS", "true"}})
              .database.prepared_statements);
    CHECK(error_of(path, {{"FULLTIME_DATABASE_PREPARED_STATEMENTS", "0"}})
              .find("FULLTIME_DATABASE_PREPARED_STATEMENTS: '0' is not true or false") !=
          std::string::npos);
    std::remove(path.c_str());
    CHECK_FALSE(load_config(std::nullopt, {{"FULLTIME_DATABASE_PREPARED_STATEMENTS", "false"}})
                    .database.prepared_statements);
    const auto wrong = temp_file(R"({"database":{"prepared_statements":"no"}})");
    CHECK(error_of(wrong, {}).find("'database.prepared_statements' must be true or false") !=
          std::string::npos);
    std::remove(wrong.c_str());
}

TEST_CASE("settlement defaults: batches in flight follow the settlement pool") {
    const auto cfg = load_config(std::nullopt, {});
    CHECK(cfg.settlement.batch_bets_max == 500);
    CHECK(cfg.settlement.duty_percent == 100);
    CHECK(cfg.settlement.lanes == 2);
    CHECK(cfg.settlement.batches_in_flight == cfg.database.settlement.size_max);
    const auto sized =
        load_config(std::nullopt, {{"FULLTIME_DATABASE_POOLS_SETTLEMENT_SIZE_MAX", "6"}});
    CHECK(sized.settlement.batches_in_flight == 6);
}

TEST_CASE("the governor's budget in percent: off by default, at least 100 %, its baseline span") {
    const auto cfg = load_config(std::nullopt, {});
    CHECK(cfg.settlement.placement_p99_budget_percent == 0);
    CHECK(cfg.settlement.placement_baseline_ms == 60'000);
    const auto set =
        load_config(std::nullopt, {{"FULLTIME_SETTLEMENT_PLACEMENT_P99_BUDGET_PERCENT", "150"},
                                   {"FULLTIME_SETTLEMENT_PLACEMENT_BASELINE_MS", "20000"}});
    CHECK(set.settlement.placement_p99_budget_percent == 150);
    CHECK(set.settlement.placement_baseline_ms == 20'000);
    check_error(R"({"settlement":{"placement_p99_budget_percent":99}})",
                "'settlement.placement_p99_budget_percent' must be 0 (none) or at least 100");
    check_error(R"({"settlement":{"placement_p99_budget_percent":10001}})",
                "'settlement.placement_p99_budget_percent' must be between 0 and 10000");
    check_error(R"({"settlement":{"placement_baseline_ms":999}})",
                "'settlement.placement_baseline_ms' must be between 1000 and 3600000");
}

TEST_CASE("the admission shares and the header deadline: defaults, bounds, built by hand") {
    const auto cfg = load_config(std::nullopt, {});
    CHECK(cfg.gateway.connections_per_address_max == 1000);
    CHECK(cfg.gateway.sessions_per_account_max == 32);
    CHECK(cfg.gateway.header_timeout_ms == 5000);
    // A configuration built by hand starts from the same shares (config.hpp says why).
    const fulltime::config by_hand;
    CHECK(by_hand.gateway.connections_per_address_max == cfg.gateway.connections_per_address_max);
    CHECK(by_hand.gateway.sessions_per_account_max == cfg.gateway.sessions_per_account_max);
    CHECK(by_hand.gateway.header_timeout_ms == cfg.gateway.header_timeout_ms);
    const auto env =
        load_config(std::nullopt, {{"FULLTIME_GATEWAY_CONNECTIONS_PER_ADDRESS_MAX", "20"},
                                   {"FULLTIME_GATEWAY_SESSIONS_PER_ACCOUNT_MAX", "3"},
                                   {"FULLTIME_GATEWAY_HEADER_TIMEOUT_MS", "300"}});
    CHECK(env.gateway.connections_per_address_max == 20);
    CHECK(env.gateway.sessions_per_account_max == 3);
    CHECK(env.gateway.header_timeout_ms == 300);
    for (const char* key :
         {"connections_per_address_max", "sessions_per_account_max", "header_timeout_ms"}) {
        const auto path = temp_file(R"({"gateway":{")" + std::string(key) + R"(":0}})");
        const auto msg = error_of(path, {});
        std::remove(path.c_str());
        CHECK(msg.find("'gateway." + std::string(key) + "' must be between 1 and") !=
              std::string::npos);
    }
}

TEST_CASE("each path has its own lock settings, by default placement's values") {
    const auto cfg = load_config(std::nullopt, {});
    CHECK(cfg.feed.lock_timeout_ms == cfg.placement.lock_timeout_ms);
    CHECK(cfg.feed.lock_retries_max == cfg.placement.lock_retries_max);
    CHECK(cfg.admin.lock_timeout_ms == cfg.placement.lock_timeout_ms);
    CHECK(cfg.admin.lock_retries_max == cfg.placement.lock_retries_max);
    CHECK(cfg.placement.purge_lock_timeout_ms == cfg.placement.lock_timeout_ms);
    const auto env = load_config(std::nullopt, {{"FULLTIME_FEED_LOCK_TIMEOUT_MS", "250"},
                                                {"FULLTIME_ADMIN_LOCK_RETRIES_MAX", "0"}});
    CHECK(env.feed.lock_timeout_ms == 250);
    CHECK(env.admin.lock_retries_max == 0);
    CHECK(env.placement.lock_timeout_ms == cfg.placement.lock_timeout_ms);
    // A configuration built by hand starts from the same lock settings (config.hpp says why).
    const fulltime::config by_hand;
    CHECK(by_hand.feed.lock_timeout_ms == cfg.feed.lock_timeout_ms);
    CHECK(by_hand.feed.lock_retries_max == cfg.feed.lock_retries_max);
    CHECK(by_hand.admin.lock_timeout_ms == cfg.admin.lock_timeout_ms);
    CHECK(by_hand.admin.lock_retries_max == cfg.admin.lock_retries_max);
    CHECK(by_hand.placement.purge_lock_timeout_ms == cfg.placement.purge_lock_timeout_ms);
}

TEST_CASE("reservation defaults and bounds") {
    const auto cfg = load_config(std::nullopt, {});
    CHECK(cfg.reservations.grace_s == 3600);
    CHECK(cfg.reservations.default_deadline_s == 7 * 86400);
    CHECK(cfg.reservations.sweep_interval_ms == 60000);
    CHECK(cfg.reservations.sweep_batch_bets_max == 1000);
    const auto env = load_config(std::nullopt, {{"FULLTIME_RESERVATIONS_GRACE_S", "0"}});
    CHECK(env.reservations.grace_s == 0);
    CHECK(error_of(std::nullopt, {{"FULLTIME_RESERVATIONS_DEFAULT_DEADLINE_S", "59"}})
              .find("'reservations.default_deadline_s' must be between 60 and") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_RESERVATIONS_GRACE_S", "-1"}})
              .find("'reservations.grace_s' must be between 0 and") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_RESERVATIONS_SWEEP_BATCH_BETS_MAX", "0"}})
              .find("'reservations.sweep_batch_bets_max' must be between 1 and") !=
          std::string::npos);
}

TEST_CASE("reconcile defaults and bounds") {
    const auto cfg = load_config(std::nullopt, {});
    CHECK(cfg.reconcile.interval_ms == 300000);
    CHECK(cfg.reconcile.chunk_accounts == 1000);
    CHECK(cfg.reconcile.chunk_transfers == 20000);
    CHECK(cfg.reconcile.chunk_pause_ms == 0);
    CHECK(cfg.reconcile.lock_timeout_ms == 1000);
    CHECK(cfg.reconcile.statement_timeout_ms == 60000);
    CHECK(cfg.reconcile.run_timeout_ms == 600000);
    // 0: on demand only.
    CHECK(load_config(std::nullopt, {{"FULLTIME_RECONCILE_INTERVAL_MS", "0"}})
              .reconcile.interval_ms == 0);
    CHECK(error_of(std::nullopt, {{"FULLTIME_RECONCILE_INTERVAL_MS", "-1"}})
              .find("'reconcile.interval_ms' must be between 0 and 604800000") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_RECONCILE_CHUNK_ACCOUNTS", "0"}})
              .find("'reconcile.chunk_accounts' must be between 1 and 100000") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_RECONCILE_CHUNK_TRANSFERS", "1000001"}})
              .find("'reconcile.chunk_transfers' must be between 1 and 1000000") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_RECONCILE_RUN_TIMEOUT_MS", "0"}})
              .find("'reconcile.run_timeout_ms' must be between 1 and") != std::string::npos);
}

TEST_CASE("push cursor and outbox purge: defaults and bounds") {
    const auto cfg = load_config(std::nullopt, {});
    CHECK(cfg.settlement.push_consumer == "push");
    CHECK(cfg.settlement.outbox_purge_interval_ms == 10000);
    CHECK(cfg.settlement.outbox_purge_batch_max == 5000);
    const auto env =
        load_config(std::nullopt, {{"FULLTIME_SETTLEMENT_PUSH_CONSUMER", "push-b"},
                                   {"FULLTIME_SETTLEMENT_OUTBOX_PURGE_BATCH_MAX", "1"}});
    CHECK(env.settlement.push_consumer == "push-b");
    CHECK(env.settlement.outbox_purge_batch_max == 1);
    CHECK(error_of(std::nullopt, {{"FULLTIME_SETTLEMENT_PUSH_CONSUMER", ""}})
              .find("'settlement.push_consumer' must not be empty") != std::string::npos);
    // The CHECK on outbox_cursors.consumer: 64 bytes.
    CHECK(load_config(std::nullopt, {{"FULLTIME_SETTLEMENT_PUSH_CONSUMER", std::string(64, 'c')}})
              .settlement.push_consumer.size() == 64);
    CHECK(error_of(std::nullopt, {{"FULLTIME_SETTLEMENT_PUSH_CONSUMER", std::string(65, 'c')}})
              .find("'settlement.push_consumer' must be at most 64 bytes, got 65") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_SETTLEMENT_OUTBOX_PURGE_BATCH_MAX", "0"}})
              .find("'settlement.outbox_purge_batch_max' must be between 1 and 100000") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_SETTLEMENT_OUTBOX_PURGE_INTERVAL_MS", "0"}})
              .find("'settlement.outbox_purge_interval_ms' must be between 1 and") !=
          std::string::npos);
}

TEST_CASE("bad environment values and unknown FULLTIME_ variables are refused") {
    CHECK(error_of(std::nullopt, {{"FULLTIME_GATEWAY_CONNECTIONS_MAX", "lots"}})
              .find("FULLTIME_GATEWAY_CONNECTIONS_MAX: 'lots' is not an integer") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_GATEWAY_CONNECTIONS_MAX", "12abc"}})
              .find("is not an integer") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_DATABSE_URL", "x"}})
              .find("unknown environment variable FULLTIME_DATABSE_URL") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_DATABASE_POOLS_PLACEMENT_WAIT_MS_MAX", "0"}})
              .find("between 1 and") != std::string::npos);
}

TEST_CASE("a missing config file is an error, not a silent default") {
    CHECK(error_of(std::string("/nonexistent/fulltime.json"), {}) ==
          "config: cannot read /nonexistent/fulltime.json");
}

TEST_CASE("the read side: defaults, the standby by its design name, and refused values") {
    const auto defaults = load_config(std::nullopt, {});
    CHECK(defaults.database.read_url.empty());
    CHECK(defaults.read.bets_source == "read_model");
    CHECK(defaults.read.read_your_writes);
    CHECK(defaults.read.balance_staleness_ms == 1000);
    CHECK(defaults.read.projector_consumer == "projector");
    CHECK(defaults.placement.synchronous_commit.empty());

    const auto standby = load_config(
        std::nullopt, {{"FULLTIME_READ_DATABASE_URL", "host=/tmp/standby dbname=fulltime"},
                       {"FULLTIME_PLACEMENT_SYNCHRONOUS_COMMIT", "remote_apply"},
                       {"FULLTIME_READ_BETS_SOURCE", "write_tables"}});
    CHECK(standby.database.read_url == "host=/tmp/standby dbname=fulltime");
    CHECK(standby.placement.synchronous_commit == "remote_apply");
    CHECK(standby.read.bets_source == "write_tables");

    CHECK(error_of(std::nullopt, {{"FULLTIME_READ_BETS_SOURCE", "cache"}})
              .find("'read.bets_source' must be read_model or write_tables, got 'cache'") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_PLACEMENT_SYNCHRONOUS_COMMIT", "remote"}})
              .find("'placement.synchronous_commit' must be empty") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_READ_SAMPLE_INTERVAL_MS", "1"}})
              .find("'read.sample_interval_ms' must be between 10") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_READ_PROJECTOR_PAGE_ROWS_MAX", "10001"}})
              .find("'read.projector_page_rows_max' must be between 1 and 10000") !=
          std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_READ_PROJECTOR_CONSUMER", ""}})
              .find("'read.projector_consumer' must not be empty") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_READ_PROJECTOR_CONSUMER", std::string(65, 'p')}})
              .find("'read.projector_consumer' must be 1 to 64 characters") != std::string::npos);
}

TEST_CASE("a token secret rollover: the previous secret, inline or from a file") {
    const auto d = load_config(std::nullopt, {});
    CHECK(d.token_secret_previous.empty());
    CHECK(d.token_secret_previous_file.empty());

    const auto path = temp_file(R"({"token_secret":"new-secret-0123456789",
        "token_secret_previous":"old-secret-0123456789",
        "token_secret_previous_file":"/etc/fulltime/token_secret.previous"})");
    const auto c = load_config(path, {});
    std::remove(path.c_str());
    CHECK(c.token_secret == "new-secret-0123456789");
    CHECK(c.token_secret_previous == "old-secret-0123456789");
    CHECK(c.token_secret_previous_file == "/etc/fulltime/token_secret.previous");

    const auto e =
        load_config(std::nullopt, {{"FULLTIME_TOKEN_SECRET_PREVIOUS", std::string(16, 'o')},
                                   {"FULLTIME_TOKEN_SECRET_PREVIOUS_FILE", "/run/old"}});
    CHECK(e.token_secret_previous == std::string(16, 'o'));
    CHECK(e.token_secret_previous_file == "/run/old");

    CHECK(error_of(std::nullopt, {{"FULLTIME_TOKEN_SECRET_PREVIOUS", std::string(15, 'o')}})
              .find("'token_secret_previous' must be at least 16 characters") != std::string::npos);
    // The same secret twice is a rollover whose new secret was never written.
    CHECK(error_of(std::nullopt, {{"FULLTIME_TOKEN_SECRET", "same-secret-0123456789"},
                                  {"FULLTIME_TOKEN_SECRET_PREVIOUS", "same-secret-0123456789"}})
              .find("'token_secret_previous' is the same as 'token_secret'") != std::string::npos);
    // A previous secret beside a current one from a file or the state directory: compared
    // when the files are read (app/commands/secret.cpp), not here.
    CHECK_NOTHROW(
        load_config(std::nullopt, {{"FULLTIME_TOKEN_SECRET_PREVIOUS", std::string(16, 'o')}}));
}

TEST_CASE("running as a service: admin_listen, log_format, token_secret_file, migration locks") {
    const auto d = load_config(std::nullopt, {});
    CHECK_FALSE(d.gateway.admin_host.has_value());  // one listener unless admin_listen is set
    CHECK(d.log_format == "text");
    CHECK(d.token_secret_file.empty());
    CHECK(d.database.migration_lock_timeout_ms == 5000);

    const auto path = temp_file(R"({"state_dir":"/var/lib/fulltime","listen":"0.0.0.0:8080",
        "admin_listen":"127.0.0.1:8081","log_format":"json",
        "token_secret_file":"/etc/fulltime/token_secret"})");
    const auto c = load_config(path, {{"FULLTIME_DATABASE_MIGRATION_LOCK_TIMEOUT_MS", "250"}});
    std::remove(path.c_str());
    REQUIRE(c.gateway.admin_host.has_value());
    CHECK(*c.gateway.admin_host == "127.0.0.1");
    CHECK(c.gateway.admin_port == 8081);
    CHECK(c.gateway.port == 8080);
    CHECK(c.log_format == "json");
    CHECK(c.token_secret_file == "/etc/fulltime/token_secret");
    CHECK(c.database.migration_lock_timeout_ms == 250);

    // Port 0 on both picks two free ports: allowed (the tests run so).
    const auto any = load_config(std::nullopt, {{"FULLTIME_LISTEN", "127.0.0.1:0"},
                                                {"FULLTIME_ADMIN_LISTEN", "127.0.0.1:0"}});
    CHECK(any.gateway.admin_port == 0);

    CHECK(error_of(std::nullopt, {{"FULLTIME_ADMIN_LISTEN", "127.0.0.1:8080"}})
              .find("'admin_listen' must differ from 'listen'") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_ADMIN_LISTEN", "nowhere"}})
              .find("'admin_listen' must be host:port") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_LOG_FORMAT", "xml"}})
              .find("'log_format' must be text or json") != std::string::npos);
    CHECK(error_of(std::nullopt, {{"FULLTIME_DATABASE_MIGRATION_LOCK_TIMEOUT_MS", "0"}})
              .find("database.migration_lock_timeout_ms") != std::string::npos);
}

#include "fulltime/config/config.hpp"

#include "fulltime/core/resources.hpp"
#include "fulltime/limits.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

extern char** environ;

namespace fulltime {

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw config_error("config: " + what); }

bool is_comment(const std::string& key) { return !key.empty() && key.front() == '_'; }

std::string join(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
}

// Returns the environment variable that overrides a key path: FULLTIME_ + the path upper-cased
// with '.' replaced by '_'.
std::string env_name(const std::string& path) {
    std::string out = "FULLTIME_";
    for (char c : path) {
        out += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

// Overlays `layer` on `base`, refusing keys that base does not have and values whose type differs
// from the default's. `origin` names where the layer comes from, for the error message.
void overlay(json& base, const json& layer, const std::string& prefix, const std::string& origin) {
    if (!layer.is_object()) {
        fail(origin + ": " + (prefix.empty() ? "the top level" : "'" + prefix + "'") +
             " must be an object");
    }
    for (const auto& [key, value] : layer.items()) {
        if (is_comment(key)) {
            continue;
        }
        const std::string path = join(prefix, key);
        auto it = base.find(key);
        if (it == base.end()) {
            fail(origin + ": unknown key '" + path + "'");
        }
        if (it->is_object()) {
            overlay(*it, value, path, origin);
        } else if (it->is_string()) {
            if (!value.is_string()) {
                fail(origin + ": '" + path + "' must be a string");
            }
            *it = value;
        } else if (it->is_number_integer()) {
            if (!value.is_number_integer()) {
                fail(origin + ": '" + path + "' must be an integer");
            }
            *it = value;
        } else if (it->is_boolean()) {
            if (!value.is_boolean()) {
                fail(origin + ": '" + path + "' must be true or false");
            }
            *it = value;
        } else {
            fail("default of '" + path + "' has an unsupported type");
        }
    }
}

std::int64_t parse_env_integer(const std::string& name, const std::string& text) {
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc{} || ptr != end) {
        fail(name + ": '" + text + "' is not an integer");
    }
    return v;
}

// Applies FULLTIME_* variables to the leaves of `base` (whose shape is the defaults').
void apply_environment(json& base, const std::string& prefix,
                       const std::map<std::string, std::string>& env, std::set<std::string>& used) {
    for (auto& [key, value] : base.items()) {
        if (is_comment(key)) {
            continue;
        }
        const std::string path = join(prefix, key);
        if (value.is_object()) {
            apply_environment(value, path, env, used);
            continue;
        }
        const std::string name = env_name(path);
        auto it = env.find(name);
        if (it == env.end()) {
            continue;
        }
        used.insert(name);
        if (value.is_string()) {
            value = it->second;
        } else if (value.is_number_integer()) {
            value = parse_env_integer(name, it->second);
        } else if (value.is_boolean()) {
            if (it->second != "true" && it->second != "false") {
                fail(name + ": '" + it->second + "' is not true or false");
            }
            value = it->second == "true";
        }
    }
}

// Reads typed values out of the merged document and checks them against limits.hpp.
class reader {
public:
    explicit reader(const json& doc) : doc_(doc) {}

    std::string string(const std::string& path, bool allow_empty) const {
        std::string v = at(path).get<std::string>();
        if (!allow_empty && v.empty()) {
            fail("'" + path + "' must not be empty");
        }
        return v;
    }

    std::int64_t integer(const std::string& path, std::int64_t min, std::int64_t max) const {
        const std::int64_t v = at(path).get<std::int64_t>();
        if (v < min || v > max) {
            fail("'" + path + "' must be between " + std::to_string(min) + " and " +
                 std::to_string(max) + ", got " + std::to_string(v));
        }
        return v;
    }

    std::size_t size(const std::string& path, std::size_t min, std::size_t max) const {
        return static_cast<std::size_t>(
            integer(path, static_cast<std::int64_t>(min), static_cast<std::int64_t>(max)));
    }

    bool boolean(const std::string& path) const { return at(path).get<bool>(); }

    std::int64_t timeout_ms(const std::string& path) const {
        return integer(path, 1, limits::timeout_ms_max);
    }

private:
    const json& at(const std::string& path) const {
        const json* node = &doc_;
        std::size_t start = 0;
        while (true) {
            const auto dot = path.find('.', start);
            node = &node->at(path.substr(start, dot - start));
            if (dot == std::string::npos) {
                return *node;
            }
            start = dot + 1;
        }
    }

    const json& doc_;
};

pool_settings read_pool(const reader& r, const std::string& name) {
    const std::string base = "database.pools." + name + ".";
    pool_settings p;
    p.size_max = r.size(base + "size_max", 1, limits::pool_size_max);
    p.queue_max = r.size(base + "queue_max", 0, limits::pool_queue_max);
    p.wait_ms_max = r.timeout_ms(base + "wait_ms_max");
    return p;
}

// Splits "host:port" or "[v6]:port" of the key `key`.
std::pair<std::string, std::uint16_t> parse_address(const std::string& key,
                                                    const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
        fail("'" + key + "' must be host:port, got '" + text + "'");
    }
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    const std::string port_text = text.substr(colon + 1);
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc{} || ptr != port_text.data() + port_text.size() ||
        port > 65535) {
        fail("'" + key + "' port must be 0..65535, got '" + port_text + "'");
    }
    return {host, static_cast<std::uint16_t>(port)};
}

json parse_json(std::string_view text, const std::string& origin) {
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        // nlohmann's message names the byte offset; keep it on one line.
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        fail(origin + ": not valid JSON: " + msg);
    }
}

}  // namespace

namespace {

// The defaults, overlaid by the file at `path` (if any) and then by the FULLTIME_* variables of
// `environment`; an unknown variable is refused.
json merged_document(const std::optional<std::string>& path,
                     const std::map<std::string, std::string>& environment) {
    json doc = parse_json(resources::default_config(), "built-in defaults");

    if (path) {
        std::ifstream in(*path);
        if (!in) {
            fail("cannot read " + *path);
        }
        std::stringstream buffer;
        buffer << in.rdbuf();
        overlay(doc, parse_json(buffer.str(), *path), "", *path);
    }

    // docs/design.md names FULLTIME_READ_DATABASE_URL; the path-derived name is accepted too.
    std::map<std::string, std::string> env = environment;
    if (auto it = env.find("FULLTIME_READ_DATABASE_URL"); it != env.end()) {
        env.emplace("FULLTIME_DATABASE_READ_URL", it->second);
    }
    std::set<std::string> used{"FULLTIME_CONFIG", "FULLTIME_READ_DATABASE_URL"};
    apply_environment(doc, "", env, used);
    // The variables of the repository's scripts and test harness (scripts/lib.sh, scripts/build,
    // tests/e2e): a shell that exported them for a script may start the engine too.
    // FULLTIME_TEST_* is the test harness's whole family.
    static const std::set<std::string, std::less<>> scripts_own{
        "FULLTIME_BUILD_DIR", "FULLTIME_BUILD_TYPE", "FULLTIME_SKIP_DEPS",
        "FULLTIME_SANITIZE",  "FULLTIME_ROOT",       "FULLTIME_BINARY"};
    for (const auto& [name, value] : environment) {
        if (name.rfind("FULLTIME_", 0) == 0 && name.rfind("FULLTIME_TEST_", 0) != 0 &&
            !scripts_own.contains(name) && !used.contains(name)) {
            fail("unknown environment variable " + name +
                 " (see docs/config.md for the names that exist)");
        }
    }
    return doc;
}

void read_general(const reader& r, config& c) {
    c.state_dir = r.string("state_dir", false);
    c.token_secret = r.string("token_secret", true);
    if (!c.token_secret.empty() && c.token_secret.size() < 16) {
        fail("'token_secret' must be at least 16 characters (or empty to generate one)");
    }
    c.token_secret_file = r.string("token_secret_file", true);
    c.token_secret_previous = r.string("token_secret_previous", true);
    if (!c.token_secret_previous.empty() && c.token_secret_previous.size() < 16) {
        fail("'token_secret_previous' must be at least 16 characters (or empty for none)");
    }
    // A rollover that verifies with the same secret twice has not rotated anything: most likely
    // the new secret was never written. (Secrets from files are compared when they are read,
    // app/commands/secret.cpp.)
    if (!c.token_secret_previous.empty() && c.token_secret_previous == c.token_secret) {
        fail(
            "'token_secret_previous' is the same as 'token_secret': set token_secret to the new "
            "secret");
    }
    c.token_secret_previous_file = r.string("token_secret_previous_file", true);
    c.log_level = r.string("log_level", false);
    if (c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
        c.log_level != "error") {
        fail("'log_level' must be debug, info, warn or error, got '" + c.log_level + "'");
    }
    c.log_format = r.string("log_format", false);
    if (c.log_format != "text" && c.log_format != "json") {
        fail("'log_format' must be text or json, got '" + c.log_format + "'");
    }
    std::tie(c.gateway.host, c.gateway.port) = parse_address("listen", r.string("listen", false));
    if (const auto admin = r.string("admin_listen", true); !admin.empty()) {
        auto [host, port] = parse_address("admin_listen", admin);
        if (port != 0 && port == c.gateway.port && host == c.gateway.host) {
            fail("'admin_listen' must differ from 'listen' (both are " + admin +
                 "); leave it empty to serve the operator's routes on 'listen'");
        }
        c.gateway.admin_host = host;
        c.gateway.admin_port = port;
    }
}

database_settings read_database(const reader& r) {
    database_settings d;
    d.url = r.string("database.url", true);
    d.read_url = r.string("database.read_url", true);
    d.connect_timeout_ms = r.timeout_ms("database.connect_timeout_ms");
    d.statement_timeout_ms = r.timeout_ms("database.statement_timeout_ms");
    d.idle_in_transaction_timeout_ms =
        r.integer("database.idle_in_transaction_timeout_ms", 0, limits::timeout_ms_max);
    d.session_timeouts = r.boolean("database.session_timeouts");
    d.query_timeout_ms = r.timeout_ms("database.query_timeout_ms");
    d.migration_lock_timeout_ms = r.timeout_ms("database.migration_lock_timeout_ms");
    d.prepared_statements = r.boolean("database.prepared_statements");
    d.placement = read_pool(r, "placement");
    d.settlement = read_pool(r, "settlement");
    d.read = read_pool(r, "read");
    d.standby = read_pool(r, "standby");
    d.background = read_pool(r, "background");
    return d;
}

embedded_settings read_embedded(const reader& r) {
    embedded_settings e;
    e.bin_dir = r.string("embedded.bin_dir", false);
    e.start_timeout_ms = r.timeout_ms("embedded.start_timeout_ms");
    e.run_as_user = r.string("embedded.run_as_user", false);
    return e;
}

// The host and port come from `listen` (read_general); the rest from the gateway section.
void read_gateway(const reader& r, gateway_settings& g) {
    g.connections_max = r.size("gateway.connections_max", 1, limits::connections_max);
    g.connections_per_address_max =
        r.size("gateway.connections_per_address_max", 1, limits::connections_max);
    g.sessions_per_account_max =
        r.size("gateway.sessions_per_account_max", 1, limits::sessions_per_account_max);
    g.header_timeout_ms = r.timeout_ms("gateway.header_timeout_ms");
    g.frame_bytes_max = r.size("gateway.frame_bytes_max", 256, limits::frame_bytes_max);
    g.inflight_per_connection_max =
        r.size("gateway.inflight_per_connection_max", 1, limits::inflight_per_connection_max);
    g.write_queue_bytes_max = r.size("gateway.write_queue_bytes_max", limits::write_queue_bytes_min,
                                     limits::write_queue_bytes_max);
    g.write_queue_bytes_total_max =
        r.size("gateway.write_queue_bytes_total_max", limits::write_queue_bytes_total_min,
               limits::write_queue_bytes_total_max);
    if (g.write_queue_bytes_total_max < g.write_queue_bytes_max) {
        fail("'gateway.write_queue_bytes_total_max' (" +
             std::to_string(g.write_queue_bytes_total_max) +
             ") must be at least 'gateway.write_queue_bytes_max' (" +
             std::to_string(g.write_queue_bytes_max) + ")");
    }
    g.handshake_timeout_ms = r.timeout_ms("gateway.handshake_timeout_ms");
    g.idle_timeout_ms = r.timeout_ms("gateway.idle_timeout_ms");
    g.shutdown_deadline_ms = r.timeout_ms("gateway.shutdown_deadline_ms");
    // 0: one event loop per core (at least one).
    g.io_threads = r.size("gateway.io_threads", 0, limits::io_threads_max);
    if (g.io_threads == 0) {
        g.io_threads =
            std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, limits::io_threads_max);
    }
}

actor_settings read_actors(const reader& r) {
    actor_settings a;
    a.scheduler_threads = r.size("actors.scheduler_threads", 0, limits::scheduler_threads_max);
    a.request_timeout_ms = r.timeout_ms("actors.request_timeout_ms");
    a.scheduler_policy = r.string("actors.scheduler_policy", false);
    if (a.scheduler_policy != "sharing" && a.scheduler_policy != "stealing") {
        fail("'actors.scheduler_policy' must be sharing or stealing, got '" + a.scheduler_policy +
             "'");
    }
    return a;
}

placement_settings read_placement(const reader& r, const pool_settings& pool) {
    placement_settings p;
    // 0: one actor per placement connection.
    p.actors = r.size("placement.actors", 0, limits::pool_size_max);
    if (p.actors == 0) {
        p.actors = pool.size_max;
    }
    if (p.actors > pool.size_max) {
        fail("'placement.actors' (" + std::to_string(p.actors) +
             ") must not exceed 'database.pools.placement.size_max' (" +
             std::to_string(pool.size_max) + "): each actor owns one connection");
    }
    p.group_bets_max = r.size("placement.group_bets_max", 1, limits::placement_group_max);
    p.lock_timeout_ms = r.timeout_ms("placement.lock_timeout_ms");
    p.lock_retries_max =
        r.size("placement.lock_retries_max", 0, limits::placement_lock_retries_max);
    p.idempotency_retention_s =
        r.integer("placement.idempotency_retention_s", 60, limits::idempotency_retention_s_max);
    p.purge_batch_max = r.size("placement.purge_batch_max", 1, limits::purge_batch_keys_max);
    p.purge_interval_ms = r.timeout_ms("placement.purge_interval_ms");
    p.purge_lock_timeout_ms = r.timeout_ms("placement.purge_lock_timeout_ms");
    p.synchronous_commit = r.string("placement.synchronous_commit", true);
    static const std::set<std::string, std::less<>> levels{"",      "on",           "off",
                                                           "local", "remote_write", "remote_apply"};
    if (!levels.contains(p.synchronous_commit)) {
        fail(
            "'placement.synchronous_commit' must be empty (the server's), on, off, local, "
            "remote_write or remote_apply, got '" +
            p.synchronous_commit + "'");
    }
    return p;
}

settlement_settings read_settlement(const reader& r, const pool_settings& pool) {
    settlement_settings st;
    st.batch_bets_max = r.size("settlement.batch_bets_max", 1, limits::settlement_batch_bets_max);
    // 0: one batch per settlement connection.
    st.batches_in_flight = r.size("settlement.batches_in_flight", 0, limits::pool_size_max);
    if (st.batches_in_flight == 0) {
        st.batches_in_flight = pool.size_max;
    }
    if (st.batches_in_flight > pool.size_max) {
        fail("'settlement.batches_in_flight' (" + std::to_string(st.batches_in_flight) +
             ") must not exceed 'database.pools.settlement.size_max' (" +
             std::to_string(pool.size_max) + "): each batch holds one connection");
    }
    st.lanes = r.integer("settlement.lanes", 1, limits::settlement_lanes_max);
    if (static_cast<std::size_t>(st.lanes) > pool.size_max) {
        fail("'settlement.lanes' (" + std::to_string(st.lanes) +
             ") must not exceed 'database.pools.settlement.size_max' (" +
             std::to_string(pool.size_max) + "): each lane holds one connection");
    }
    st.lock_timeout_ms = r.timeout_ms("settlement.lock_timeout_ms");
    st.retry_delay_ms = r.timeout_ms("settlement.retry_delay_ms");
    st.poll_interval_ms = r.timeout_ms("settlement.poll_interval_ms");
    st.duty_percent = r.integer("settlement.duty_percent", 1, 100);
    st.push_interval_ms = r.timeout_ms("settlement.push_interval_ms");
    st.push_consumer = r.string("settlement.push_consumer", false);
    if (st.push_consumer.size() > limits::outbox_consumer_bytes_max) {
        fail("'settlement.push_consumer' must be at most " +
             std::to_string(limits::outbox_consumer_bytes_max) + " bytes, got " +
             std::to_string(st.push_consumer.size()));
    }
    st.outbox_purge_interval_ms = r.timeout_ms("settlement.outbox_purge_interval_ms");
    st.outbox_purge_batch_max =
        r.size("settlement.outbox_purge_batch_max", 1, limits::outbox_purge_batch_rows_max);
    st.placement_p99_budget_ms =
        r.integer("settlement.placement_p99_budget_ms", 0, limits::settlement_budget_ms_max);
    st.placement_p99_budget_percent = r.integer("settlement.placement_p99_budget_percent", 0,
                                                limits::settlement_budget_percent_max);
    if (st.placement_p99_budget_percent > 0 &&
        st.placement_p99_budget_percent < limits::settlement_budget_percent_min) {
        fail("'settlement.placement_p99_budget_percent' must be 0 (none) or at least " +
             std::to_string(limits::settlement_budget_percent_min) +
             " (a budget under the p99 with nothing settling cannot be kept), got " +
             std::to_string(st.placement_p99_budget_percent));
    }
    st.placement_baseline_ms = r.integer("settlement.placement_baseline_ms", 1'000, 3'600'000);
    st.placement_window_ms = r.integer("settlement.placement_window_ms", 100, 60'000);
    st.min_bets_per_s = r.integer("settlement.min_bets_per_s", 1, 1'000'000);
    return st;
}

diagnostics_settings read_diagnostics(const reader& r) {
    diagnostics_settings d;
    d.sample_interval_ms =
        r.integer("diagnostics.sample_interval_ms", limits::diagnosis_interval_ms_min,
                  limits::diagnosis_interval_ms_max);
    d.window_s = r.integer("diagnostics.window_s", 10, limits::diagnosis_window_s_max);
    d.verdict_window_s = r.integer("diagnostics.verdict_window_s", 5, d.window_s);
    d.pgbouncer_admin_url = r.string("diagnostics.pgbouncer_admin_url", true);
    return d;
}

reservation_settings read_reservations(const reader& r) {
    reservation_settings rs;
    rs.grace_s = r.integer("reservations.grace_s", 0, limits::reservation_deadline_s_max);
    rs.default_deadline_s =
        r.integer("reservations.default_deadline_s", 60, limits::reservation_deadline_s_max);
    rs.sweep_interval_ms = r.timeout_ms("reservations.sweep_interval_ms");
    rs.sweep_batch_bets_max =
        r.size("reservations.sweep_batch_bets_max", 1, limits::sweep_batch_bets_max);
    return rs;
}

reconcile_settings read_reconcile(const reader& r) {
    reconcile_settings rc;
    rc.interval_ms = r.integer("reconcile.interval_ms", 0, limits::reconcile_interval_ms_max);
    rc.chunk_accounts = r.size("reconcile.chunk_accounts", 1, limits::reconcile_chunk_accounts_max);
    rc.chunk_transfers =
        r.size("reconcile.chunk_transfers", 1, limits::reconcile_chunk_transfers_max);
    rc.chunk_pause_ms = r.integer("reconcile.chunk_pause_ms", 0, limits::timeout_ms_max);
    rc.lock_timeout_ms = r.timeout_ms("reconcile.lock_timeout_ms");
    rc.statement_timeout_ms = r.timeout_ms("reconcile.statement_timeout_ms");
    rc.run_timeout_ms = r.timeout_ms("reconcile.run_timeout_ms");
    return rc;
}

// One unit of PostgreSQL interval text: what fulltime_history_boundary aligns (whole months, or
// a fixed length) and an operator reads at a glance.
std::string read_interval(const reader& r, const std::string& path) {
    static const std::regex one_unit{"[1-9][0-9]{0,5} (second|minute|hour|day|week|month|year)s?"};
    std::string v = r.string(path, false);
    if (!std::regex_match(v, one_unit)) {
        fail("'" + path + "' must be '<n> <second|minute|hour|day|week|month|year>', got '" + v +
             "'");
    }
    return v;
}

history_settings read_history(const reader& r) {
    history_settings h;
    h.period = read_interval(r, "history.period");
    h.ahead_periods = r.integer("history.ahead_periods", 1, limits::history_ahead_periods_max);
    h.retention = read_interval(r, "history.retention");
    h.close_grace_s = r.integer("history.close_grace_s", 0, limits::history_close_grace_s_max);
    h.keeper_interval_ms = r.integer("history.keeper_interval_ms", 0, limits::timeout_ms_max);
    h.lock_timeout_ms = r.timeout_ms("history.lock_timeout_ms");
    h.statement_timeout_ms = r.timeout_ms("history.statement_timeout_ms");
    return h;
}

read_settings read_reads(const reader& r) {
    read_settings s;
    s.balance_staleness_ms = r.integer("read.balance_staleness_ms", 0, limits::timeout_ms_max);
    s.bets_staleness_ms = r.integer("read.bets_staleness_ms", 0, limits::timeout_ms_max);
    s.bets_source = r.string("read.bets_source", false);
    if (s.bets_source != "read_model" && s.bets_source != "write_tables") {
        fail("'read.bets_source' must be read_model or write_tables, got '" + s.bets_source + "'");
    }
    s.read_your_writes = r.boolean("read.read_your_writes");
    s.ryw_wait_ms = r.integer("read.ryw_wait_ms", 0, limits::timeout_ms_max);
    s.sample_interval_ms = r.integer("read.sample_interval_ms", limits::read_sample_interval_ms_min,
                                     limits::timeout_ms_max);
    s.projector_interval_ms = r.integer("read.projector_interval_ms", 0, limits::timeout_ms_max);
    s.projector_page_rows_max = r.size("read.projector_page_rows_max", 1,
                                       static_cast<std::size_t>(limits::projection_page_rows_max));
    s.projector_consumer = r.string("read.projector_consumer", false);
    if (s.projector_consumer.empty() || s.projector_consumer.size() > 64) {
        fail("'read.projector_consumer' must be 1 to 64 characters");
    }
    s.projector_yield_ms = r.integer("read.projector_yield_ms", 0, limits::timeout_ms_max);
    return s;
}

market_defaults read_markets(const reader& r) {
    market_defaults m;
    m.stake_min_minor = r.integer("markets.stake_min_minor", 1, limits::amount_minor_max);
    m.stake_max_minor =
        r.integer("markets.stake_max_minor", m.stake_min_minor, limits::amount_minor_max);
    m.liability_limit_minor =
        r.integer("markets.liability_limit_minor", 1, limits::amount_minor_max);
    m.exposure_shards = r.size("markets.exposure_shards", 1, limits::exposure_shards_max);
    return m;
}

}  // namespace

config load_config(const std::optional<std::string>& path,
                   const std::map<std::string, std::string>& environment) {
    const json doc = merged_document(path, environment);
    const reader r(doc);
    config c;
    read_general(r, c);
    c.database = read_database(r);
    c.embedded = read_embedded(r);
    read_gateway(r, c.gateway);
    c.actors = read_actors(r);
    c.placement = read_placement(r, c.database.placement);
    c.settlement = read_settlement(r, c.database.settlement);
    c.feed.lock_timeout_ms = r.timeout_ms("feed.lock_timeout_ms");
    c.feed.lock_retries_max = r.size("feed.lock_retries_max", 0, limits::gateway_lock_retries_max);
    c.admin.lock_timeout_ms = r.timeout_ms("admin.lock_timeout_ms");
    c.admin.lock_retries_max =
        r.size("admin.lock_retries_max", 0, limits::gateway_lock_retries_max);
    c.reservations = read_reservations(r);
    c.diagnostics = read_diagnostics(r);
    c.reconcile = read_reconcile(r);
    c.history = read_history(r);
    c.read = read_reads(r);
    c.markets = read_markets(r);
    return c;
}

std::map<std::string, std::string> process_environment() {
    std::map<std::string, std::string> out;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view entry{*e};
        if (entry.rfind("FULLTIME_", 0) != 0) {
            continue;
        }
        const auto eq = entry.find('=');
        if (eq == std::string_view::npos) {
            continue;
        }
        out.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
    return out;
}

}  // namespace fulltime

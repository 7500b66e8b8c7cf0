#include "fulltime/config/config.hpp"

#include "config/settings_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

extern char** environ;

namespace fulltime {

namespace {

using json = nlohmann::json;
using settings::fail;
using settings::setting;
using settings::setting_type;

/// Holds a setting's value while the configuration loads: its default, then the file's, then
/// the environment's.
using value = std::variant<std::int64_t, bool, std::string>;

/// The smallest budget in percent other than 0 (none): a budget under the p99 placements have
/// with nothing settling cannot be kept.
constexpr std::int64_t budget_percent_min = 100;

bool is_comment(const std::string& key) { return !key.empty() && key.front() == '_'; }

std::string join(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
}

std::size_t index_of(const setting& s) {
    return static_cast<std::size_t>(&s - settings::table().data());
}

// Whether `path` names a section of the configuration: an object holding settings.
bool is_section(std::string_view path) {
    return std::any_of(settings::table().begin(), settings::table().end(), [path](const auto& s) {
        return s.name.size() > path.size() && s.name.starts_with(path) &&
               s.name[path.size()] == '.';
    });
}

std::vector<value> defaults() {
    std::vector<value> out;
    for (const auto& s : settings::table()) {
        if (const auto* v = std::get_if<std::int64_t>(&s.value)) {
            out.emplace_back(*v);
        } else if (const auto* b = std::get_if<bool>(&s.value)) {
            out.emplace_back(*b);
        } else {
            out.emplace_back(std::string(std::get<std::string_view>(s.value)));
        }
    }
    return out;
}

// Returns the value of `s` that the file `origin` gives at `path`, refusing one whose type
// differs from the setting's.
value from_json(const setting& s, const json& item, const std::string& path,
                const std::string& origin) {
    switch (s.type()) {
        case setting_type::integer:
            if (!item.is_number_integer()) {
                fail(origin + ": '" + path + "' must be an integer");
            }
            return item.get<std::int64_t>();
        case setting_type::boolean:
            if (!item.is_boolean()) {
                fail(origin + ": '" + path + "' must be true or false");
            }
            return item.get<bool>();
        case setting_type::string:
        case setting_type::choice:
            break;
    }
    if (!item.is_string()) {
        fail(origin + ": '" + path + "' must be a string");
    }
    return item.get<std::string>();
}

// Overlays the object `layer` of the file `origin` on `values`, refusing keys that name neither
// a setting nor a section. `prefix` is the layer's own path ("" for the top level).
void overlay(std::vector<value>& values, const json& layer, const std::string& prefix,
             const std::string& origin) {
    if (!layer.is_object()) {
        fail(origin + ": " + (prefix.empty() ? "the top level" : "'" + prefix + "'") +
             " must be an object");
    }
    for (const auto& [key, item] : layer.items()) {
        if (is_comment(key)) {
            continue;
        }
        const std::string path = join(prefix, key);
        if (const setting* s = settings::find(path)) {
            values[index_of(*s)] = from_json(*s, item, path, origin);
        } else if (is_section(path)) {
            overlay(values, item, path, origin);
        } else {
            fail(origin + ": unknown key '" + path + "'");
        }
    }
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

void overlay_file(std::vector<value>& values, const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        fail("cannot read " + path);
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    overlay(values, parse_json(buffer.str(), path), "", path);
}

// Returns the value of `s` that the variable `var` gives as `text`.
value from_text(const setting& s, const std::string& var, const std::string& text) {
    switch (s.type()) {
        case setting_type::integer: {
            std::int64_t v = 0;
            const char* end = text.data() + text.size();
            auto [ptr, ec] = std::from_chars(text.data(), end, v);
            if (text.empty() || ec != std::errc{} || ptr != end) {
                fail(var + ": '" + text + "' is not an integer");
            }
            return v;
        }
        case setting_type::boolean:
            if (text != "true" && text != "false") {
                fail(var + ": '" + text + "' is not true or false");
            }
            return text == "true";
        case setting_type::string:
        case setting_type::choice:
            break;
    }
    return text;
}

// Applies the FULLTIME_* variables of `environment` to `values`; a FULLTIME_* variable that sets
// nothing is refused, so that a misspelt one is not silently ignored.
void apply_environment(std::vector<value>& values,
                       const std::map<std::string, std::string>& environment) {
    // FULLTIME_CONFIG names the file (app/cli.cpp). The others are the variables of the
    // repository's scripts and test harness (scripts/lib.sh, scripts/build, tests/e2e): a shell
    // that exported them for a script may start the engine too. FULLTIME_TEST_* is the test
    // harness's whole family.
    std::set<std::string, std::less<>> known{
        "FULLTIME_CONFIG",   "FULLTIME_BUILD_DIR", "FULLTIME_BUILD_TYPE", "FULLTIME_SKIP_DEPS",
        "FULLTIME_SANITIZE", "FULLTIME_ROOT",      "FULLTIME_BINARY"};
    for (const auto& s : settings::table()) {
        std::string var = settings::env_name(s.name);
        known.insert(var);
        if (!s.env_alias.empty()) {
            known.emplace(s.env_alias);
        }
        auto it = environment.find(var);
        if (it == environment.end() && !s.env_alias.empty()) {
            it = environment.find(std::string(s.env_alias));
        }
        if (it != environment.end()) {
            values[index_of(s)] = from_text(s, var, it->second);
        }
    }
    for (const auto& [name, text] : environment) {
        if (name.starts_with("FULLTIME_") && !name.starts_with("FULLTIME_TEST_") &&
            !known.contains(name)) {
            fail("unknown environment variable " + name +
                 " (see docs/config.md for the names that exist)");
        }
    }
}

std::int64_t integer_of(const std::vector<value>& values, std::string_view name) {
    return std::get<std::int64_t>(values[index_of(*settings::find(name))]);
}

// Returns "a, b or c" of a choice's values, for its error message.
std::string one_of(std::span<const std::string_view> choices) {
    std::string out;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        out += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
        out += choices[i].empty() ? "empty" : std::string(choices[i]);
    }
    return out;
}

void check_text(const setting& s, const std::string& text) {
    const bool empty_ok =
        s.empty_ok || std::find(s.choices.begin(), s.choices.end(), "") != s.choices.end();
    if (text.empty() && !empty_ok) {
        fail("'" + std::string(s.name) + "' must not be empty");
    }
    if (s.type() == setting_type::choice &&
        std::find(s.choices.begin(), s.choices.end(), text) == s.choices.end()) {
        fail("'" + std::string(s.name) + "' must be " + one_of(s.choices) + ", got '" + text + "'");
    }
    if (s.check != nullptr) {
        s.check(s.name, text);
    }
}

// Checks `v`, the value of `s`, as the table says: its bounds, emptiness, choices and check.
void check_value(const setting& s, const value& v, const std::vector<value>& values) {
    if (const auto* n = std::get_if<std::int64_t>(&v)) {
        const auto min = s.min_setting.empty() ? s.min : integer_of(values, s.min_setting);
        const auto max = s.max_setting.empty() ? s.max : integer_of(values, s.max_setting);
        if (*n < min || *n > max) {
            fail(settings::out_of_range(s.name, min, max, *n));
        }
    } else if (const auto* text = std::get_if<std::string>(&v)) {
        check_text(s, *text);
    }
}

void store(const setting& s, const value& v, config& c) {
    if (s.field == nullptr) {
        return;
    }
    const settings::field_ref field = s.field(c);
    if (auto* const* i = std::get_if<std::int64_t*>(&field)) {
        **i = std::get<std::int64_t>(v);
    } else if (auto* const* z = std::get_if<std::size_t*>(&field)) {
        // The table's bounds of a count start at 0 (settings_table_test checks).
        **z = static_cast<std::size_t>(std::get<std::int64_t>(v));
    } else if (auto* const* b = std::get_if<bool*>(&field)) {
        **b = std::get<bool>(v);
    } else {
        *std::get<std::string*>(field) = std::get<std::string>(v);
    }
}

// Sets the gateway's addresses from `listen` and `admin_listen` (checked by the table).
void set_addresses(gateway_settings& g, const std::string& listen, const std::string& admin) {
    std::tie(g.host, g.port) = settings::parse_address("listen", listen);
    if (admin.empty()) {
        return;
    }
    auto [host, port] = settings::parse_address("admin_listen", admin);
    if (port != 0 && port == g.port && host == g.host) {
        fail("'admin_listen' must differ from 'listen' (both are " + admin +
             "); leave it empty to serve the operator's routes on 'listen'");
    }
    g.admin_host = host;
    g.admin_port = port;
}

// Resolves the settings whose 0 means "derived": one event loop per core, one placement actor
// per placement connection, one settlement batch per settlement connection.
void resolve_zeros(config& c) {
    if (c.gateway.io_threads == 0) {
        const auto max = static_cast<std::size_t>(settings::find("gateway.io_threads")->max);
        c.gateway.io_threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, max);
    }
    if (c.placement.actors == 0) {
        c.placement.actors = c.database.placement.size_max;
    }
    if (c.settlement.batches_in_flight == 0) {
        c.settlement.batches_in_flight = c.database.settlement.size_max;
    }
}

void check_share(const char* name, std::size_t n, const char* pool_name, std::size_t pool,
                 const char* what) {
    if (n > pool) {
        fail("'" + std::string(name) + "' (" + std::to_string(n) + ") must not exceed '" +
             pool_name + "' (" + std::to_string(pool) + "): " + what);
    }
}

// Checks the rules between settings, which the table's rows note for docs/config.md.
void check_relations(const config& c) {
    // A rollover that verifies with the same secret twice has not rotated anything: most likely
    // the new secret was never written. (Secrets from files are compared when they are read,
    // app/commands/secret.cpp.)
    if (!c.token_secret_previous.empty() && c.token_secret_previous == c.token_secret) {
        fail(
            "'token_secret_previous' is the same as 'token_secret': set token_secret to the new "
            "secret");
    }
    const auto& g = c.gateway;
    if (g.write_queue_bytes_total_max < g.write_queue_bytes_max) {
        fail("'gateway.write_queue_bytes_total_max' (" +
             std::to_string(g.write_queue_bytes_total_max) +
             ") must be at least 'gateway.write_queue_bytes_max' (" +
             std::to_string(g.write_queue_bytes_max) + ")");
    }
    check_share("placement.actors", c.placement.actors, "database.pools.placement.size_max",
                c.database.placement.size_max, "each actor owns one connection");
    const auto& st = c.settlement;
    const auto pool = c.database.settlement.size_max;
    check_share("settlement.batches_in_flight", st.batches_in_flight,
                "database.pools.settlement.size_max", pool, "each batch holds one connection");
    check_share("settlement.lanes", static_cast<std::size_t>(st.lanes),
                "database.pools.settlement.size_max", pool, "each lane holds one connection");
    if (st.placement_p99_budget_percent > 0 &&
        st.placement_p99_budget_percent < budget_percent_min) {
        fail("'settlement.placement_p99_budget_percent' must be 0 (none) or at least " +
             std::to_string(budget_percent_min) +
             " (a budget under the p99 with nothing settling cannot be kept), got " +
             std::to_string(st.placement_p99_budget_percent));
    }
}

}  // namespace

config load_config(const std::optional<std::string>& path,
                   const std::map<std::string, std::string>& environment) {
    std::vector<value> values = defaults();
    if (path) {
        overlay_file(values, *path);
    }
    apply_environment(values, environment);
    config c;
    const auto rows = settings::table();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        check_value(rows[i], values[i], values);
        store(rows[i], values[i], c);
    }
    set_addresses(c.gateway, std::get<std::string>(values[index_of(*settings::find("listen"))]),
                  std::get<std::string>(values[index_of(*settings::find("admin_listen"))]));
    resolve_zeros(c);
    check_relations(c);
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

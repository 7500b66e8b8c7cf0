// The table of settings is the one place a setting is defined (config/settings_table.cpp): these
// tests hold it consistent in itself, and hold what is written elsewhere to it: the defaults
// file config/fulltime.json, the table of docs/config.md, the initialisers of config.hpp and the
// packaged configuration. A failure names the setting and prints what to write.

#include "config/settings_table.hpp"

#include "fulltime/config/config.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using fulltime::config;
using fulltime::load_config;
using fulltime::settings::setting;
using fulltime::settings::setting_type;
using fulltime::settings::table;
using nlohmann::json;

namespace {

// The table's default of `s` as JSON.
json default_json(const setting& s) {
    if (const auto* v = std::get_if<std::int64_t>(&s.value)) {
        return *v;
    }
    if (const auto* b = std::get_if<bool>(&s.value)) {
        return *b;
    }
    return std::string(std::get<std::string_view>(s.value));
}

// The field `s` loads into, read as JSON (integers, booleans, text).
json field_json(const setting& s, config& c) {
    const auto field = s.field(c);
    if (const auto* i = std::get_if<std::int64_t*>(&field)) {
        return **i;
    }
    if (const auto* z = std::get_if<std::size_t*>(&field)) {
        return static_cast<std::int64_t>(**z);
    }
    if (const auto* b = std::get_if<bool*>(&field)) {
        return **b;
    }
    return *std::get<std::string*>(field);
}

// The unit a setting's name ends in, by the convention that names carry their unit last.
std::string unit_of_name(std::string_view name) {
    const std::string last(name.substr(name.rfind('.') + 1));
    if (last.ends_with("_per_s")) {  // a rate: min_bets_per_s is in bets/s
        const std::string what = last.substr(0, last.size() - 6);
        return what.substr(what.rfind('_') + 1) + "/s";
    }
    std::set<std::string> words;
    std::stringstream in(last);
    for (std::string word; std::getline(in, word, '_');) {
        words.insert(word);
    }
    for (const char* unit : {"ms", "s", "bytes", "percent"}) {
        if (words.contains(unit)) {
            return unit;
        }
    }
    return words.contains("minor") ? "minor units" : "";
}

// Loads the configuration with FULLTIME_<NAME> set to `v`; nullopt if it is refused.
std::optional<config> load_from_environment(std::string_view name, const json& v) {
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    try {
        return load_config(std::nullopt, {{fulltime::settings::env_name(name), text}});
    } catch (const fulltime::config_error&) {
        return std::nullopt;
    }
}

// Loads the configuration from a file that sets `name` to `v`; nullopt if it is refused.
std::optional<config> load_from_file(std::string_view name, const json& v) {
    std::string pointer = "/" + std::string(name);
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    json doc;
    doc[json::json_pointer(pointer)] = v;
    char path[] = "/tmp/fulltime-settings-test-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    std::ofstream(path) << doc.dump();
    std::optional<config> c;
    try {
        c = load_config(std::string(path), {});
    } catch (const fulltime::config_error&) {
    }
    std::remove(path);
    return c;
}

}  // namespace

TEST_CASE("settings table: names, types, defaults and bounds agree with each other") {
    std::set<std::string_view> names;
    for (const auto& s : table()) {
        CAPTURE(s.name);
        CHECK(names.insert(s.name).second);
        CHECK(std::all_of(s.name.begin(), s.name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
        }));
        CHECK_FALSE(s.doc.empty());
        CHECK(s.doc.find('\n') == std::string_view::npos);
        switch (s.type()) {
            case setting_type::integer: {
                const auto v = std::get<std::int64_t>(s.value);
                CHECK(s.min <= v);
                CHECK(v <= s.max);
                for (const auto other : {s.min_setting, s.max_setting}) {
                    if (!other.empty()) {
                        const setting* o = fulltime::settings::find(other);
                        REQUIRE_MESSAGE(o != nullptr, other << " is no setting");
                        CHECK(o < &s);  // checked before this one
                        CHECK(o->type() == setting_type::integer);
                    }
                }
                // A unit the name carries is the setting's; time and size are always named.
                if (const auto named = unit_of_name(s.name); !named.empty()) {
                    CHECK(s.unit == named);
                } else {
                    CHECK((s.unit != "ms" && s.unit != "s" && s.unit != "bytes"));
                }
                CHECK_FALSE(s.unit.empty());
                break;
            }
            case setting_type::choice:
                CHECK(std::find(s.choices.begin(), s.choices.end(),
                                std::get<std::string_view>(s.value)) != s.choices.end());
                CHECK(std::set<std::string_view>(s.choices.begin(), s.choices.end()).size() ==
                      s.choices.size());
                CHECK(s.unit.empty());
                break;
            case setting_type::string:
                CHECK((s.empty_ok || !std::get<std::string_view>(s.value).empty()));
                CHECK(s.unit.empty());
                break;
            case setting_type::boolean:
                CHECK(s.unit.empty());
                break;
        }
    }
    // A name that is also a section would be both a value and an object in the file.
    for (const auto& s : table()) {
        for (const auto& t : table()) {
            CHECK_MESSAGE(!t.name.starts_with(std::string(s.name) + "."), s.name, " and ", t.name);
        }
    }
}

TEST_CASE("settings table: each setting has its own environment variable and field") {
    std::set<std::string> variables;
    std::set<const void*> fields;
    config c;
    for (const auto& s : table()) {
        CAPTURE(s.name);
        CHECK(variables.insert(fulltime::settings::env_name(s.name)).second);
        if (!s.env_alias.empty()) {
            CHECK(variables.insert(std::string(s.env_alias)).second);
        }
        if (s.field == nullptr) {
            CHECK((s.name == "listen" || s.name == "admin_listen"));
            continue;
        }
        const auto field = s.field(c);
        std::visit([&](auto* p) { CHECK(fields.insert(p).second); }, field);
        const bool integer = std::holds_alternative<std::int64_t*>(field) ||
                             std::holds_alternative<std::size_t*>(field);
        CHECK(integer == (s.type() == setting_type::integer));
        CHECK(std::holds_alternative<bool*>(field) == (s.type() == setting_type::boolean));
        if (std::holds_alternative<std::size_t*>(field)) {
            CHECK(s.min >= 0);  // a count: load_config casts it
        }
    }
}

TEST_CASE("settings table: every setting reaches its field from the file and the environment") {
    // For each setting, the first value other than its default that loads with every other
    // setting at its default.
    const std::vector<std::string> texts{std::string(20, 's'), "2 days", "127.0.0.1:9"};
    for (const auto& s : table()) {
        CAPTURE(s.name);
        std::vector<json> candidates;
        switch (s.type()) {
            case setting_type::integer:
                candidates = {s.min, s.min + 1, s.max, s.max - 1};
                break;
            case setting_type::boolean:
                candidates = {!std::get<bool>(s.value)};
                break;
            case setting_type::choice:
                candidates.assign(s.choices.begin(), s.choices.end());
                break;
            case setting_type::string:
                candidates.assign(texts.begin(), texts.end());
                break;
        }
        std::erase(candidates, default_json(s));
        bool loaded = false;
        for (const auto& v : candidates) {
            CAPTURE(v.dump());
            const auto from_env = load_from_environment(s.name, v);
            if (!from_env) {
                continue;
            }
            loaded = true;
            const auto from_file = load_from_file(s.name, v);
            REQUIRE(from_file);
            if (s.field != nullptr) {
                auto env_config = *from_env;
                auto file_config = *from_file;
                CHECK(field_json(s, env_config) == v);
                CHECK(field_json(s, file_config) == v);
            }
            break;
        }
        CHECK_MESSAGE(loaded, "no value other than the default loads");
    }
}

TEST_CASE("settings table: a configuration built field by field starts at 0 or the default") {
    // config.hpp gives some fields their default, so that a configuration the tests build by
    // hand has bounded waits; the rest start at 0 (empty, false), which nothing mistakes for a
    // loaded value.
    config by_hand;
    for (const auto& s : table()) {
        if (s.field == nullptr) {
            continue;
        }
        CAPTURE(s.name);
        const json v = field_json(s, by_hand);
        if (v != json(0) && v != json(false) && v != json("")) {
            CHECK(v == default_json(s));
        }
    }
}

namespace {

std::string read_source(const std::string& relative) {
    std::ifstream in(std::string(FULLTIME_SOURCE_DIR) + "/" + relative);
    REQUIRE_MESSAGE(in.good(), "cannot read " << relative);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void flatten(const json& node, const std::string& prefix, std::map<std::string, json>& out) {
    for (const auto& [key, item] : node.items()) {
        if (key.starts_with('_')) {
            continue;  // a comment
        }
        const std::string path = prefix.empty() ? key : prefix + "." + key;
        if (item.is_object()) {
            flatten(item, path, out);
        } else {
            out[path] = item;
        }
    }
}

}  // namespace

TEST_CASE("settings table: config/fulltime.json holds exactly the table's defaults") {
    std::map<std::string, json> leaves;
    flatten(json::parse(read_source("config/fulltime.json")), "", leaves);
    for (const auto& s : table()) {
        const json expected = default_json(s);
        const auto it = leaves.find(std::string(s.name));
        if (it == leaves.end()) {
            FAIL_CHECK("config/fulltime.json has no '" << s.name << "': add it with the table's "
                                                       << "default, " << expected.dump());
            continue;
        }
        // An integer parses as unsigned when it is not negative: compare integers as integers.
        const bool same_type = expected.is_number_integer() ? it->second.is_number_integer()
                                                            : it->second.type() == expected.type();
        CHECK_MESSAGE((same_type && it->second == expected),
                      "config/fulltime.json: '" << s.name << "' is " << it->second.dump()
                                                << ", the table's default is " << expected.dump());
        leaves.erase(it);
    }
    for (const auto& [path, item] : leaves) {
        FAIL_CHECK("config/fulltime.json has '" << path << "', which is no setting: remove it");
    }
}

namespace {

// A row of the table in docs/config.md: cells as written, `|` unescaped but in the meaning.
struct doc_row {
    std::string key;
    std::string default_text;
    std::string bounds;
    std::string meaning;
};

std::string escape_bars(const std::string& cell) {
    std::string out;
    for (const char c : cell) {
        out += c == '|' ? "\\|" : std::string(1, c);
    }
    return out;
}

std::string markdown(const doc_row& row) {
    return "| " + row.key + " | " + escape_bars(row.default_text) + " | " +
           escape_bars(row.bounds) + " | " + row.meaning + " |";
}

// Parses "| key | default | bounds | meaning |"; `\|` inside a cell is a bar, not a border.
doc_row parse_row(const std::string& line) {
    std::vector<std::string> cells(1);
    std::size_t i = 2;  // past "| "
    for (; i < line.size() && cells.size() < 4; ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
            cells.back() += '|';
            ++i;
        } else if (line[i] == '|') {
            cells.emplace_back();
            ++i;  // past the space after the border
        } else {
            cells.back() += line[i];
        }
    }
    for (auto& cell : cells) {
        while (!cell.empty() && cell.back() == ' ') {
            cell.pop_back();
        }
    }
    cells.resize(4);
    std::string meaning = line.substr(std::min(i, line.size()));
    if (meaning.ends_with(" |")) {
        meaning.resize(meaning.size() - 2);
    }
    return {cells[0], cells[1], cells[2], meaning};
}

// The rows of docs/config.md's table of keys (the one headed key, default, bounds, meaning).
std::vector<doc_row> documented_rows() {
    std::stringstream text(read_source("docs/config.md"));
    std::vector<doc_row> rows;
    bool in_table = false;
    for (std::string line; std::getline(text, line);) {
        if (line == "| key | default | bounds | meaning |") {
            in_table = true;
            std::getline(text, line);  // |---|---|...
        } else if (in_table && line.starts_with("| ")) {
            rows.push_back(parse_row(line));
        } else if (in_table) {
            break;
        }
    }
    return rows;
}

// The rows docs/config.md's table should have: one per setting, but one for each field of all
// the pools (`database.pools.NAME.size_max`, default "placement 8, settlement 4, ...").
std::vector<doc_row> expected_rows() {
    constexpr std::string_view pools = "database.pools.";
    std::vector<doc_row> rows;
    std::map<std::string, std::size_t> pool_rows;
    for (const auto& s : table()) {
        const std::string bounds = fulltime::settings::bounds_text(s);
        const std::string doc(s.doc);
        if (!s.name.starts_with(pools)) {
            rows.push_back({"`" + std::string(s.name) + "`", fulltime::settings::default_text(s),
                            bounds, doc});
            continue;
        }
        const auto rest = s.name.substr(pools.size());
        const auto dot = rest.find('.');
        const std::string key = "`database.pools.NAME." + std::string(rest.substr(dot + 1)) + "`";
        const std::string value =
            std::string(rest.substr(0, dot)) + " " + fulltime::settings::default_text(s);
        const auto [it, first] = pool_rows.try_emplace(key, rows.size());
        if (first) {
            rows.push_back({key, value, bounds, doc});
            continue;
        }
        rows[it->second].default_text += ", " + value;
        CHECK_MESSAGE(rows[it->second].bounds == bounds, s.name << ": pools differ in bounds");
    }
    return rows;
}

}  // namespace

TEST_CASE("settings table: docs/config.md has a row per setting, with its default and bounds") {
    const auto expected = expected_rows();
    const auto documented = documented_rows();
    REQUIRE_FALSE(documented.empty());
    std::map<std::string, const doc_row*> by_key;
    for (const auto& row : documented) {
        CHECK_MESSAGE(by_key.emplace(row.key, &row).second, "two rows for " << row.key);
    }
    std::vector<std::string> order;
    for (const auto& row : expected) {
        const auto it = by_key.find(row.key);
        if (it == by_key.end()) {
            FAIL_CHECK("docs/config.md has no row for " << row.key << "; add:\n" << markdown(row));
            continue;
        }
        order.push_back(row.key);
        const doc_row& written = *it->second;
        if (written.default_text != row.default_text || written.bounds != row.bounds) {
            FAIL_CHECK("docs/config.md's row for "
                       << row.key << " differs from the table; write:\n"
                       << markdown({row.key, row.default_text, row.bounds, written.meaning}));
        }
        by_key.erase(it);
    }
    for (const auto& [key, row] : by_key) {
        FAIL_CHECK("docs/config.md has a row for " << key << ", which is no setting: remove it");
    }
    std::vector<std::string> written_order;
    for (const auto& row : documented) {
        if (std::find(order.begin(), order.end(), row.key) != order.end()) {
            written_order.push_back(row.key);
        }
    }
    for (std::size_t i = 0; i < order.size() && i < written_order.size(); ++i) {
        if (order[i] != written_order[i]) {
            FAIL_CHECK("docs/config.md's rows are not in the table's order: "
                       << order[i] << " comes before " << written_order[i]);
            break;
        }
    }
}

TEST_CASE("settings table: the packaged configuration loads") {
    const auto c = load_config(std::string(FULLTIME_SOURCE_DIR) + "/packaging/fulltime.json", {});
    CHECK(c.state_dir == "/var/lib/fulltime");
    CHECK(c.token_secret_file == "/etc/fulltime/token_secret");
    REQUIRE(c.gateway.admin_host.has_value());
    CHECK(c.gateway.admin_port == 8081);
    CHECK(c.embedded.run_as_user == "fulltime");
}

#pragma once
/// The table of settings (STYLE.md, convention 17; PostgreSQL's guc_tables.c): one row per key of
/// the configuration with its type, default, bounds, unit, a line of doc and the field of
/// `config` it loads into. load_config (config.cpp) is a loop over it; config/fulltime.json and
/// the table of docs/config.md are checked against it (tests/config/settings_table_test.cpp).
///
///   for each row: default -> the --config file's value -> FULLTIME_<NAME> -> type and bounds
///                 checked -> stored through `field`
///   then: the rules between settings (config.cpp, check_relations)

#include "fulltime/config/config.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace fulltime::settings {

/// Names the type of a setting's value.
enum class setting_type {
    integer,
    boolean,
    string,
    choice,  ///< a string that must be one of `choices`
};

/// Holds a default: an integer, a boolean, or a text (string and choice settings).
using default_value = std::variant<std::int64_t, bool, std::string_view>;

/// Points at the field of a configuration that a setting loads into.
using field_ref = std::variant<std::int64_t*, std::size_t*, bool*, std::string*>;

/// Returns the field of `c` that a setting loads into.
using field_fn = field_ref (*)(config& c);

/// Checks a string's value beyond its type and emptiness; throws config_error (fail) if it
/// cannot be used.
using check_fn = void (*)(std::string_view name, const std::string& value);

/// Describes one setting. Fields that do not apply to the setting's type stay empty.
struct setting {
    std::string_view name{};  ///< the dotted key: "database.pools.placement.size_max"
    default_value value{};    ///< the default; which alternative it holds is the setting's type
    std::int64_t min = 0;     ///< integer: the smallest value allowed
    std::int64_t max = 0;     ///< integer: the largest value allowed
    /// Integer: another integer setting whose value is the smallest (largest) allowed instead
    /// of min (max); it comes earlier in the table.
    std::string_view min_setting{};
    std::string_view max_setting{};
    std::span<const std::string_view> choices{};  ///< choice: the values allowed
    bool empty_ok = false;                        ///< string: whether "" is allowed
    check_fn check = nullptr;                     ///< string: a further check of the value
    std::string_view unit{};                      ///< integer: "ms", "s", "bytes", "bets", ...
    std::string_view doc{};                       ///< one line: what it sets
    /// What docs/config.md adds to the bounds: a rule `check` or config.cpp enforces.
    std::string_view bounds_note{};
    std::string_view env_alias{};  ///< another variable that sets it, besides FULLTIME_<NAME>
    /// The field it loads into; nullptr where load_config derives fields from the value itself
    /// (`listen`, `admin_listen`).
    field_fn field = nullptr;

    /// Returns the type of the setting's value.
    setting_type type() const;
};

/// Returns every setting, in the order of docs/config.md's table.
std::span<const setting> table();

/// Returns the setting called `name`, or nullptr.
const setting* find(std::string_view name);

/// Returns the environment variable that sets `name`: FULLTIME_ followed by the name in upper
/// case with '.' as '_' (database.pools.placement.size_max ->
/// FULLTIME_DATABASE_POOLS_PLACEMENT_SIZE_MAX).
std::string env_name(std::string_view name);

/// Throws config_error("config: " + what).
[[noreturn]] void fail(const std::string& what);

/// Returns the one-line error of an integer `value` of `name` outside [min, max].
std::string out_of_range(std::string_view name, std::int64_t min, std::int64_t max,
                         std::int64_t value);

/// Splits "host:port" or "[v6]:port", the value of the setting `name`; fails on anything else.
std::pair<std::string, std::uint16_t> parse_address(std::string_view name, const std::string& text);

/// Returns a setting's default as docs/config.md writes it: digits, `true`, `text`, `""`.
std::string default_text(const setting& s);

/// Returns a setting's bounds as docs/config.md writes them: "1..3600000", "true, false",
/// "debug, info, warn, error", "non-empty", followed by the bounds note.
std::string bounds_text(const setting& s);

}  // namespace fulltime::settings

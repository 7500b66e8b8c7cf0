#pragma once
/// One-line log records on stderr. Text (the default): "2026-11-29T23:40:00.123Z info message
/// key=value ..."; JSON (log_format json): {"ts":"...","level":"info","msg":"...","key":value}.
/// Under journald ($JOURNAL_STREAM naming stderr) each line starts with its syslog priority
/// ("<6>"), which journald strips and keeps as the record's priority. Thread-safe; a record is
/// written with one write(2) so that lines from several threads never interleave.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace fulltime::log {

/// Names the severity of a record.
enum class level { debug = 0, info, warn, error };

/// Names the shape of a record.
enum class format { text, json };

/// Holds one field of a record: a key (a short identifier: operator, account, market,
/// event_key, connection, request_id, ...) and its value, a string or an integer.
struct field {
    field(std::string_view k, std::string_view v) : key(k), text(v) {}
    field(std::string_view k, const char* v) : key(k), text(v) {}
    field(std::string_view k, const std::string& v) : key(k), text(v) {}
    field(std::string_view k, std::int64_t v) : key(k), text(std::to_string(v)), number(true) {}
    field(std::string_view k, int v) : field(k, static_cast<std::int64_t>(v)) {}
    field(std::string_view k, std::uint64_t v) : key(k), text(std::to_string(v)), number(true) {}

    std::string_view key;
    std::string text;
    bool number = false;
};

/// Sets the lowest level that is written (default: info).
void set_level(level l) noexcept;

/// Sets the shape of records (default: text).
void set_format(format f) noexcept;

/// Parses "debug", "info", "warn" or "error"; anything else is info.
level parse_level(std::string_view text) noexcept;

/// Parses "json"; anything else is text.
format parse_format(std::string_view text) noexcept;

/// Returns the record for `message` and `fields` at `l` in format `f`, with `stamp` as its time
/// and with a journald priority prefix when `journald`; ends with a newline. Pure: the
/// formatting that write() uses, for tests.
std::string render(format f, bool journald, std::string_view stamp, level l,
                   std::string_view message, std::initializer_list<field> fields);

/// Writes one record if `l` is at or above the current level.
void write(level l, std::string_view message, std::initializer_list<field> fields = {});

/// Writes a debug record.
inline void debug(std::string_view m, std::initializer_list<field> f = {}) {
    write(level::debug, m, f);
}
/// Writes an info record.
inline void info(std::string_view m, std::initializer_list<field> f = {}) {
    write(level::info, m, f);
}
/// Writes a warning record.
inline void warn(std::string_view m, std::initializer_list<field> f = {}) {
    write(level::warn, m, f);
}
/// Writes an error record.
inline void error(std::string_view m, std::initializer_list<field> f = {}) {
    write(level::error, m, f);
}

}  // namespace fulltime::log

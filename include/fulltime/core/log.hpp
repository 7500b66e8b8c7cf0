#pragma once
/// One-line log records on stderr: "2026-11-29T23:40:00.123Z info message". Thread-safe; a
/// record is written with one write(2) so that lines from several threads never interleave.

#include <string_view>

namespace fulltime::log {

/// Names the severity of a record.
enum class level { debug = 0, info, warn, error };

/// Sets the lowest level that is written (default: info).
void set_level(level l) noexcept;

/// Parses "debug", "info", "warn" or "error"; anything else is info.
level parse_level(std::string_view text) noexcept;

/// Writes one record if `l` is at or above the current level.
void write(level l, std::string_view message);

/// Writes a debug record.
inline void debug(std::string_view m) { write(level::debug, m); }
/// Writes an info record.
inline void info(std::string_view m) { write(level::info, m); }
/// Writes a warning record.
inline void warn(std::string_view m) { write(level::warn, m); }
/// Writes an error record.
inline void error(std::string_view m) { write(level::error, m); }

}  // namespace fulltime::log

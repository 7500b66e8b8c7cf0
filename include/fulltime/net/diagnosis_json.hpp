#pragma once
/// The peak diagnosis as JSON (docs/api.md, GET /v1/diagnostics): the verdict with its
/// evidence, the samples as series on one time axis, and the newest sample's sessions.

#include "fulltime/core/peak_diagnosis.hpp"

#include <nlohmann/json.hpp>

#include <span>

namespace fulltime::net {

/// Returns {"code", "summary", "evidence", "window_s", "samples", "culprit"?, "findings"}.
nlohmann::json verdict_json(const diagnosis::verdict& v);

/// Returns the samples as parallel arrays under one time axis "t_ms": every array has one
/// entry per sample, null where the reading was not taken (no placement answered, the database
/// read failed, a market with no backlog then).
nlohmann::json series_json(std::span<const diagnosis::sample> samples);

/// Returns the `database` member of GET /v1/diagnostics from a sample: lock_waiters,
/// idle_in_transaction, oldest_transaction_ms, hot_tables and the sample's t_ms; empty when
/// its database read failed.
nlohmann::json database_json(const diagnosis::sample& s);

/// Returns the `database` member of GET /v1/diagnostics from a sample: lock_waiters,
/// idle_in_transaction, oldest_transaction_ms, hot_tables and the sample's time
/// (sampled_at_ms); empty when its database read failed.
nlohmann::json database_json(const diagnosis::sample& s);

/// Returns what the newest sample saw that a series cannot show: each lock waiter and whom it
/// waits for, the blockers, the sessions idle in a transaction, the oldest transaction, the hot
/// tables, the standbys, the slots and PgBouncer.
nlohmann::json latest_json(const diagnosis::sample& s);

}  // namespace fulltime::net

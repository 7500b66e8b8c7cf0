#pragma once
/// The fixed codes that the schema stores and the SQL functions return, per domain: the engine's
/// copy of the fulltime_codes table (db/migrations/0001_baseline.sql). tests/db/codes_pgtest.cpp
/// proves that every list here equals its domain in that table exactly, and that every CHECK
/// constraint listing codes lists exactly its domain. A new code is added in both places (and in
/// the CHECK, by a numbered migration) in one change.

#include <array>
#include <span>
#include <string_view>

namespace fulltime::db::codes {

/// Lists the statuses of fulltime_settle_step: idle (nothing to apply), gap (the next event by
/// seq is missing), started, fenced (an older transaction still runs), batch, finished, lanes
/// (the event is settled in lanes, fulltime_settle_lane, not all done yet).
inline constexpr std::array<std::string_view, 7> settle_status = {
    "idle", "gap", "started", "fenced", "batch", "finished", "lanes"};

/// Lists why an applied event did nothing to one bet (its terminal state): the keys of
/// result_events.skipped.
inline constexpr std::array<std::string_view, 5> bet_skip = {
    "bet_cancelled", "already_cancelled", "nothing_to_rollback", "already_void", "already_settled"};

/// Lists why an applied event wrote no settlement row at all: result_events.refusal.
inline constexpr std::array<std::string_view, 4> event_refusal = {
    "nothing_to_rollback", "nothing_to_void", "bet_cancelled", "already_cancelled"};

/// Lists the kinds of result event: result_events.kind (void_open and gap_closed are stored by
/// the operator only, never by a producer; gap_closed: migration 0008).
inline constexpr std::array<std::string_view, 6> result_event_kind = {
    "result", "rollback_result", "cancel", "rollback_cancel", "void_open", "gap_closed"};

/// Lists the outcomes of fulltime_record_result.
inline constexpr std::array<std::string_view, 5> record_result_outcome = {
    "stored", "duplicate", "conflict", "unknown_market", "unknown_selection"};

/// Lists the outcomes of fulltime_void_overdue.
/// (feed_gap: migration 0008).
inline constexpr std::array<std::string_view, 7> void_overdue_outcome = {
    "stored",      "duplicate",       "conflict", "unknown_market",
    "not_overdue", "nothing_to_void", "feed_gap"};

/// Lists the outcomes of fulltime_close_gap (migration 0008).
inline constexpr std::array<std::string_view, 5> close_gap_outcome = {
    "stored", "duplicate", "conflict", "unknown_market", "not_a_gap"};

/// Lists the outcomes of fulltime_note_overdue.
inline constexpr std::array<std::string_view, 4> note_overdue_outcome = {"opened", "updated",
                                                                         "resolved", "none"};

/// Lists the outcomes of fulltime_place and fulltime_place_group (invalid: migration 0007).
inline constexpr std::array<std::string_view, 5> place_outcome = {"placed", "rejected", "replayed",
                                                                  "key_reused", "invalid"};

/// Lists the refusal codes of fulltime_place (response->>'code' of a rejected or key_reused
/// placement).
inline constexpr std::array<std::string_view, 7> place_refusal = {
    "idempotency_key_reused", "insufficient_funds", "unknown_selection", "market_suspended",
    "odds_changed",           "stake_limit",        "liability_limit"};

/// Lists the accept modes fulltime_place takes (p_accept): which current odds the bettor takes.
inline constexpr std::array<std::string_view, 3> place_accept = {"exact", "better", "any"};

/// Lists the statuses of a market: markets.status.
inline constexpr std::array<std::string_view, 3> market_status = {"open", "suspended", "closed"};

/// Lists the kinds of settlement row: bet_settlements.kind.
inline constexpr std::array<std::string_view, 4> settlement_kind = {"settle", "reverse", "cancel",
                                                                    "uncancel"};

/// Lists the outcomes of a settlement effect: bet_settlements.outcome.
inline constexpr std::array<std::string_view, 6> settlement_outcome = {
    "won", "lost", "void", "half_won", "half_lost", "dead_heat"};

/// Lists the sides of a ledger transfer: ledger_transfers.debit_side and .credit_side.
inline constexpr std::array<std::string_view, 5> ledger_side = {"available", "reserved", "owed",
                                                                "house", "cash"};

/// Lists the kinds of incident: incidents.kind.
inline constexpr std::array<std::string_view, 4> incident_kind = {
    "balance_drift", "currency_mismatch", "currency_imbalance", "overdue_reservation"};

/// Lists the balance sides an incident can name: incidents.side.
inline constexpr std::array<std::string_view, 3> incident_side = {"available", "reserved", "owed"};

/// Lists the topics of outbox rows: outbox.topic. Settlement writes settlement_batch rows;
/// bet_settled and bet_unsettled are rows written before migration 0004.
inline constexpr std::array<std::string_view, 4> outbox_topic = {
    "bet_placed", "bet_settled", "bet_unsettled", "settlement_batch"};

/// Names one domain of fulltime_codes and holds its codes.
struct domain {
    std::string_view name;
    std::span<const std::string_view> codes;
};

/// Lists every domain above under its name in fulltime_codes.
inline constexpr std::array<domain, 18> all_domains = {{
    {"settle_status", settle_status},
    {"bet_skip", bet_skip},
    {"event_refusal", event_refusal},
    {"result_event_kind", result_event_kind},
    {"record_result_outcome", record_result_outcome},
    {"void_overdue_outcome", void_overdue_outcome},
    {"close_gap_outcome", close_gap_outcome},
    {"note_overdue_outcome", note_overdue_outcome},
    {"place_outcome", place_outcome},
    {"place_refusal", place_refusal},
    {"place_accept", place_accept},
    {"market_status", market_status},
    {"settlement_kind", settlement_kind},
    {"settlement_outcome", settlement_outcome},
    {"ledger_side", ledger_side},
    {"incident_kind", incident_kind},
    {"incident_side", incident_side},
    {"outbox_topic", outbox_topic},
}};

/// Returns whether `code` is one of `list`.
constexpr bool contains(std::span<const std::string_view> list, std::string_view code) {
    for (const auto c : list) {
        if (c == code) {
            return true;
        }
    }
    return false;
}

}  // namespace fulltime::db::codes

#pragma once
/// The rehearsal's traffic: everything it sends to the engine, through the engine's public
/// interfaces only (the operator API and the feed over HTTP, bettors over WebSocket), from one
/// event-loop thread of its own. The main thread drives the timeline and calls in; each call
/// that waits says so. Beast and Asio stay in driver.cpp.

#include "app/rehearsal/timeline.hpp"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::app::rehearsal {

/// Holds one HTTP answer; status 0 when the request got none (error says why).
struct http_reply {
    unsigned status = 0;
    std::string body;
    std::string error;
};

/// Holds how the live bettors behave.
struct bettor_settings {
    std::vector<std::int64_t> accounts;    ///< one connection per account
    std::vector<std::int64_t> selections;  ///< each bet on one of these, in turn
    std::string stake;                     ///< decimal string
    double rate_per_s = 0;                 ///< in total, evenly spread over the connections
    double retry_ratio = 0;  ///< share of requests whose connection is dropped before the reply
    std::string key_prefix;  ///< every key is <prefix><connection>-<n>
    double duration_s = 0;   ///< scheduling stops then (on the rehearsal's clock)
};

/// Holds one request's fate, for the acknowledgement checks.
struct acknowledgement {
    std::string key;
    double scheduled_s = 0;
    bool answered = false;     ///< a final reply came (placed or rejected)
    std::int64_t bet_id = 0;   ///< placed: the bet; 0 otherwise
    std::string outcome;       ///< "placed", "rejected <code>", "" while unanswered
    bool conflicting = false;  ///< two replies named different bets for this key
    int sends = 0;             ///< times the request went out (retries included)
};

/// Holds what the bettors saw.
struct bettor_results {
    std::vector<answered> replies;          ///< final replies, by scheduled time
    std::vector<acknowledgement> requests;  ///< every request
    std::uint64_t reconnects = 0;           ///< connections opened again after a drop
    std::uint64_t retries = 0;              ///< requests sent again with their key
    /// Connections the bettors gave up on: requests waiting, nothing heard for 10 s. Zero on an
    /// engine that answers every request within its deadline.
    std::uint64_t silent_connections = 0;
};

/// Holds a verdict of the engine's peak diagnosis seen during the run.
struct diagnosis_seen {
    double at_s = 0;
    std::string code;
    std::string summary;
};

/// Drives the engine at `port` on loopback. Tokens are signed here with `secret`.
class driver {
public:
    driver(std::uint16_t port, std::string secret);
    ~driver();
    driver(const driver&) = delete;
    driver& operator=(const driver&) = delete;

    /// Sets the rehearsal's clock to start now (every `_s` time is measured from it).
    void start_clock();
    /// Returns seconds since start_clock().
    double now_s() const;

    /// Sends one operator or feed request (admin or producer token, by the target) and waits
    /// for the answer, retrying a failed connection or a 503 until `deadline` passes.
    http_reply call(const std::string& method, const std::string& target, const std::string& body,
                    std::chrono::milliseconds deadline);

    /// Creates accounts first_id .. first_id + count - 1 in EUR and deposits `deposit` into each
    /// (key "rehearsal"), `workers` requests at a time. Waits; throws std::runtime_error naming
    /// the first refusal.
    void create_accounts(std::int64_t first_id, std::int64_t count, const std::string& deposit,
                         std::size_t workers);

    /// Places `bets` bets spread over `accounts` (each account's in turn, over short-lived
    /// connections) on `selections`, at most `rate_per_s`, keys <key_prefix><n>. Waits; throws
    /// std::runtime_error when a bet is refused or the engine cannot be reached for 60 s.
    void preload(const std::vector<std::int64_t>& accounts,
                 const std::vector<std::int64_t>& selections, const std::string& stake,
                 std::int64_t bets, double rate_per_s, const std::string& key_prefix);

    /// Starts the live bettors (open loop). Returns at once.
    void start_bettors(bettor_settings settings);
    /// Makes every bettor drop its connection now; each reconnects and sends again what had no
    /// reply. Returns at once.
    void drop_connections();
    /// Waits until the bettors' schedules are over and every request has its reply, or
    /// `drain_s` more seconds have passed; then closes them and returns what they saw.
    bettor_results finish_bettors(double drain_s);

    /// Starts reading GET /metrics (the backlog's age) every 0.5 s and GET /v1/diagnostics
    /// (the verdict) every 2 s. Returns at once.
    void start_sampling();
    /// Makes the sampler also read, every 0.5 s, each market's events (GET
    /// /v1/feed/markets/{id}/events, as its producer would) until event `seq` of every one of
    /// them is applied. Returns at once.
    void watch_applied(std::vector<std::int64_t> market_ids, std::int64_t seq);

    /// Holds what the sampler read.
    struct samples {
        std::vector<backlog_reading> backlog;
        std::vector<diagnosis_seen> verdicts;
        std::optional<double> applied_s;  ///< when the watched events were all seen applied
    };
    /// Stops the sampling; returns its readings.
    samples finish_sampling();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace fulltime::app::rehearsal

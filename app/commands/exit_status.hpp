#pragma once
/// The exit statuses every `fulltime` command shares, and the exceptions that carry a status to
/// main (app/main.cpp turns each into one "fulltime: ..." line on stderr):
///   0 ok; 1 a domain "no" (a refusal, a drift, a failed invariant, something pending);
///   2 usage (bad arguments, a bad configuration value: std::invalid_argument, config_error);
///   3 unreachable (the database, or for diagnose the engine, did not answer: `unreachable`);
///   4 failed (anything else: a SQL error, a timed-out statement, a stack that did not start).
/// A script can tell "the answer is no" (1) from "ask again later" (3) and "look at it" (4).

#include "fulltime/db/error.hpp"

#include <stdexcept>
#include <string>

namespace fulltime::app {

enum exit_status : int {
    exit_ok = 0,
    exit_no = 1,
    exit_usage = 2,
    exit_unreachable = 3,
    exit_failed = 4,
};

/// A domain "no" raised where returning 1 is awkward (a newer schema refused by serve).
class refusal : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The database (or the engine) could not be reached or stopped answering.
class unreachable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Returns whether a database failure means the server could not be reached or stopped
/// answering (connect failed, connection lost, no answer within the client's deadline, no
/// connection within the pool's wait), rather than an error the server reported.
bool is_unreachable(db::errc code) noexcept;

/// Returns 3 for a failure is_unreachable names, 4 for any other.
int exit_status_of(const db::failure& f) noexcept;

/// Throws `unreachable` or std::runtime_error, as exit_status_of classifies `f`, with the
/// message "<what>: <describe(f)>".
[[noreturn]] void throw_failure(const std::string& what, const db::failure& f);

}  // namespace fulltime::app

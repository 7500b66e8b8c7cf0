// The command line's pure helpers: which database failures are "unreachable" (exit 3) rather
// than failures (4), and diagnose's --url.

#include "app/commands/exit_status.hpp"
#include "app/commands/commands.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace fulltime::app;
using fulltime::db::errc;

namespace {

fulltime::db::failure failure_of(errc code) {
    fulltime::db::failure f;
    f.code = code;
    f.message = "m";
    return f;
}

}  // namespace

TEST_CASE("exit status: a server that does not answer is 3, an error it reports is 4") {
    for (errc code : {errc::connect_failed, errc::connection_lost, errc::deadline_exceeded,
                      errc::pool_timeout}) {
        CHECK_MESSAGE(exit_status_of(failure_of(code)) == exit_unreachable,
                      fulltime::db::to_string(code));
        CHECK_THROWS_AS(throw_failure("reading", failure_of(code)), unreachable);
    }
    for (errc code : {errc::lock_timeout, errc::statement_timeout, errc::unique_violation,
                      errc::serialization_failure, errc::bad_result, errc::server_error,
                      errc::pool_closed, errc::pool_queue_full}) {
        CHECK_MESSAGE(exit_status_of(failure_of(code)) == exit_failed,
                      fulltime::db::to_string(code));
    }
    CHECK_THROWS_WITH_AS(throw_failure("reading", failure_of(errc::lock_timeout)),
                         "reading: lock_timeout: m", std::runtime_error);
}

TEST_CASE("exit status: the codes are the documented ones") {
    CHECK(exit_ok == 0);
    CHECK(exit_no == 1);
    CHECK(exit_usage == 2);
    CHECK(exit_unreachable == 3);
    CHECK(exit_failed == 4);
}

TEST_CASE("diagnose --url: http://HOST:PORT, a path ignored") {
    const auto a = parse_engine_url("http://127.0.0.1:8081");
    CHECK(a.host == "127.0.0.1");
    CHECK(a.port == "8081");
    const auto b = parse_engine_url("http://engine.local:9000/v1/diagnostics");
    CHECK(b.host == "engine.local");
    CHECK(b.port == "9000");
    for (const char* bad : {"127.0.0.1:8080", "https://h:1", "http://h", "http://h:", "http://:80",
                            "http://h/x:80", ""}) {
        CHECK_THROWS_AS_MESSAGE(parse_engine_url(bad), std::invalid_argument, bad);
    }
}

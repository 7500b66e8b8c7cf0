#include "fulltime/db/error.hpp"

#include "db/detail_error.hpp"

#include <stdexcept>

namespace fulltime::db {

std::string_view to_string(errc code) noexcept {
    switch (code) {
        case errc::connection_lost:
            return "connection_lost";
        case errc::connect_failed:
            return "connect_failed";
        case errc::lock_timeout:
            return "lock_timeout";
        case errc::statement_timeout:
            return "statement_timeout";
        case errc::unique_violation:
            return "unique_violation";
        case errc::check_violation:
            return "check_violation";
        case errc::foreign_key_violation:
            return "foreign_key_violation";
        case errc::serialization_failure:
            return "serialization_failure";
        case errc::deadlock:
            return "deadlock";
        case errc::deadline_exceeded:
            return "deadline_exceeded";
        case errc::pool_timeout:
            return "pool_timeout";
        case errc::pool_queue_full:
            return "pool_queue_full";
        case errc::pool_closed:
            return "pool_closed";
        case errc::bad_result:
            return "bad_result";
        case errc::server_error:
            return "server_error";
    }
    return "unknown";
}

bool failure::retryable() const noexcept {
    return code == errc::lock_timeout || code == errc::serialization_failure ||
           code == errc::deadlock;
}

std::string describe(const failure& f) {
    std::string out{to_string(f.code)};
    if (!f.sqlstate.empty()) {
        out += " [" + f.sqlstate + "]";
    }
    out += ": ";
    out += f.message;
    return out;
}

void throw_exception_from_error(const failure& f, const boost::source_location&) {
    throw std::runtime_error(describe(f));
}

namespace detail {

namespace {

// libpq ends its messages with a newline (sometimes several lines); logs want one line.
std::string one_line(const char* text) {
    std::string out = text != nullptr ? text : "";
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) {
        out.pop_back();
    }
    for (char& c : out) {
        if (c == '\n') {
            c = ' ';
        }
    }
    return out;
}

}  // namespace

errc classify_sqlstate(std::string_view sqlstate) noexcept {
    if (sqlstate == "55P03") {
        return errc::lock_timeout;
    }
    if (sqlstate == "57014") {
        return errc::statement_timeout;
    }
    if (sqlstate == "23505") {
        return errc::unique_violation;
    }
    if (sqlstate == "23514") {
        return errc::check_violation;
    }
    if (sqlstate == "23503") {
        return errc::foreign_key_violation;
    }
    if (sqlstate == "40001") {
        return errc::serialization_failure;
    }
    if (sqlstate == "40P01") {
        return errc::deadlock;
    }
    // Class 08 is "connection exception"; 57P01-57P03 are admin shutdown, crash shutdown and
    // "cannot connect now": in every case this session is gone or about to be.
    if (sqlstate.size() == 5 && sqlstate.substr(0, 2) == "08") {
        return errc::connection_lost;
    }
    if (sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03") {
        return errc::connection_lost;
    }
    return errc::server_error;
}

bool breaks_connection(errc code) noexcept {
    return code == errc::connection_lost || code == errc::deadline_exceeded ||
           code == errc::connect_failed;
}

failure make_failure(errc code, std::string message) {
    failure f;
    f.code = code;
    f.message = std::move(message);
    return f;
}

failure connection_failure(PGconn* conn, errc otherwise) {
    const bool bad = conn == nullptr || PQstatus(conn) == CONNECTION_BAD;
    return make_failure(bad ? errc::connection_lost : otherwise,
                        conn != nullptr ? one_line(PQerrorMessage(conn)) : "no connection");
}

outcome<void> check_result(PGconn* conn, const PGresult* res) {
    if (res == nullptr) {
        // PQgetResult only returns null at the end of a command's results; a caller asking
        // about a missing result lost it to an allocation failure inside libpq.
        return connection_failure(conn, errc::server_error);
    }
    switch (PQresultStatus(res)) {
        case PGRES_COMMAND_OK:
        case PGRES_TUPLES_OK:
        case PGRES_EMPTY_QUERY:
            return {};
        case PGRES_FATAL_ERROR:
        case PGRES_NONFATAL_ERROR: {
            failure f;
            const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            f.sqlstate = state != nullptr ? state : "";
            f.message = one_line(PQresultErrorMessage(res));
            if (!f.sqlstate.empty()) {
                f.code = classify_sqlstate(f.sqlstate);
            } else if (conn == nullptr || PQstatus(conn) == CONNECTION_BAD) {
                // Errors that libpq itself generates ("server closed the connection
                // unexpectedly") carry no SQLSTATE.
                f.code = errc::connection_lost;
            } else {
                f.code = errc::server_error;
            }
            return f;
        }
        case PGRES_BAD_RESPONSE:
            // The server sent something libpq could not parse: the protocol stream is no
            // longer trustworthy, so the connection is treated as lost.
            return make_failure(errc::connection_lost, one_line(PQresultErrorMessage(res)));
        default:
            // COPY and pipeline states: this layer never starts them, so a statement that did
            // (COPY ... FROM STDIN) is a programmer error.
            return make_failure(errc::bad_result, std::string("unsupported result status ") +
                                                      PQresStatus(PQresultStatus(res)));
    }
}

}  // namespace detail

}  // namespace fulltime::db

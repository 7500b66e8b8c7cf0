#include "fulltime/db/connection.hpp"

#include "db/detail_error.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

namespace fulltime::db {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using wait_type = asio::posix::descriptor_base::wait_type;

namespace {

enum class wait_status { ready, timed_out, cancelled, failed };

// Notices ("relation already exists, skipping") are not errors and the engine has no use for
// them; libpq's default would print them on stderr.
void discard_notice(void*, const char*) {}

// libpq takes parameters as C strings: an embedded NUL would silently cut the value short, so
// such a value is refused rather than stored altered. The pointers point into `args`.
outcome<std::vector<const char*>> param_values(const params& args) {
    if (args.size() > limits::statement_params_max) {
        return detail::make_failure(errc::bad_result,
                                    "too many parameters: " + std::to_string(args.size()));
    }
    std::vector<const char*> values;
    values.reserve(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& v = args.at(i);
        if (v && std::memchr(v->data(), '\0', v->size()) != nullptr) {
            return detail::make_failure(
                errc::bad_result, "parameter $" + std::to_string(i + 1) + " contains a NUL byte");
        }
        values.push_back(v ? v->c_str() : nullptr);
    }
    return values;
}

// What is left of a round trip's budget when a call makes two (prepare, then execute); at least
// 1 ms, so that an exhausted budget fails in the wait as a deadline, not before sending.
std::chrono::milliseconds remaining(clock_type::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock_type::now());
    return std::max(left, std::chrono::milliseconds(1));
}

// SQLSTATE invalid_sql_statement_name: the server has no prepared statement of that name.
constexpr std::string_view prepared_statement_missing = "26000";

// A connection that never opened is connect_failed whatever libpq's state says.
failure connect_failure(PGconn* conn) {
    return detail::make_failure(errc::connect_failed,
                                detail::connection_failure(conn, errc::connect_failed).message);
}

}  // namespace

struct connection::impl {
    explicit impl(asio::any_io_executor executor) : executor_(executor), timer_(executor) {}

    ~impl() { finish(); }

    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;

    /// Stops watching the socket: closes the duplicate that wrap_socket gave the reactor (the
    /// socket itself stays libpq's, which closes it in PQfinish or already did).
    void unwrap_socket() noexcept {
        if (socket_) {
            boost::system::error_code ignored;
            socket_->close(ignored);
            socket_.reset();
        }
    }

    /// Watches libpq's current socket. Called after every PQconnectPoll step because libpq may
    /// close its socket and open another one, possibly under the same number, which the
    /// reactor's registration of the old one would not cover.
    ///
    /// The reactor gets a duplicate of the descriptor, never libpq's own number: libpq closes
    /// its socket by itself when the server ends the session (a FATAL, a restart, PgBouncer's
    /// server_login_retry), and that number may then be handed to the next socket the process
    /// opens, a bettor's WebSocket on another event loop included. Deregistering the old
    /// number afterwards would silently take that new socket out of its reactor: the engine
    /// would never read that bettor again (a rehearsal through PgBouncer found exactly this).
    /// The duplicate is ours alone, so its number cannot be reused before we close it.
    outcome<void> wrap_socket() {
        unwrap_socket();
        const int fd = PQsocket(conn_);
        if (fd < 0) {
            return detail::connection_failure(conn_, errc::connection_lost);
        }
        const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (own < 0) {
            return detail::make_failure(
                errc::connection_lost,
                std::string("cannot watch the socket: ") + std::strerror(errno));
        }
        boost::system::error_code ec;
        socket_.emplace(executor_);
        socket_->assign(own, ec);
        if (ec) {
            ::close(own);
            socket_.reset();
            return detail::make_failure(errc::connection_lost,
                                        "cannot watch the socket: " + ec.message());
        }
        return {};
    }

    /// Closes the libpq connection; later calls fail with connection_lost.
    void finish() noexcept {
        unwrap_socket();
        if (conn_ != nullptr) {
            PQfinish(conn_);
            conn_ = nullptr;
        }
        broken_ = true;
    }

    /// Waits until the socket is ready for `what` or `deadline` passes, whichever comes first.
    /// The parallel group completes only after both operations have completed, so nothing is
    /// left pending on the socket or the timer when this returns.
    asio::awaitable<wait_status> wait_socket(wait_type what, clock_type::time_point deadline) {
        FULLTIME_DEBUG_ASSERT(socket_.has_value());
        timer_.expires_at(deadline);
        auto [order, socket_ec, timer_ec] =
            co_await asio::experimental::make_parallel_group(
                socket_->async_wait(what, asio::deferred), timer_.async_wait(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(),
                            asio::as_tuple(asio::use_awaitable));
        if (order[0] == 0) {
            if (!socket_ec) {
                co_return wait_status::ready;
            }
            co_return socket_ec == asio::error::operation_aborted ? wait_status::cancelled
                                                                  : wait_status::failed;
        }
        co_return timer_ec ? wait_status::cancelled : wait_status::timed_out;
    }

    /// Asks the server to cancel what this session is running, without waiting: libpq's cancel
    /// request opens a connection of its own and blocks, so it is sent from a detached thread.
    /// Closing our socket alone would leave the statement running until it next writes to the
    /// client (a settle step, or a pg_sleep, would run to its end).
    void cancel_on_server() noexcept {
        if (conn_ == nullptr) {
            return;
        }
        PGcancel* cancel = PQgetCancel(conn_);
        if (cancel == nullptr) {
            return;
        }
        try {
            std::thread([cancel] {
                char error[256];
                PQcancel(cancel, error, sizeof error);
                PQfreeCancel(cancel);
            }).detach();
        } catch (const std::system_error&) {
            PQfreeCancel(cancel);  // no thread: the statement_timeout still bounds it
        }
    }

    /// Turns a wait that did not end in readiness into a failure and closes the connection:
    /// after a partial round trip the protocol state is unknown, so it must not be reused. A
    /// deadline (or a cancelled wait) first asks the server to cancel the statement.
    failure fail_wait(wait_status status, std::chrono::milliseconds timeout) {
        if (status == wait_status::timed_out || status == wait_status::cancelled) {
            cancel_on_server();
        }
        finish();
        switch (status) {
            case wait_status::timed_out:
                return detail::make_failure(
                    errc::deadline_exceeded,
                    "no reply within " + std::to_string(timeout.count()) + " ms");
            case wait_status::cancelled:
                return detail::make_failure(errc::deadline_exceeded, "round trip cancelled");
            default:
                return detail::make_failure(errc::connection_lost, "socket wait failed");
        }
    }

    /// Marks the connection broken when `f` means it cannot be used any more.
    failure note(failure f) noexcept {
        if (detail::breaks_connection(f.code)) {
            broken_ = true;
        }
        return f;
    }

    /// Sends what libpq has buffered and reads every result of the command sent last, within
    /// `timeout`. Returns the last result, or the last error if any result was an error.
    asio::awaitable<outcome<result>> round_trip(std::chrono::milliseconds timeout) {
        const auto deadline = clock_type::now() + timeout;
        for (;;) {
            const int flushed = PQflush(conn_);
            if (flushed == 0) {
                break;
            }
            if (flushed < 0) {
                co_return note(detail::connection_failure(conn_, errc::connection_lost));
            }
            // Waiting for write-readiness alone is enough: when a send would block, libpq reads
            // whatever the server sent meanwhile, so the two sides cannot block each other.
            const auto status =
                co_await wait_socket(asio::posix::descriptor_base::wait_write, deadline);
            if (status != wait_status::ready) {
                co_return fail_wait(status, timeout);
            }
        }

        std::optional<failure> error;
        result last;
        for (;;) {
            while (PQisBusy(conn_) != 0) {
                const auto status =
                    co_await wait_socket(asio::posix::descriptor_base::wait_read, deadline);
                if (status != wait_status::ready) {
                    co_return fail_wait(status, timeout);
                }
                if (PQconsumeInput(conn_) == 0) {
                    co_return note(detail::connection_failure(conn_, errc::connection_lost));
                }
            }
            PGresult* raw = PQgetResult(conn_);
            if (raw == nullptr) {
                break;
            }
            result current{raw};
            auto checked = detail::check_result(conn_, raw);
            if (checked) {
                last = std::move(current);
                continue;
            }
            error = note(std::move(checked).error());
            if (error->code == errc::bad_result) {
                // A COPY state would make PQgetResult repeat forever: give the connection up.
                finish();
                co_return *error;
            }
        }
        if (PQstatus(conn_) == CONNECTION_BAD) {
            broken_ = true;
            if (!error) {
                error = detail::connection_failure(conn_, errc::connection_lost);
            }
        }
        if (error) {
            co_return *error;
        }
        co_return last;
    }

    /// Returns a failure when the connection cannot start a round trip.
    std::optional<failure> unusable() const {
        if (conn_ == nullptr || broken_ || !socket_) {
            return detail::make_failure(errc::connection_lost, "connection is closed or broken");
        }
        return std::nullopt;
    }

    asio::any_io_executor executor_;
    PGconn* conn_ = nullptr;
    std::optional<asio::posix::stream_descriptor> socket_;
    asio::steady_timer timer_;
    std::chrono::milliseconds query_timeout_{};
    int backend_pid_ = 0;
    bool broken_ = false;
    bool prepare_ = true;  ///< query_prepared prepares its statements
    /// The statements prepared on this session; bounded by the statements the code names.
    std::set<std::string, std::less<>> prepared_;
};

std::string startup_options(const session_options& s) {
    std::string out;
    const auto add = [&out](const char* name, std::int64_t ms) {
        if (ms > 0) {
            out += (out.empty() ? "" : " ") + std::string("-c ") + name + "=" + std::to_string(ms);
        }
    };
    add("statement_timeout", s.statement_timeout_ms);
    add("idle_in_transaction_session_timeout", s.idle_in_transaction_timeout_ms);
    if (s.jit) {
        out += std::string(out.empty() ? "" : " ") + "-c jit=" + (*s.jit ? "on" : "off");
    }
    if (!s.synchronous_commit.empty()) {
        out +=
            std::string(out.empty() ? "" : " ") + "-c synchronous_commit=" + s.synchronous_commit;
    }
    return out;
}

asio::awaitable<outcome<std::unique_ptr<connection>>> connection::open(
    asio::any_io_executor executor, std::string conninfo, std::chrono::milliseconds connect_timeout,
    std::chrono::milliseconds query_timeout, bool prepared_statements, session_options session) {
    auto state = std::make_unique<impl>(executor);
    state->query_timeout_ = query_timeout;
    state->prepare_ = prepared_statements;

    // expand_dbname=1 lets `conninfo` be a URI or keyword/value string; keywords are applied in
    // order, so the conninfo (or PGAPPNAME) overrides the fallback application name, and an
    // `options` in the conninfo overrides the session's timeouts.
    const std::string options = startup_options(session);
    const char* const keywords[] = {"fallback_application_name", "options", "dbname", nullptr};
    const char* const values[] = {session.application_name.c_str(), options.c_str(),
                                  conninfo.c_str(), nullptr};
    state->conn_ = PQconnectStartParams(keywords, values, 1);
    if (state->conn_ == nullptr) {
        co_return detail::make_failure(errc::connect_failed, "out of memory");
    }
    if (PQstatus(state->conn_) == CONNECTION_BAD) {
        co_return connect_failure(state->conn_);
    }
    PQsetNoticeProcessor(state->conn_, &discard_notice, nullptr);

    const auto deadline = clock_type::now() + connect_timeout;
    // Before the first PQconnectPoll, libpq's protocol is to behave as if it returned WRITING.
    PostgresPollingStatusType polled = PGRES_POLLING_WRITING;
    for (;;) {
        if (polled == PGRES_POLLING_OK) {
            break;
        }
        if (polled == PGRES_POLLING_FAILED) {
            co_return connect_failure(state->conn_);
        }
        if (auto wrapped = state->wrap_socket(); !wrapped) {
            co_return detail::make_failure(errc::connect_failed, wrapped.error().message);
        }
        const auto status = co_await state->wait_socket(
            polled == PGRES_POLLING_READING ? asio::posix::descriptor_base::wait_read
                                            : asio::posix::descriptor_base::wait_write,
            deadline);
        if (status == wait_status::timed_out) {
            co_return detail::make_failure(
                errc::connect_failed,
                "no connection within " + std::to_string(connect_timeout.count()) + " ms");
        }
        if (status != wait_status::ready) {
            co_return detail::make_failure(errc::connect_failed, "socket wait failed");
        }
        polled = PQconnectPoll(state->conn_);
    }

    if (PQsetnonblocking(state->conn_, 1) != 0) {
        co_return connect_failure(state->conn_);
    }
    if (auto wrapped = state->wrap_socket(); !wrapped) {
        co_return detail::make_failure(errc::connect_failed, wrapped.error().message);
    }
    state->backend_pid_ = PQbackendPID(state->conn_);
    co_return std::unique_ptr<connection>(new connection(std::move(state)));
}

connection::connection(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

connection::~connection() = default;

asio::awaitable<outcome<result>> connection::query(std::string sql, params args) {
    const auto timeout = impl_->query_timeout_;
    co_return co_await query(std::move(sql), std::move(args), timeout);
}

asio::awaitable<outcome<result>> connection::query(std::string sql, params args,
                                                   std::chrono::milliseconds timeout) {
    impl& s = *impl_;
    if (auto bad = s.unusable()) {
        co_return *bad;
    }
    auto values = param_values(args);
    if (!values) {
        co_return values.error();
    }
    if (PQsendQueryParams(s.conn_, sql.c_str(), static_cast<int>(values->size()), nullptr,
                          values->data(), nullptr, nullptr, 0) == 0) {
        // Either the connection is gone or a command is still in progress on it; neither state
        // can be trusted for another statement.
        s.broken_ = true;
        co_return detail::connection_failure(s.conn_, errc::server_error);
    }
    co_return co_await s.round_trip(timeout);
}

asio::awaitable<outcome<result>> connection::query_prepared(statement stmt, params args,
                                                            std::chrono::milliseconds timeout) {
    impl& s = *impl_;
    if (!s.prepare_) {
        co_return co_await query(stmt.sql, std::move(args), timeout);
    }
    if (auto bad = s.unusable()) {
        co_return *bad;
    }
    auto values = param_values(args);
    if (!values) {
        co_return values.error();
    }
    const int count = static_cast<int>(values->size());
    const auto deadline = clock_type::now() + timeout;
    // Two executions at most: a statement the server forgot is prepared again once.
    for (int attempt = 0;; ++attempt) {
        if (!s.prepared_.contains(std::string_view{stmt.name})) {
            // The parameter types come from the statement's casts.
            if (PQsendPrepare(s.conn_, stmt.name, stmt.sql, count, nullptr) == 0) {
                s.broken_ = true;
                co_return detail::connection_failure(s.conn_, errc::server_error);
            }
            auto prepared = co_await s.round_trip(remaining(deadline));
            if (!prepared) {
                co_return prepared.error();
            }
            s.prepared_.emplace(stmt.name);
        }
        if (PQsendQueryPrepared(s.conn_, stmt.name, count, values->data(), nullptr, nullptr, 0) ==
            0) {
            s.broken_ = true;
            co_return detail::connection_failure(s.conn_, errc::server_error);
        }
        auto rows = co_await s.round_trip(remaining(deadline));
        if (!rows && rows.error().sqlstate == prepared_statement_missing) {
            s.prepared_.erase(s.prepared_.find(std::string_view{stmt.name}));
            // Outside a transaction the failed execution left nothing behind, so preparing
            // again and re-running is the same call; inside one, the error has aborted it.
            if (attempt == 0 && !s.broken_ && PQtransactionStatus(s.conn_) == PQTRANS_IDLE) {
                continue;
            }
        }
        co_return rows;
    }
}

asio::awaitable<outcome<result>> connection::execute_script(std::string sql) {
    impl& s = *impl_;
    if (auto bad = s.unusable()) {
        co_return *bad;
    }
    if (PQsendQuery(s.conn_, sql.c_str()) == 0) {
        s.broken_ = true;
        co_return detail::connection_failure(s.conn_, errc::server_error);
    }
    co_return co_await s.round_trip(s.query_timeout_);
}

bool connection::broken() const noexcept {
    return impl_->broken_ || impl_->conn_ == nullptr || PQstatus(impl_->conn_) == CONNECTION_BAD ||
           PQtransactionStatus(impl_->conn_) == PQTRANS_INERROR;
}

bool connection::idle() const noexcept {
    return !impl_->broken_ && impl_->conn_ != nullptr &&
           PQtransactionStatus(impl_->conn_) == PQTRANS_IDLE;
}

bool connection::in_transaction() const noexcept {
    if (impl_->broken_ || impl_->conn_ == nullptr) {
        return false;
    }
    const auto status = PQtransactionStatus(impl_->conn_);
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR;
}

bool connection::in_failed_transaction() const noexcept {
    return !impl_->broken_ && impl_->conn_ != nullptr &&
           PQtransactionStatus(impl_->conn_) == PQTRANS_INERROR;
}

bool connection::check_alive() noexcept {
    impl& s = *impl_;
    if (s.unusable()) {
        return false;
    }
    // Bounded: each PQconsumeInput reads one chunk; a terminated backend leaves one error
    // message and then end-of-file, so a few rounds reach the end-of-file.
    for (int round = 0; round < 8; ++round) {
        pollfd watched{};
        watched.fd = PQsocket(s.conn_);
        watched.events = POLLIN;
        const int ready = ::poll(&watched, 1, 0);
        if (ready == 0) {
            return true;
        }
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            return true;  // cannot tell; the next round trip will
        }
        if (PQconsumeInput(s.conn_) == 0 || PQstatus(s.conn_) == CONNECTION_BAD) {
            s.finish();
            return false;
        }
    }
    return true;
}

int connection::backend_pid() const noexcept { return impl_->backend_pid_; }

void connection::close() noexcept { impl_->finish(); }

}  // namespace fulltime::db

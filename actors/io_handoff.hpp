#pragma once
/// The one hand-off from an actor to the io_context and back: an actor never calls libpq, so
/// every database call is a coroutine on the engine's io_context whose result comes back to the
/// actor as a message. Private to actors/; it pulls in CAF's headers.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include <type_traits>
#include <utility>

namespace fulltime::actors::detail {

/// Names the value type T of an `awaitable<T>`.
template <class Awaitable>
struct awaitable_value;

template <class T, class Executor>
struct awaitable_value<boost::asio::awaitable<T, Executor>> {
    using type = T;
};

/// Runs on the io_context: awaits the coroutine `make()` returns, then sends
/// `(Atom, extra..., its result)` to `reply_to` (without the result when it is void). A message
/// to an actor that is gone is dropped by CAF, which is what shutdown relies on: the actor's
/// exit handler has already answered whoever waited on it.
template <class Atom, class Make, class... Extra>
boost::asio::awaitable<void> run_and_send(Make make, caf::actor reply_to, Extra... extra) {
    using result_type = typename awaitable_value<std::invoke_result_t<Make&>>::type;
    if constexpr (std::is_void_v<result_type>) {
        co_await make();
        caf::anon_send(reply_to, Atom::value, std::move(extra)...);
    } else {
        auto result = co_await make();
        caf::anon_send(reply_to, Atom::value, std::move(extra)..., std::move(result));
    }
}

/// Posts to `io` a coroutine that awaits `make()` there and sends `(Atom, extra..., result)`
/// back to `self`. `make` is a callable (not itself a coroutine) that returns an awaitable; it
/// holds its arguments by value and is called on the io thread, so the coroutine is created and
/// started there, never on a CAF worker (CP.51: no capturing lambda is a coroutine here).
/// Callable from the actor's own handlers; does not block.
template <class Atom, class Self, class Make, class... Extra>
void run_on_io(Self* self, const boost::asio::any_io_executor& io, Make make, Extra... extra) {
    boost::asio::post(io, [io, make = std::move(make), reply_to = caf::actor_cast<caf::actor>(self),
                           ... extra = std::move(extra)]() mutable {
        boost::asio::co_spawn(
            io, run_and_send<Atom>(std::move(make), std::move(reply_to), std::move(extra)...),
            boost::asio::detached);
    });
}

}  // namespace fulltime::actors::detail

# Precompiled headers: most translation units spend more time parsing the same headers (the
# standard library, nlohmann/json, Asio's coroutine machinery, libpq) than compiling their own
# code. Each target below parses them once into a precompiled header that its sources load
# instead. Beast, CAF and CLI11 stay out: few files include them, and every translation unit
# pays for loading whatever the precompiled header holds. docs/decisions/0028 has the figures.
#
# A precompiled header makes every header it holds visible to every source of the target, so a
# missing #include goes unnoticed here; the `FULLTIME_PCH=OFF` build (the sanitizer preset)
# still catches it.

option(FULLTIME_PCH "Precompile the headers most translation units include" ON)

set(FULLTIME_PCH_HEADERS
  <algorithm> <array> <atomic> <chrono> <cstddef> <cstdint> <cstdio> <deque> <functional>
  <map> <memory> <optional> <set> <span> <stdexcept> <string> <string_view> <thread> <utility>
  <variant> <vector>
  <nlohmann/json.hpp>
  <libpq-fe.h>
  <boost/asio/any_io_executor.hpp> <boost/asio/as_tuple.hpp> <boost/asio/awaitable.hpp>
  <boost/asio/co_spawn.hpp> <boost/asio/detached.hpp> <boost/asio/io_context.hpp>
  <boost/asio/post.hpp> <boost/asio/steady_timer.hpp> <boost/asio/this_coro.hpp>
  <boost/asio/use_awaitable.hpp>)

# fulltime_precompile(target [extra headers...]): the common headers plus the target's own.
function(fulltime_precompile target)
  if(FULLTIME_PCH)
    target_precompile_headers(${target} PRIVATE ${FULLTIME_PCH_HEADERS} ${ARGN})
  endif()
endfunction()

# ccache caches a source compiled with a precompiled header only when told that the header's
# macros and timestamps may be trusted (ccache's manual, "Precompiled headers").
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
    CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
    ${CCACHE_PROGRAM})
endif()

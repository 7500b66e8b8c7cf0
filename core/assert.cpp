#include "fulltime/core/assert.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fulltime::detail {

void assertion_failed(const char* expr, const char* file, int line) noexcept {
    std::fprintf(stderr, "fulltime: assertion failed: %s (%s:%d)\n", expr, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace fulltime::detail

#if defined(BOOST_ENABLE_ASSERT_DEBUG_HANDLER) && !defined(NDEBUG)
// Boost's assertions in builds with them on (Debug: CMakeLists.txt, scripts/fuzz). Each aborts
// as assert() would, except one that is wrong: Beast 1.81's parse_chunk_header asserts n >= 5
// when a chunked body's final chunk is resumed, but a client may send "0\r\n" and then "\r"
// alone (n = 4), and the code after the assertion answers need_more correctly. A client could
// otherwise abort a debug engine with one request. Fixed upstream in Boost 1.86 (Beast pull
// request 2861: "fix asserts, it's possible that we reach code only with 3 symbols").
namespace boost {

namespace {

bool known_wrong(const char* expr, const char* function, const char* file) {
    return std::strcmp(expr, "n >= 5") == 0 && std::strstr(function, "parse_chunk_header") &&
           std::strstr(file, "beast/http/impl/basic_parser.ipp");
}

// Reports like assert() and stops; `msg` is BOOST_ASSERT_MSG's (null for BOOST_ASSERT).
[[noreturn]] void report(const char* expr, const char* msg, const char* function, const char* file,
                         long line) {
    std::fprintf(stderr, "boost: assertion failed: %s%s%s%s in %s (%s:%ld)\n", expr,
                 msg ? " (" : "", msg ? msg : "", msg ? ")" : "", function, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace

void assertion_failed(const char* expr, const char* function, const char* file, long line) {
    if (!known_wrong(expr, function, file)) {
        report(expr, nullptr, function, file, line);
    }
}

void assertion_failed_msg(const char* expr, const char* msg, const char* function, const char* file,
                          long line) {
    report(expr, msg, function, file, line);
}

}  // namespace boost
#endif

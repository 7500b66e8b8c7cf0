#pragma once
/// The two assertion macros of the project (STYLE.md, convention 5).
///
/// FULLTIME_ASSERT guards invariants that protect money and stays on in every build.
/// FULLTIME_DEBUG_ASSERT documents programmer assumptions and is compiled out with NDEBUG.
/// Neither is ever used to validate input from a client, a producer or a config file.

namespace fulltime::detail {
[[noreturn]] void assertion_failed(const char* expr, const char* file, int line) noexcept;
}  // namespace fulltime::detail

#define FULLTIME_ASSERT(expr)                                                \
    do {                                                                     \
        if (!(expr)) {                                                       \
            ::fulltime::detail::assertion_failed(#expr, __FILE__, __LINE__); \
        }                                                                    \
    } while (false)

#ifdef NDEBUG
#define FULLTIME_DEBUG_ASSERT(expr) \
    do {                            \
    } while (false)
#else
#define FULLTIME_DEBUG_ASSERT(expr) FULLTIME_ASSERT(expr)
#endif

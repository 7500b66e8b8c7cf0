#include "fulltime/core/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace fulltime::detail {

void assertion_failed(const char* expr, const char* file, int line) noexcept {
    std::fprintf(stderr, "fulltime: assertion failed: %s (%s:%d)\n", expr, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace fulltime::detail

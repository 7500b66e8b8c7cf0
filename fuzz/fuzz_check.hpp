#pragma once
/// What the fuzz targets share: an invariant check that survives NDEBUG and stops the run with
/// the failed expression, so that libFuzzer saves the input as a crash.

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(expr)                                                                  \
    do {                                                                                  \
        if (!(expr)) {                                                                    \
            std::fprintf(stderr, "fuzz: invariant failed: %s (%s:%d)\n", #expr, __FILE__, \
                         __LINE__);                                                       \
            std::abort();                                                                 \
        }                                                                                 \
    } while (false)

#include "fulltime/core/log.hpp"

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace fulltime::log {

namespace {
std::atomic<int> current_level{static_cast<int>(level::info)};

const char* name(level l) {
    switch (l) {
        case level::debug:
            return "debug";
        case level::info:
            return "info";
        case level::warn:
            return "warn";
        case level::error:
            return "error";
    }
    return "info";
}
}  // namespace

void set_level(level l) noexcept { current_level.store(static_cast<int>(l)); }

level parse_level(std::string_view text) noexcept {
    if (text == "debug") {
        return level::debug;
    }
    if (text == "warn") {
        return level::warn;
    }
    if (text == "error") {
        return level::error;
    }
    return level::info;
}

void write(level l, std::string_view message) {
    if (static_cast<int>(l) < current_level.load(std::memory_order_relaxed)) {
        return;
    }
    const auto now = std::chrono::system_clock::now();
    const std::time_t secs = std::chrono::system_clock::to_time_t(now);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms.count()));
    std::string line;
    line.reserve(message.size() + 40);
    line.append(stamp).append(" ").append(name(l)).append(" ").append(message).append("\n");
    // One write(2) per record keeps concurrent records whole.
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace fulltime::log

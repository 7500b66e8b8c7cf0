#include "fulltime/core/log.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace fulltime::log {

namespace {

std::atomic<int> current_level{static_cast<int>(level::info)};
std::atomic<int> current_format{static_cast<int>(format::text)};

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

// syslog(3) priorities, as journald reads them from a "<N>" prefix.
char priority(level l) {
    switch (l) {
        case level::debug:
            return '7';
        case level::info:
            return '6';
        case level::warn:
            return '4';
        case level::error:
            return '3';
    }
    return '6';
}

// Appends `text` as a JSON string (quotes included). Control characters are escaped; other
// bytes pass through (the engine's own messages are UTF-8 or ASCII).
void append_json_string(std::string& out, std::string_view text) {
    out += '"';
    for (const char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                    out += escaped;
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

// Appends a text-format value: bare when it is one plain word, else quoted like JSON.
void append_text_value(std::string& out, std::string_view text) {
    bool plain = !text.empty();
    for (const char c : text) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == '"' || c == '=' || c == '\\') {
            plain = false;
            break;
        }
    }
    if (plain) {
        out += text;
    } else {
        append_json_string(out, text);
    }
}

bool under_journald() {
    // systemd sets JOURNAL_STREAM to "device:inode" of the journal's stream; it names stderr
    // only when they match (a process started from a unit with stderr redirected inherits the
    // variable, and its log must not get the prefix).
    static const bool journald = [] {
        const char* v = std::getenv("JOURNAL_STREAM");
        struct stat st {};
        if (v == nullptr || *v == '\0' || ::fstat(STDERR_FILENO, &st) != 0) {
            return false;
        }
        unsigned long long dev = 0;
        unsigned long long ino = 0;
        if (std::sscanf(v, "%llu:%llu", &dev, &ino) != 2) {
            return false;
        }
        return static_cast<unsigned long long>(st.st_dev) == dev &&
               static_cast<unsigned long long>(st.st_ino) == ino;
    }();
    return journald;
}

}  // namespace

void set_level(level l) noexcept { current_level.store(static_cast<int>(l)); }

void set_format(format f) noexcept { current_format.store(static_cast<int>(f)); }

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

format parse_format(std::string_view text) noexcept {
    return text == "json" ? format::json : format::text;
}

std::string render(format f, bool journald, std::string_view stamp, level l,
                   std::string_view message, std::initializer_list<field> fields) {
    std::string line;
    line.reserve(message.size() + 64 + fields.size() * 24);
    if (journald) {
        line.append("<").append(1, priority(l)).append(">");
    }
    if (f == format::json) {
        line.append(R"({"ts":")").append(stamp).append(R"(","level":")").append(name(l));
        line.append(R"(","msg":)");
        append_json_string(line, message);
        for (const field& fd : fields) {
            line += ',';
            append_json_string(line, fd.key);
            line += ':';
            if (fd.number) {
                line += fd.text;
            } else {
                append_json_string(line, fd.text);
            }
        }
        line += '}';
    } else {
        line.append(stamp).append(" ").append(name(l)).append(" ").append(message);
        for (const field& fd : fields) {
            line.append(" ").append(fd.key).append("=");
            append_text_value(line, fd.text);
        }
    }
    line += '\n';
    return line;
}

void write(level l, std::string_view message, std::initializer_list<field> fields) {
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
    const std::string line =
        render(static_cast<format>(current_format.load(std::memory_order_relaxed)),
               under_journald(), stamp, l, message, fields);
    // One write(2) per record keeps concurrent records whole.
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace fulltime::log

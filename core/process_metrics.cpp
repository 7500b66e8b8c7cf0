#include "fulltime/core/process_metrics.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace fulltime::metrics {

namespace {

std::string number_text(double v) {
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    return buffer;
}

// The fields of /proc/self/stat after the command name, which is in parentheses and may hold
// spaces: fields()[0] is field 3 (state) of proc(5).
std::optional<std::vector<std::string>> stat_fields() {
    std::ifstream in("/proc/self/stat");
    std::string line;
    if (!std::getline(in, line)) {
        return std::nullopt;
    }
    const auto close = line.rfind(')');
    if (close == std::string::npos) {
        return std::nullopt;
    }
    std::istringstream rest(line.substr(close + 1));
    std::vector<std::string> out;
    for (std::string f; rest >> f;) {
        out.push_back(std::move(f));
    }
    return out;
}

// The boot time from /proc/stat's btime line, in Unix seconds.
std::optional<double> boot_time_s() {
    std::ifstream in("/proc/stat");
    for (std::string key; in >> key;) {
        if (key == "btime") {
            double v = 0;
            if (in >> v) {
                return v;
            }
            return std::nullopt;
        }
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return std::nullopt;
}

// When this process started, in Unix seconds: boot time plus field 22 (starttime, in clock
// ticks since boot) of /proc/self/stat, as the Prometheus client libraries compute it; the
// time of this call when /proc cannot say (the engine registers this at start-up).
double start_time_s() {
    const auto fields = stat_fields();
    const auto boot = boot_time_s();
    const long ticks = sysconf(_SC_CLK_TCK);
    if (fields && fields->size() > 19 && boot && ticks > 0) {
        return *boot + std::stod((*fields)[19]) / static_cast<double>(ticks);
    }
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void sample(std::string& out, std::string_view name, std::string_view help, std::string_view type,
            const std::string& value) {
    append_header(out, name, help, type);
    append_sample(out, name, {}, value);
}

}  // namespace

void add_process_metrics(registry& r, std::string_view version) {
    r.make_gauge("fulltime_build_info", "Always 1; the version label says which release runs.",
                 label("version", version))
        .set(1);
    const std::string started = number_text(start_time_s());
    r.add_collector([started](std::string& out) {
        sample(out, "process_start_time_seconds", "Start time of the process since the Unix epoch.",
               "gauge", started);
        const long ticks = sysconf(_SC_CLK_TCK);
        if (const auto f = stat_fields(); f && f->size() > 12 && ticks > 0) {
            // utime and stime, fields 14 and 15.
            const double cpu =
                (std::stod((*f)[11]) + std::stod((*f)[12])) / static_cast<double>(ticks);
            sample(out, "process_cpu_seconds_total", "User and system CPU time spent.", "counter",
                   number_text(cpu));
        }
        std::ifstream statm("/proc/self/statm");
        long size_pages = 0;
        long resident_pages = 0;
        if (statm >> size_pages >> resident_pages) {
            sample(out, "process_resident_memory_bytes", "Resident memory size.", "gauge",
                   std::to_string(resident_pages * sysconf(_SC_PAGESIZE)));
        }
        std::error_code ec;
        std::size_t fds = 0;
        for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
             it.increment(ec)) {
            ++fds;
        }
        if (!ec) {
            sample(out, "process_open_fds", "Open file descriptors.", "gauge", std::to_string(fds));
        }
        // The soft limit, which accept runs into (EMFILE); the engine raises it at start
        // (core/fd_limit.hpp).
        rlimit nofile{};
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
            sample(out, "process_max_fds",
                   "Open file descriptors allowed (the soft RLIMIT_NOFILE).", "gauge",
                   std::to_string(nofile.rlim_cur));
        }
    });
}

}  // namespace fulltime::metrics

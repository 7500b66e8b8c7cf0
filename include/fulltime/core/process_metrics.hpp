#pragma once
/// The series every Prometheus target is expected to have: what build runs
/// (fulltime_build_info) and the standard process_* series read from /proc/self, so dashboards
/// and alerts written for any process (restarts, memory, file descriptors) work on this one.

#include "fulltime/core/metrics.hpp"

#include <string_view>

namespace fulltime::metrics {

/// Registers fulltime_build_info{version} (always 1) and a collector for
/// process_start_time_seconds, process_cpu_seconds_total, process_resident_memory_bytes and
/// process_open_fds. A /proc file that cannot be read leaves its series out of that scrape.
void add_process_metrics(registry& r, std::string_view version);

}  // namespace fulltime::metrics

#pragma once
/// A small Prometheus metrics registry: counters and gauges registered once at startup, updated
/// lock-free, and collectors that append computed series (pool gauges) at scrape time.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::metrics {

/// Counts events; only ever increases.
class counter {
public:
    /// Adds n.
    void inc(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
    /// Returns the current value.
    std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

/// Holds a value that goes up and down.
class gauge {
public:
    /// Sets the value.
    void set(std::int64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
    /// Adds d (may be negative).
    void add(std::int64_t d) noexcept { value_.fetch_add(d, std::memory_order_relaxed); }
    /// Returns the current value.
    std::int64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> value_{0};
};

/// Appends Prometheus text lines for series computed at scrape time. A collector writes its own
/// HELP/TYPE lines (see append_header) and must not reuse a name registered as a counter or gauge.
using collector = std::function<void(std::string& out)>;

/// Returns `value` escaped for use inside a quoted label value (backslash, quote, newline).
std::string escape_label_value(std::string_view value);

/// Returns one label pair `name="value"` with the value escaped.
std::string label(std::string_view name, std::string_view value);

/// Appends the `# HELP` and `# TYPE` lines of one metric family; `type` is "counter", "gauge"
/// or "histogram".
void append_header(std::string& out, std::string_view name, std::string_view help,
                   std::string_view type);

/// Appends one sample line `name{labels} value`; empty labels omit the braces.
void append_sample(std::string& out, std::string_view name, std::string_view labels,
                   std::string_view value);

/// Returns `value / per_unit` as sample text: the integer itself when per_unit is 1, else a
/// decimal with as many places as per_unit has zeros (microseconds as seconds: 6).
std::string scaled_text(std::int64_t value, std::int64_t per_unit);

/// Owns the metrics of one engine instance. Registration happens at startup; references
/// returned stay valid for the registry's lifetime.
class registry {
public:
    /// Registers a counter. `labels` is either empty or a Prometheus label set without braces,
    /// e.g. `path="/v1/bets"`. Series sharing a name share one HELP/TYPE header.
    counter& make_counter(std::string name, std::string help, std::string labels = {});
    /// Registers a gauge, as make_counter. `per_unit` is how many of the gauge's own steps make
    /// one exported unit: a duration kept in microseconds (what the code measures in) and
    /// exported in seconds (Prometheus' base unit) has 1'000'000.
    gauge& make_gauge(std::string name, std::string help, std::string labels = {},
                      std::int64_t per_unit = 1);
    /// Adds a collector called on every render.
    void add_collector(collector c);
    /// Returns every series in the Prometheus text exposition format (version 0.0.4): each
    /// family's HELP/TYPE once, its series together in registration order, then collectors.
    std::string render() const;

private:
    struct series {
        std::string name;
        std::string help;
        std::string labels;
        bool is_counter = false;
        counter* c = nullptr;
        gauge* g = nullptr;
        std::int64_t per_unit = 1;
    };
    mutable std::mutex mutex_;
    std::deque<counter> counters_;
    std::deque<gauge> gauges_;
    std::vector<series> series_;
    std::vector<collector> collectors_;
};

}  // namespace fulltime::metrics

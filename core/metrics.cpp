#include "fulltime/core/metrics.hpp"

#include "fulltime/core/assert.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace fulltime::metrics {

namespace {

// HELP text escapes only backslash and newline (exposition format 0.0.4).
std::string escape_help(std::string_view help) {
    std::string out;
    out.reserve(help.size());
    for (char c : help) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

std::string label(std::string_view name, std::string_view value) {
    std::string out(name);
    out += "=\"";
    out += escape_label_value(value);
    out += '"';
    return out;
}

void append_header(std::string& out, std::string_view name, std::string_view help,
                   std::string_view type) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += escape_help(help);
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

void append_sample(std::string& out, std::string_view name, std::string_view labels,
                   std::string_view value) {
    out += name;
    if (!labels.empty()) {
        out += '{';
        out += labels;
        out += '}';
    }
    out += ' ';
    out += value;
    out += '\n';
}

std::string scaled_text(std::int64_t value, std::int64_t per_unit) {
    FULLTIME_ASSERT(per_unit > 0);
    if (per_unit == 1) {
        return std::to_string(value);
    }
    int places = 0;
    for (std::int64_t p = per_unit; p > 1; p /= 10) {
        ++places;
    }
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%.*f", places,
                  static_cast<double>(value) / static_cast<double>(per_unit));
    return buffer;
}

counter& registry::make_counter(std::string name, std::string help, std::string labels) {
    std::lock_guard lock(mutex_);
    for (const auto& s : series_) {
        // One family has one type, and one label set names one series.
        FULLTIME_ASSERT(s.name != name || s.is_counter);
        FULLTIME_ASSERT(s.name != name || s.labels != labels);
    }
    counter& c = counters_.emplace_back();
    series_.push_back(
        series{std::move(name), std::move(help), std::move(labels), true, &c, nullptr, 1});
    return c;
}

gauge& registry::make_gauge(std::string name, std::string help, std::string labels,
                            std::int64_t per_unit) {
    FULLTIME_ASSERT(per_unit > 0);
    std::lock_guard lock(mutex_);
    for (const auto& s : series_) {
        FULLTIME_ASSERT(s.name != name || !s.is_counter);
        FULLTIME_ASSERT(s.name != name || s.labels != labels);
    }
    gauge& g = gauges_.emplace_back();
    series_.push_back(
        series{std::move(name), std::move(help), std::move(labels), false, nullptr, &g, per_unit});
    return g;
}

void registry::add_collector(collector c) {
    std::lock_guard lock(mutex_);
    collectors_.push_back(std::move(c));
}

std::string registry::render() const {
    std::string out;
    std::vector<collector> collectors;
    {
        std::lock_guard lock(mutex_);
        // Prometheus wants every series of a family contiguous, under one header, even when
        // the family's series were registered at different times.
        std::vector<bool> done(series_.size(), false);
        for (std::size_t i = 0; i < series_.size(); ++i) {
            if (done[i]) {
                continue;
            }
            const series& head = series_[i];
            append_header(out, head.name, head.help, head.is_counter ? "counter" : "gauge");
            for (std::size_t j = i; j < series_.size(); ++j) {
                const series& s = series_[j];
                if (done[j] || s.name != head.name) {
                    continue;
                }
                done[j] = true;
                const std::string value = s.is_counter ? std::to_string(s.c->value())
                                                       : scaled_text(s.g->value(), s.per_unit);
                append_sample(out, s.name, s.labels, value);
            }
        }
        collectors = collectors_;
    }
    // Collectors run outside the lock: they take their own locks (pool stats) and may be slow.
    for (const auto& c : collectors) {
        c(out);
    }
    return out;
}

}  // namespace fulltime::metrics

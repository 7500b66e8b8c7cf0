#include "app/rehearsal/timeline.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

namespace fulltime::app::rehearsal {

namespace {

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace

std::string fixed(double v, int decimals) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

double quantile(std::vector<double>& values, double p) {
    if (values.empty()) {
        return 0;
    }
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<std::size_t>(
        std::ceil(std::clamp(p, 0.0, 1.0) * static_cast<double>(values.size())));
    return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

std::vector<second> per_second(const std::vector<answered>& replies, double duration_s) {
    const auto n = static_cast<std::size_t>(std::max(0.0, std::ceil(duration_s)));
    std::vector<std::vector<double>> buckets(n);
    for (const auto& r : replies) {
        if (r.scheduled_s >= 0 && r.scheduled_s < static_cast<double>(n)) {
            buckets[static_cast<std::size_t>(r.scheduled_s)].push_back(r.latency_ms);
        }
    }
    std::vector<second> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        second s;
        s.at_s = static_cast<double>(i);
        s.count = buckets[i].size();
        if (s.count > 0) {
            s.p50_ms = quantile(buckets[i], 0.5);
            s.p99_ms = quantile(buckets[i], 0.99);
            s.max_ms = buckets[i].back();
        }
        out.push_back(s);
    }
    return out;
}

namespace {

// The backlog's recovery after the burst: when the burst was applied, and the first reading
// from then on under the limit. Later events (a correction, a cancel, a restart) may raise the
// backlog again: they are other events, but the backlog must be under its limit again by the
// end of the run, so a stuck market fails the criterion too.
verdict backlog_verdict(const exit_criteria& c, const run_facts& facts,
                        const std::vector<backlog_reading>& backlog) {
    const double limit_ms = c.backlog_age_s_max * 1000.0;
    std::optional<double> recovered_at;
    if (facts.burst_applied_s) {
        for (const auto& b : backlog) {
            if (b.at_s >= *facts.burst_applied_s && b.age_ms < limit_ms) {
                recovered_at = std::max(b.at_s, *facts.burst_applied_s);
                break;
            }
        }
    }
    const bool over_at_end = !backlog.empty() && backlog.back().age_ms >= limit_ms;
    double worst_later_ms = 0;
    for (const auto& b : backlog) {
        if (recovered_at && b.at_s > *recovered_at) {
            worst_later_ms = std::max(worst_later_ms, b.age_ms);
        }
    }
    verdict v;
    v.name = "backlog_recovered_s";
    v.limit = c.backlog_within_s;
    if (recovered_at && !over_at_end) {
        v.measured = *recovered_at - facts.burst_at_s;
        v.passed = v.measured <= c.backlog_within_s;
        v.detail = "the burst's results were applied " +
                   fixed(*facts.burst_applied_s - facts.burst_at_s, 1) +
                   " s after it was posted, the backlog's age under " +
                   fixed(c.backlog_age_s_max, 1) + " s " + fixed(v.measured, 1) +
                   " s after the burst; later events raised it to " +
                   fixed(worst_later_ms / 1000.0, 1) + " s at most, and it was under " +
                   fixed(c.backlog_age_s_max, 1) + " s at the end";
    } else {
        v.measured = facts.duration_s - facts.burst_at_s;
        v.passed = false;
        v.detail = !facts.burst_applied_s
                       ? std::string(
                             "the burst's results were not all applied by the end "
                             "of the run")
                       : "the settlement backlog's age was not back under " +
                             fixed(c.backlog_age_s_max, 1) + " s " +
                             (recovered_at ? "at the end of the run" : "after the burst");
    }
    return v;
}

// The placement p99 over the requests scheduled while the burst settled.
verdict p99_verdict(const exit_criteria& c, const run_facts& facts,
                    const std::vector<answered>& replies) {
    const double end_s = facts.burst_applied_s
                             ? std::max(*facts.burst_applied_s, facts.burst_at_s + 1.0)
                             : facts.duration_s;
    std::vector<double> during;
    for (const auto& r : replies) {
        if (r.scheduled_s >= facts.burst_at_s && r.scheduled_s < end_s) {
            during.push_back(r.latency_ms);
        }
    }
    verdict v;
    v.name = "placement_p99_ms";
    v.limit = c.placement_p99_ms_max;
    v.measured = quantile(during, 0.99);
    v.passed = !during.empty() && v.measured <= c.placement_p99_ms_max;
    v.detail = std::to_string(during.size()) + " placements scheduled while the burst settled (" +
               fixed(facts.burst_at_s, 1) + " s to " + fixed(end_s, 1) +
               " s), latency from the scheduled time to the final reply";
    return v;
}

}  // namespace

std::vector<verdict> judge(const exit_criteria& c, const run_facts& facts,
                           const std::vector<answered>& replies,
                           const std::vector<backlog_reading>& backlog) {
    std::vector<verdict> out;
    out.push_back(backlog_verdict(c, facts, backlog));
    out.push_back(p99_verdict(c, facts, replies));
    const auto zero = [&out](const char* name, std::int64_t n, std::string detail) {
        verdict v;
        v.name = name;
        v.measured = static_cast<double>(n);
        v.limit = 0;
        v.passed = n == 0;
        v.detail = std::move(detail);
        out.push_back(std::move(v));
    };
    zero("invariant_failures", facts.invariant_failures,
         facts.invariant_failures < 0 ? "fulltime audit could not run"
                                      : "money invariants broken (fulltime audit)");
    if (facts.invariant_failures < 0) {
        out.back().passed = false;
    }
    zero("lost_acknowledgements", facts.lost_acknowledgements,
         "requests never answered, or answered placed with no such bet stored");
    zero("doubled_acknowledgements", facts.doubled_acknowledgements,
         "keys answered with two different bets, or stored twice");
    zero("unsettled_bets", facts.unsettled_bets,
         "bets of resulted markets left without a settlement in force");
    return out;
}

namespace {

/// Holds the plot's geometry and scales: time across, latency on a log scale from 0.1 ms to the
/// next decade above the worst p99 on the left, the backlog's age on the right.
struct plot_frame {
    static constexpr double width = 960;
    static constexpr double height = 440;
    static constexpr double left = 64;
    static constexpr double right = 64;
    static constexpr double top = 56;
    static constexpr double bottom = 48;
    static constexpr double plot_w = width - left - right;
    static constexpr double plot_h = height - top - bottom;
    static constexpr double lo = -1;  // log10(0.1 ms)
    double span = 1;
    double hi = 0;
    double age_max_s = 1;

    double x_of(double t) const { return left + plot_w * std::clamp(t / span, 0.0, 1.0); }
    double y_of(double ms) const {
        const double l = std::log10(std::max(ms, 0.1));
        return top + plot_h * (1 - (l - lo) / (hi - lo));
    }
    double y_age(double ms) const { return top + plot_h * (1 - ms / 1000.0 / age_max_s); }
};

plot_frame frame_of(const std::vector<second>& seconds, const std::vector<backlog_reading>& backlog,
                    double duration_s) {
    plot_frame f;
    f.span = std::max(duration_s, 1.0);
    double worst = 1;
    for (const auto& s : seconds) {
        worst = std::max(worst, s.p99_ms);
    }
    f.hi = std::ceil(std::log10(worst) + 1e-9);
    double age_max_s = 1;
    for (const auto& b : backlog) {
        age_max_s = std::max(age_max_s, b.age_ms / 1000.0);
    }
    f.age_max_s = std::ceil(age_max_s);
    return f;
}

// The document's start, the title, both axes with their grid and labels, and the plot's box.
void draw_axes(std::ostream& o, const plot_frame& f, const std::string& title) {
    o << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << f.width << R"(" height=")"
      << f.height << R"(" font-family="sans-serif" font-size="12">)" << '\n';
    o << R"(<rect width="100%" height="100%" fill="white"/>)" << '\n';
    o << R"(<text x=")" << f.left << R"(" y="22" font-size="15">)" << escape(title) << "</text>\n";
    // Axes and the latency grid, one line per decade.
    for (double d = f.lo; d <= f.hi; d += 1) {
        const double y = f.y_of(std::pow(10.0, d));
        o << R"(<line x1=")" << f.left << R"(" x2=")" << f.left + f.plot_w << R"(" y1=")"
          << fixed(y, 1) << R"(" y2=")" << fixed(y, 1) << R"(" stroke="#e4e4e4"/>)" << '\n';
        o << R"(<text x=")" << f.left - 6 << R"(" y=")" << fixed(y + 4, 1)
          << R"(" text-anchor="end">)" << (d < 0 ? "0.1" : fixed(std::pow(10.0, d), 0))
          << "</text>\n";
    }
    o << R"svg(<text x="14" y=")svg" << f.top + f.plot_h / 2
      << R"svg(" transform="rotate(-90 14 )svg" << f.top + f.plot_h / 2
      << R"svg()" text-anchor="middle">placement latency, ms (log)</text>)svg" << '\n';
    o << R"svg(<text x=")svg" << f.width - 14 << R"svg(" y=")svg" << f.top + f.plot_h / 2
      << R"svg(" transform="rotate(90 )svg" << f.width - 14 << ' ' << f.top + f.plot_h / 2
      << R"svg()" text-anchor="middle" fill="#2a7d2a">settlement backlog age, s</text>)svg" << '\n';
    for (int k = 0; k <= 4; ++k) {
        const double a = f.age_max_s * k / 4;
        o << R"(<text x=")" << f.left + f.plot_w + 6 << R"(" y=")"
          << fixed(f.y_age(a * 1000) + 4, 1) << R"(" fill="#2a7d2a">)"
          << fixed(a, f.age_max_s < 4 ? 1 : 0) << "</text>\n";
    }
    const int step = f.span > 600 ? 120 : f.span > 120 ? 30 : f.span > 30 ? 10 : 5;
    for (int t = 0; t <= static_cast<int>(f.span); t += step) {
        const double x = f.x_of(t);
        o << R"(<text x=")" << fixed(x, 1) << R"(" y=")" << f.top + f.plot_h + 18
          << R"(" text-anchor="middle">)" << t << "</text>\n";
    }
    o << R"(<text x=")" << f.left + f.plot_w / 2 << R"(" y=")" << f.height - 8
      << R"(" text-anchor="middle">seconds (placements by their scheduled time)</text>)" << '\n';
    o << R"(<rect x=")" << f.left << R"(" y=")" << f.top << R"(" width=")" << f.plot_w
      << R"(" height=")" << f.plot_h << R"(" fill="none" stroke="#888"/>)" << '\n';
}

void draw_marks(std::ostream& o, const plot_frame& f, const std::vector<mark>& marks) {
    // Marks: the burst in red, faults in grey, each labelled.
    int row = 0;
    for (const auto& m : marks) {
        const double x = f.x_of(m.at_s);
        const bool burst = m.label == "burst";
        o << R"(<line x1=")" << fixed(x, 1) << R"(" x2=")" << fixed(x, 1) << R"(" y1=")" << f.top
          << R"(" y2=")" << f.top + f.plot_h << R"(" stroke=")" << (burst ? "#c0392b" : "#777")
          << R"(" stroke-dasharray=")" << (burst ? "none" : "4 3") << R"("><title>)"
          << escape(m.label + ": " + m.detail) << "</title></line>\n";
        o << R"(<text x=")" << fixed(x + 3, 1) << R"(" y=")" << f.top + 12 + 13 * (row % 6)
          << R"(" font-size="10" fill=")" << (burst ? "#c0392b" : "#555") << R"(">)"
          << escape(m.label) << "</text>\n";
        ++row;
    }
}

void draw_series(std::ostream& o, const plot_frame& f, const std::vector<second>& seconds,
                 const std::vector<backlog_reading>& backlog) {
    // Series: p99 and p50 per second; the backlog's age as a step line.
    const auto polyline = [&](const char* color, double width_px, auto value) {
        std::string points;
        for (const auto& s : seconds) {
            if (s.count == 0) {
                continue;
            }
            points += fixed(f.x_of(s.at_s + 0.5), 1) + "," + fixed(f.y_of(value(s)), 1) + " ";
        }
        o << R"(<polyline fill="none" stroke=")" << color << R"(" stroke-width=")" << width_px
          << R"(" points=")" << points << R"("/>)" << '\n';
    };
    polyline("#1f5fa8", 2, [](const second& s) { return s.p99_ms; });
    polyline("#8fb3de", 1.5, [](const second& s) { return s.p50_ms; });
    {
        std::string points;
        for (const auto& b : backlog) {
            points += fixed(f.x_of(b.at_s), 1) + "," + fixed(f.y_age(b.age_ms), 1) + " ";
        }
        o << R"(<polyline fill="none" stroke="#2a7d2a" stroke-width="1.5" points=")" << points
          << R"("/>)" << '\n';
    }
}

void draw_legend(std::ostream& o, const plot_frame& f) {
    // Legend.
    const double ly = 38;
    const double lx = f.left;
    o << R"(<g font-size="11"><line x1=")" << lx << R"(" x2=")" << lx + 18 << R"(" y1=")" << ly
      << R"(" y2=")" << ly << R"(" stroke="#1f5fa8" stroke-width="2"/><text x=")" << lx + 22
      << R"(" y=")" << ly + 4 << R"(">p99 per second</text><line x1=")" << lx + 130 << R"(" x2=")"
      << lx + 148 << R"(" y1=")" << ly << R"(" y2=")" << ly
      << R"(" stroke="#8fb3de" stroke-width="1.5"/><text x=")" << lx + 152 << R"(" y=")" << ly + 4
      << R"(">p50</text><line x1=")" << lx + 200 << R"(" x2=")" << lx + 218 << R"(" y1=")" << ly
      << R"(" y2=")" << ly << R"(" stroke="#2a7d2a" stroke-width="1.5"/><text x=")" << lx + 222
      << R"(" y=")" << ly + 4 << R"(">backlog age</text></g>)" << '\n';
}

}  // namespace

std::string render_svg(const std::string& title, const std::vector<second>& seconds,
                       const std::vector<backlog_reading>& backlog, const std::vector<mark>& marks,
                       double duration_s) {
    const plot_frame f = frame_of(seconds, backlog, duration_s);
    std::ostringstream o;
    draw_axes(o, f, title);
    draw_marks(o, f, marks);
    draw_series(o, f, seconds, backlog);
    draw_legend(o, f);
    o << "</svg>\n";
    return o.str();
}

nlohmann::json to_json(const std::vector<verdict>& verdicts) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : verdicts) {
        out.push_back({{"name", v.name},
                       {"measured", v.measured},
                       {"limit", v.limit},
                       {"passed", v.passed},
                       {"detail", v.detail}});
    }
    return out;
}

}  // namespace fulltime::app::rehearsal

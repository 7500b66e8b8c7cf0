#include "fulltime/core/metrics.hpp"

#include "fulltime/core/latency_histogram.hpp"
#include "fulltime/core/process_metrics.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <string>

using namespace fulltime::metrics;

namespace {

std::size_t count(const std::string& haystack, const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = haystack.find(needle); pos != std::string::npos;
         pos = haystack.find(needle, pos + 1)) {
        ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("a family renders HELP and TYPE once and its series together") {
    registry r;
    auto& a = r.make_counter("ft_requests_total", "Requests.", label("path", "/a"));
    r.make_gauge("ft_open", "Open things.");
    auto& b = r.make_counter("ft_requests_total", "Requests.", label("path", "/b"));
    a.inc(3);
    b.inc();
    const std::string out = r.render();
    CHECK(count(out, "# HELP ft_requests_total Requests.\n") == 1);
    CHECK(count(out, "# TYPE ft_requests_total counter\n") == 1);
    CHECK(count(out, "# TYPE ft_open gauge\n") == 1);
    const std::string family =
        "# HELP ft_requests_total Requests.\n"
        "# TYPE ft_requests_total counter\n"
        "ft_requests_total{path=\"/a\"} 3\n"
        "ft_requests_total{path=\"/b\"} 1\n";
    CHECK(out.find(family) != std::string::npos);
    CHECK(out.find("ft_open 0\n") != std::string::npos);
}

TEST_CASE("gauges go up and down, including below zero") {
    registry r;
    auto& g = r.make_gauge("ft_g", "A gauge.");
    g.add(2);
    g.add(-5);
    CHECK(r.render().find("ft_g -3\n") != std::string::npos);
}

TEST_CASE("label values and help text are escaped") {
    CHECK(escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
    CHECK(label("route", "x\"y") == "route=\"x\\\"y\"");
    registry r;
    r.make_counter("ft_c", "Line one\nback\\slash", label("k", "v\n"));
    const std::string out = r.render();
    CHECK(out.find("# HELP ft_c Line one\\nback\\\\slash\n") != std::string::npos);
    CHECK(out.find("ft_c{k=\"v\\n\"} 0\n") != std::string::npos);
}

TEST_CASE("collectors append after registered series") {
    registry r;
    r.make_counter("ft_first_total", "First.");
    r.add_collector([](std::string& out) {
        append_header(out, "ft_pool_in_use", "In use.", "gauge");
        append_sample(out, "ft_pool_in_use", label("pool", "placement"), "2");
    });
    const std::string out = r.render();
    const auto first = out.find("ft_first_total 0\n");
    const auto pool = out.find("ft_pool_in_use{pool=\"placement\"} 2\n");
    REQUIRE(first != std::string::npos);
    REQUIRE(pool != std::string::npos);
    CHECK(first < pool);
    CHECK(out.find("# TYPE ft_pool_in_use gauge\n") != std::string::npos);
}

TEST_CASE("a gauge kept in milli- or microseconds is exported in the base unit") {
    registry r;
    r.make_gauge("ft_age_seconds", "Age.", {}, 1'000).set(1'500);
    r.make_gauge("ft_p99_seconds", "P99.", {}, 1'000'000).set(-1'000'000);
    r.make_gauge("ft_count", "Count.").set(7);
    const std::string out = r.render();
    CHECK(out.find("ft_age_seconds 1.500\n") != std::string::npos);
    CHECK(out.find("ft_p99_seconds -1.000000\n") != std::string::npos);
    CHECK(out.find("ft_count 7\n") != std::string::npos);
    CHECK(scaled_text(250, 1'000'000) == "0.000250");
}

TEST_CASE("a latency histogram renders buckets, sum and count in seconds, and no quantiles") {
    latency_histogram h;
    h.record(std::chrono::microseconds(40));
    h.record(std::chrono::milliseconds(3));
    std::string out;
    h.render(out, "ft_latency_seconds", "Latency.");
    CHECK(out.find("# TYPE ft_latency_seconds histogram\n") != std::string::npos);
    CHECK(out.find("ft_latency_seconds_bucket{le=\"0.000050\"} 1\n") != std::string::npos);
    CHECK(out.find("ft_latency_seconds_bucket{le=\"0.005000\"} 2\n") != std::string::npos);
    CHECK(out.find("ft_latency_seconds_bucket{le=\"+Inf\"} 2\n") != std::string::npos);
    CHECK(out.find("ft_latency_seconds_sum 0.003040\n") != std::string::npos);
    CHECK(out.find("ft_latency_seconds_count 2\n") != std::string::npos);
    CHECK(out.find("_p50") == std::string::npos);
    CHECK(out.find("_p99") == std::string::npos);
}

TEST_CASE("the build and process series are there, in base units") {
    registry r;
    add_process_metrics(r, "1.2.3");
    const std::string out = r.render();
    CHECK(out.find("fulltime_build_info{version=\"1.2.3\"} 1\n") != std::string::npos);
    for (const char* family :
         {"# TYPE process_start_time_seconds gauge\n", "# TYPE process_cpu_seconds_total counter\n",
          "# TYPE process_resident_memory_bytes gauge\n", "# TYPE process_open_fds gauge\n"}) {
        CHECK_MESSAGE(out.find(family) != std::string::npos, family);
    }
    // Started in the past, and not before this century.
    const auto at = out.find("\nprocess_start_time_seconds ");
    REQUIRE(at != std::string::npos);
    const double started = std::stod(out.substr(at + 28));
    CHECK(started > 1e9);
    CHECK(started <= static_cast<double>(std::time(nullptr)) + 1);
}

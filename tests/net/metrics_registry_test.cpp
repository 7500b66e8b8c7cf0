#include "fulltime/core/metrics.hpp"

#include <doctest/doctest.h>

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

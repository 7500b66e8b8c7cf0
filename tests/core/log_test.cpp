// Log records (core/log.cpp): the text and JSON shapes, fields, escaping, and the journald
// priority prefix.

#include "fulltime/core/log.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace flog = fulltime::log;

namespace {
constexpr std::string_view stamp = "2026-12-02T07:00:00.123Z";
}

TEST_CASE("log: a text record is the stamp, the level, the message and key=value fields") {
    CHECK(flog::render(flog::format::text, false, stamp, flog::level::info, "listening", {}) ==
          "2026-12-02T07:00:00.123Z info listening\n");
    CHECK(flog::render(flog::format::text, false, stamp, flog::level::warn, "operator: deposit",
                       {{"operator", "alice"}, {"account", std::int64_t{42}}, {"key", "dep 1"}}) ==
          "2026-12-02T07:00:00.123Z warn operator: deposit operator=alice account=42 "
          "key=\"dep 1\"\n");
    // A value that could be misread (empty, '=', a quote) is quoted.
    CHECK(flog::render(flog::format::text, false, stamp, flog::level::error, "m",
                       {{"a", ""}, {"b", "x=y"}, {"c", "say \"hi\""}}) ==
          "2026-12-02T07:00:00.123Z error m a=\"\" b=\"x=y\" c=\"say \\\"hi\\\"\"\n");
}

TEST_CASE("log: a JSON record is one object per line, fields typed") {
    const std::string line =
        flog::render(flog::format::json, false, stamp, flog::level::info, "feed: \"result\"\n",
                     {{"producer", "feed-1"},
                      {"market", std::int64_t{100}},
                      {"event_key", "ev\t1"},
                      {"count", std::uint64_t{7}}});
    REQUIRE(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);
    const auto j = nlohmann::json::parse(line);
    CHECK(j["ts"] == stamp);
    CHECK(j["level"] == "info");
    CHECK(j["msg"] == "feed: \"result\"\n");
    CHECK(j["producer"] == "feed-1");
    CHECK(j["market"] == 100);
    CHECK(j["event_key"] == "ev\t1");
    CHECK(j["count"] == 7);
    // Control characters are escaped, so a record never spans lines.
    const std::string odd = flog::render(flog::format::json, false, stamp, flog::level::debug,
                                         std::string("a\x01") + "b", {});
    CHECK(nlohmann::json::parse(odd)["msg"] == std::string("a\x01") + "b");
}

TEST_CASE("log: under journald each line starts with its syslog priority") {
    CHECK(flog::render(flog::format::text, true, stamp, flog::level::error, "x", {})
              .rfind("<3>", 0) == 0);
    CHECK(
        flog::render(flog::format::text, true, stamp, flog::level::warn, "x", {}).rfind("<4>", 0) ==
        0);
    CHECK(flog::render(flog::format::json, true, stamp, flog::level::info, "x", {})
              .rfind("<6>{", 0) == 0);
    CHECK(flog::render(flog::format::json, true, stamp, flog::level::debug, "x", {})
              .rfind("<7>{", 0) == 0);
}

TEST_CASE("log: formats and levels parse, anything else falls back") {
    CHECK(flog::parse_format("json") == flog::format::json);
    CHECK(flog::parse_format("text") == flog::format::text);
    CHECK(flog::parse_format("yaml") == flog::format::text);
    CHECK(flog::parse_level("warn") == flog::level::warn);
}

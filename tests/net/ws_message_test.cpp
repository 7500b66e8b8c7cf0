#include "net/ws_message.hpp"

#include <doctest/doctest.h>

#include <string>

using fulltime::net::endpoint_handlers;
using fulltime::net::detail::inbound_message;
using fulltime::net::detail::parse_message;
using nlohmann::json;

namespace {

endpoint_handlers known_types() {
    endpoint_handlers h;
    // Only the keys matter to validation; the handler is never called here.
    h["place"] = nullptr;
    h["balance"] = nullptr;
    return h;
}

json error_of(std::string_view text) {
    auto r = parse_message(text, known_types());
    REQUIRE(std::holds_alternative<json>(r));
    return std::get<json>(r);
}

}  // namespace

TEST_CASE("a message that is not JSON is invalid_json with a null id") {
    for (std::string_view text : {"", "{", "not json", "{\"type\":\"place\",}", "\xff\xfe"}) {
        const json e = error_of(text);
        CHECK(e["type"] == "error");
        CHECK(e["code"] == "invalid_json");
        CHECK(e["id"].is_null());
        CHECK(e["message"].is_string());
    }
}

TEST_CASE("JSON that is not an object is invalid_request with a null id") {
    for (std::string_view text : {"[]", "42", "\"place\"", "null", "[{\"type\":\"place\"}]"}) {
        const json e = error_of(text);
        CHECK(e["code"] == "invalid_request");
        CHECK(e["id"].is_null());
    }
}

TEST_CASE("the id is echoed exactly as received") {
    SUBCASE("string id, unknown type") {
        const json e = error_of(R"({"type":"nope","id":"c1"})");
        CHECK(e["code"] == "invalid_request");
        CHECK(e["id"] == "c1");
        CHECK(e["message"].get<std::string>().find("\"nope\"") != std::string::npos);
    }
    SUBCASE("integer id stays an integer") {
        const json e = error_of(R"({"type":"nope","id":17})");
        CHECK(e["id"].is_number_integer());
        CHECK(e["id"] == 17);
    }
    SUBCASE("numeric-looking string id stays a string") {
        const json e = error_of(R"({"type":"nope","id":"17"})");
        CHECK(e["id"].is_string());
    }
}

TEST_CASE("an id that is neither a string nor an integer is invalid_request, echoed") {
    for (std::string_view text :
         {R"({"type":"place","id":1.5})", R"({"type":"place","id":true})",
          R"({"type":"place","id":{"a":1}})", R"({"type":"place","id":[1]})"}) {
        const json e = error_of(text);
        CHECK(e["code"] == "invalid_request");
        CHECK(e["id"] == json::parse(text)["id"]);
    }
}

TEST_CASE("a missing id or a missing or non-string type is invalid_request") {
    CHECK(error_of(R"({"type":"place"})")["code"] == "invalid_request");
    CHECK(error_of(R"({"type":"place","id":null})")["id"].is_null());
    json e = error_of(R"({"id":"c2"})");
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"] == "c2");
    e = error_of(R"({"type":7,"id":"c3"})");
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"] == "c3");
}

TEST_CASE("an over-long id is refused") {
    const std::string id(200, 'x');
    const json e = error_of(R"({"type":"place","id":")" + id + "\"}");
    CHECK(e["code"] == "invalid_request");
}

TEST_CASE("deeply nested input is refused before parsing") {
    std::string text = R"({"type":"place","id":"c","x":)";
    text += std::string(10000, '[');
    text += std::string(10000, ']');
    text += "}";
    const json e = error_of(text);
    CHECK(e["code"] == "invalid_request");
    // Brackets inside strings do not count as nesting.
    auto ok = parse_message(R"({"type":"place","id":"c","s":")" + std::string(100, '[') + "\"}",
                            known_types());
    CHECK(std::holds_alternative<inbound_message>(ok));
}

TEST_CASE("a NUL byte or anything after the document is invalid_json") {
    using namespace std::string_literals;
    for (const std::string& text :
         {R"({"type":"place","id":"c1"})"s + "\0garbage"s, R"({"type":"place","id":"c1"}x)"s,
          R"({"type":"place","id":"c1"} {"type":"place","id":"c2"})"s}) {
        const json e = error_of(text);
        CHECK(e["code"] == "invalid_json");
        CHECK(e["id"].is_null());
    }
}

TEST_CASE("a duplicate key or a NUL in a string is invalid_request, echoing the id read first") {
    json e = error_of(R"({"type":"place","id":"c1","stake":"0.10","stake":"5000.00"})");
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"] == "c1");
    CHECK(e["message"] == R"(the key "stake" appears twice in one object)");
    e = error_of(R"({"type":"place","id":7,"idempotency_key":"k\u0000"})");
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"] == 7);
    CHECK(e["message"] == R"("idempotency_key" must not contain a NUL character)");
    // The id itself repeated: the first one is the one echoed.
    e = error_of(R"({"id":"a","type":"place","id":"b"})");
    CHECK(e["id"] == "a");
    // Before the id was read there is none to echo.
    e = error_of(R"({"stake":"1","stake":"2","type":"place","id":"c1"})");
    CHECK(e["id"].is_null());
}

TEST_CASE("a well-formed message of a known type is returned whole") {
    auto r = parse_message(R"({"type":"place","id":"c1","stake":"10.00"})", known_types());
    REQUIRE(std::holds_alternative<inbound_message>(r));
    const auto& m = std::get<inbound_message>(r);
    CHECK(m.type == "place");
    CHECK(m.id == "c1");
    CHECK(m.body["stake"] == "10.00");
}

TEST_CASE("replies render as compact JSON even with invalid UTF-8 inside") {
    using fulltime::net::detail::busy_reply;
    using fulltime::net::detail::to_wire;
    CHECK(
        to_wire(busy_reply("c9", "too many requests in flight")) ==
        R"({"code":"busy","id":"c9","message":"too many requests in flight","retry_after_ms":100,"type":"rejected"})");
    CHECK_NOTHROW(to_wire(json{{"id", std::string("\xff")}}));
}

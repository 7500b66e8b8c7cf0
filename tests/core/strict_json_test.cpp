#include "fulltime/core/strict_json.hpp"
#include "support/text.hpp"

#include "fulltime/limits.hpp"

#include <doctest/doctest.h>

#include <string>

using fulltime::json_refusal;
using fulltime::parse_strict_json;
using nlohmann::json;
namespace limits = fulltime::limits;

using fulltime::test::contains;

namespace {

using namespace std::string_literals;

json parsed(std::string_view text) {
    auto r = parse_strict_json(text, "message");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    return std::move(*r);
}

json_refusal refusal(std::string_view text, std::string_view subject = "message") {
    auto r = parse_strict_json(text, subject);
    REQUIRE_MESSAGE(!r.has_value(), "expected a refusal of: " << text);
    return r.error();
}

// `depth` arrays nested in each other around one number.
std::string nested(std::size_t depth) {
    return std::string(depth, '[') + "1" + std::string(depth, ']');
}

}  // namespace

TEST_CASE("strict JSON reads what nlohmann reads, whole") {
    const std::string text =
        R"({"type":"place","id":7,"n":-3,"u":18446744073709551615,"f":1.5,"t":true,)"
        R"("z":null,"s":"caf\u00e9 \u20ac","a":[1,[2,{"k":"v"}],{}],"o":{"k":[]}} )"
        "\n\t";
    CHECK(parsed(text) == json::parse(text));
    CHECK(parsed("42") == 42);
    CHECK(parsed(R"("text")") == "text");
    CHECK(parsed("[]") == json::array());
    // Equal keys in different objects are different keys.
    CHECK(parsed(R"({"a":{"k":1},"b":{"k":2},"c":[{"k":3},{"k":4}]})")["c"][1]["k"] == 4);
}

TEST_CASE("a NUL byte anywhere is invalid_json, never the end of the input") {
    // nlohmann's lexer reads '\0' as the end of the input: this parsed as {"a":1} before.
    const auto r = refusal("{\"a\":1}\0garbage"s);
    CHECK(r.code == "invalid_json");
    CHECK(r.message == "message is not valid JSON: a NUL byte at offset 7");
    CHECK(r.partial.is_null());
    CHECK(refusal("{\"a\":1}\0"s).code == "invalid_json");
    CHECK(refusal("{\"a\":\"x\0y\"}"s).code == "invalid_json");
    CHECK(refusal("\0{\"a\":1}"s).code == "invalid_json");
    CHECK(refusal("{\"a\":1\0}"s).code == "invalid_json");
}

TEST_CASE("anything but whitespace after the document is invalid_json") {
    for (std::string_view text : {R"({"a":1}garbage)", R"({"a":1} {"b":2})", R"({"a":1}])",
                                  R"({"a":1},)", "[1]x", "1 2", R"("a""b")"}) {
        const auto r = refusal(text);
        CHECK(r.code == "invalid_json");
        CHECK_MESSAGE(
            r.message == "message is not valid JSON: more follows the end of the document", text);
    }
}

TEST_CASE("text that is not JSON is invalid_json in the subject's words") {
    for (std::string_view text :
         {"", " ", "{", "not json", R"({"type":"place",})", "\xff\xfe", "{\"a\":\"\xff\"}",
          R"({"a":"\ud800"})", "[1,]", "{'a':1}", "/* c */ {}"}) {
        const auto r = refusal(text, "the body");
        CHECK(r.code == "invalid_json");
        CHECK_MESSAGE(r.message == "the body is not valid JSON", text);
    }
}

TEST_CASE("a key twice in one object is invalid_request naming the key, at any depth") {
    // The last one no longer wins: this read 5000.00.
    auto r = refusal(R"({"type":"place","id":"c1","stake":"0.10","stake":"5000.00"})");
    CHECK(r.code == "invalid_request");
    CHECK(r.message == R"(the key "stake" appears twice in one object)");
    // What was read up to the refusal, so that a reply can echo the id; the first value kept.
    CHECK(r.partial["id"] == "c1");
    CHECK(r.partial["stake"] == "0.10");

    r = refusal(R"({"a":{"b":1,"c":2,"b":3}})");
    CHECK(r.code == "invalid_request");
    CHECK(contains(r.message, "\"b\""));
    r = refusal(R"({"selections":[{"selection_id":1},{"selection_id":2,"selection_id":3}]})");
    CHECK(contains(r.message, "\"selection_id\""));
    r = refusal(R"([{"k":1,"k":1}])");
    CHECK(r.code == "invalid_request");
    // Escapes are decoded before keys compare: "\u0061" is "a".
    CHECK(refusal(R"({"a":1,"\u0061":2})").code == "invalid_request");
    // A long key is quoted cut short.
    const std::string key(300, 'k');
    r = refusal(R"({")" + key + R"(":1,")" + key + R"(":2})");
    CHECK(r.message.size() < 150);
}

TEST_CASE("a NUL character in a string is invalid_request naming its key") {
    auto r = refusal(R"({"type":"place","id":"c1","idempotency_key":"k\u0000"})");
    CHECK(r.code == "invalid_request");
    CHECK(r.message == R"("idempotency_key" must not contain a NUL character)");
    CHECK(r.partial["id"] == "c1");
    // In an array, the key the array is the value of; after a nested object closed too.
    CHECK(refusal(R"({"names":["a","\u0000"]})").message ==
          R"("names" must not contain a NUL character)");
    CHECK(refusal(R"({"sel":[{"name":"a"},"\u0000"]})").message ==
          R"("sel" must not contain a NUL character)");
    CHECK(refusal(R"({"sel":[{"name":"\u0000"}]})").message ==
          R"("name" must not contain a NUL character)");
    r = refusal(R"(["\u0000"])");
    CHECK(r.code == "invalid_request");
    CHECK(r.message == "message has a string with a NUL character");
    CHECK(refusal(R"("a\u0000")").code == "invalid_request");
    // In a key.
    r = refusal(R"({"ab\u0000cd":1})");
    CHECK(r.code == "invalid_request");
    CHECK(r.message == R"(a key must not contain a NUL character: "ab")");
    // Other escaped control characters are text like any other.
    CHECK(parsed(R"({"a":"\u0001\t"})")["a"] == "\x01\t");
}

TEST_CASE("nesting is bounded before anything walks the document") {
    CHECK(parsed(nested(limits::json_depth_max)).is_array());
    auto r = refusal(nested(limits::json_depth_max + 1));
    CHECK(r.code == "invalid_request");
    CHECK(contains(r.message, "message nests too deeply"));
    // Far deeper input, even unterminated, is refused at the bound without recursion.
    CHECK(refusal(std::string(1'000'000, '[')).code == "invalid_request");
    std::string objects;
    for (std::size_t i = 0; i <= limits::json_depth_max; ++i) {
        objects += R"({"a":)";
    }
    CHECK(refusal(objects).code == "invalid_request");
}

TEST_CASE("a large document of distinct keys parses in one pass") {
    std::string text = "{";
    constexpr int keys = 100'000;
    for (int i = 0; i < keys; ++i) {
        text += (i == 0 ? "\"k" : ",\"k") + std::to_string(i) + "\":" + std::to_string(i);
    }
    text += "}";
    const json j = parsed(text);
    CHECK(j.size() == keys);
    CHECK(j["k99999"] == 99999);
}

/// Fuzzes parse_strict_json (every client JSON document) and client_text::check.
///
/// Invariants beyond "no crash, no sanitizer report": a parsed document has no NUL in any string
/// or key and is no deeper than limits::json_depth_max; its dump() parses back, strictly, to an
/// equal document.

#include "fulltime/core/strict_json.hpp"
#include "fulltime/core/client_text.hpp"
#include "fulltime/limits.hpp"

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

namespace limits = fulltime::limits;

/// Checks a parsed document's strings and depth.
void check_document(const nlohmann::json& j, std::size_t depth) {
    if (j.is_string()) {
        FUZZ_CHECK(j.get_ref<const std::string&>().find('\0') == std::string::npos);
        return;
    }
    if (!j.is_structured()) {
        return;
    }
    FUZZ_CHECK(depth < limits::json_depth_max);
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (j.is_object()) {
            FUZZ_CHECK(it.key().find('\0') == std::string::npos);
        }
        check_document(*it, depth + 1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    // The text rules on the raw bytes, at a generous and at a tight bound.
    const auto fault = fulltime::client_text::check(text, limits::http_body_bytes_max);
    (void)fulltime::client_text::describe(fault, limits::http_body_bytes_max);
    const auto tight = fulltime::client_text::check(text, 16);
    (void)fulltime::client_text::describe(tight, 16);
    if (size <= 16) {
        FUZZ_CHECK(tight == fault);
    }
    (void)fulltime::client_text::quoted(text);

    const auto parsed = fulltime::parse_strict_json(text, "message");
    if (!parsed) {
        const auto& refusal = parsed.error();
        FUZZ_CHECK(refusal.code == "invalid_json" || refusal.code == "invalid_request");
        FUZZ_CHECK(!refusal.message.empty());
        return 0;
    }
    check_document(*parsed, 0);
    const std::string dumped = parsed->dump();
    const auto again = fulltime::parse_strict_json(dumped, "message");
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(*again == *parsed);
    return 0;
}

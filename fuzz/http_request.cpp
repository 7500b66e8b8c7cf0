/// Fuzzes the HTTP request parser the gateway runs (net/http_session.cpp): Beast's
/// request_parser<string_body> with the same limits (limits::http_header_bytes_max,
/// limits::http_body_bytes_max), fed the input in one piece and then again split at a point
/// the first byte picks, as bytes arrive from a socket.
///
/// Invariant: a complete request parsed from the split input equals the one from the whole.

#include "fulltime/limits.hpp"

#include "fuzz_check.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace {

namespace http = boost::beast::http;
namespace limits = fulltime::limits;

struct outcome {
    bool done = false;
    std::string method;
    std::string target;
    std::string body;
};

/// Feeds `parts` to a fresh parser, as consecutive reads; returns what it made of them.
outcome parse(std::string_view first, std::string_view second) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits::http_header_bytes_max));
    parser.body_limit(limits::http_body_bytes_max);
    parser.eager(true);
    // Beast's parser consumes what it can; the rest stays buffered for the next read.
    std::string pending;
    outcome out;
    for (const std::string_view part : {first, second}) {
        pending.append(part);
        // Never an empty buffer: Beast 1.81 then computes nullptr + 2 in parse_fields (UBSan's
        // "applying non-zero offset 2 to null pointer"), and its own read loop only calls put()
        // after a read added bytes.
        while (!pending.empty()) {
            boost::system::error_code ec;
            const std::size_t used = parser.put(boost::asio::buffer(pending), ec);
            pending.erase(0, used);
            if (ec == http::error::need_more) {
                break;
            }
            if (ec) {
                return out;
            }
            if (parser.is_done()) {
                const auto& request = parser.get();
                out.done = true;
                out.method = std::string(request.method_string());
                out.target = std::string(request.target());
                out.body = request.body();
                return out;
            }
            if (used == 0) {
                break;
            }
        }
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t split = text.empty() ? 0 : data[0] % (text.size() + 1);

    const outcome whole = parse(text, {});
    const outcome pieces = parse(text.substr(0, split), text.substr(split));
    if (whole.done && pieces.done) {
        FUZZ_CHECK(whole.method == pieces.method);
        FUZZ_CHECK(whole.target == pieces.target);
        FUZZ_CHECK(whole.body == pieces.body);
    }
    if (whole.done) {
        FUZZ_CHECK(whole.body.size() <= limits::http_body_bytes_max);
    }
    return 0;
}

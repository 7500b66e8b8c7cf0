/// Fuzzes the HTTP request parser the gateway runs (net/http_session.cpp): Beast's
/// request_parser<string_body> with the same limits (limits::http_header_bytes_max,
/// limits::http_body_bytes_max), fed the input in one piece and then again split at a point
/// the first byte picks, as bytes arrive from a socket.
///
/// The gateway's strict framing (net/http_framing) runs on the same input as the gateway runs
/// it: the raw header block is checked for folded lines, then the parsed header for its
/// Transfer-Encoding, Content-Length and Host.
///
/// Invariants: a complete request parsed from the split input equals the one from the whole,
/// and both are refused or accepted alike; the header block found ends at the input's first
/// blank line; a header the framing check accepts has at most one Transfer-Encoding, which is
/// `chunked`, never beside a Content-Length, and (on HTTP/1.1) exactly one Host.

#include "fulltime/limits.hpp"
#include "net/http_framing.hpp"

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
    bool header_done = false;
    bool refused = false;  // by the gateway's framing check, once the header was parsed
    bool done = false;
    std::string method;
    std::string target;
    std::string body;
};

namespace framing = fulltime::net::detail;

/// What the framing check promises of a header it accepts.
void check_accepted(const http::request_header<>& h) {
    const auto encodings = h.count(http::field::transfer_encoding);
    FUZZ_CHECK(encodings <= 1);
    if (encodings == 1) {
        FUZZ_CHECK(boost::beast::iequals(h[http::field::transfer_encoding], "chunked"));
        FUZZ_CHECK(h.count(http::field::content_length) == 0);
        FUZZ_CHECK(h.version() >= 11);
    }
    FUZZ_CHECK(h.count(http::field::host) <= 1);
    if (h.version() >= 11) {
        FUZZ_CHECK(h.count(http::field::host) == 1);
    }
}

/// The gateway's look at the raw bytes before Beast parses them: where the header block ends
/// and whether it has a folded line. Returns whether the gateway refuses it as folded.
bool check_raw(std::string_view text) {
    const std::size_t n = framing::header_block_length(text);
    if (n == std::string_view::npos) {
        return false;
    }
    FUZZ_CHECK(n >= 4 && n <= text.size());
    FUZZ_CHECK(text.substr(n - 4, 4) == "\r\n\r\n");
    // The block ends at the first blank line after the empty lines before the request line.
    std::size_t start = 0;
    while (text.substr(start, 2) == "\r\n") {
        start += 2;
    }
    FUZZ_CHECK(text.find("\r\n\r\n", start) == n - 4);
    const std::string_view block = text.substr(0, n);
    const bool folded = framing::has_folded_line(block);
    const bool has_fold = block.find("\r\n ") != std::string_view::npos ||
                          block.find("\r\n\t") != std::string_view::npos;
    FUZZ_CHECK(folded == has_fold);
    return folded;
}

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
        // Beast's read loop calls put() again only after a read added bytes; calling it again on
        // the bytes it asked more for breaks its contract (basic_parser.ipp asserts n >= 5 in
        // parse_chunk_header after a final chunk that needed more).
        if (part.empty()) {
            continue;
        }
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
            if (parser.is_header_done() && !out.header_done) {
                out.header_done = true;
                out.refused = framing::framing_violation(parser.get()).has_value();
                if (!out.refused) {
                    check_accepted(parser.get());
                }
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

    check_raw(text);
    const outcome whole = parse(text, {});
    const outcome pieces = parse(text.substr(0, split), text.substr(split));
    if (whole.header_done && pieces.header_done) {
        FUZZ_CHECK(whole.refused == pieces.refused);
    }
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

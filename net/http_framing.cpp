#include "net/http_framing.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

namespace fulltime::net::detail {

namespace http = boost::beast::http;

std::size_t header_block_length(std::string_view bytes) noexcept {
    // RFC 9112 2.2: a server ignores at least one empty line before the request line.
    std::size_t start = 0;
    while (bytes.substr(start, 2) == "\r\n") {
        start += 2;
    }
    const auto end = bytes.find("\r\n\r\n", start);
    return end == std::string_view::npos ? std::string_view::npos : end + 4;
}

bool has_folded_line(std::string_view header_block) noexcept {
    for (auto at = header_block.find("\r\n"); at != std::string_view::npos;
         at = header_block.find("\r\n", at + 2)) {
        if (at + 2 < header_block.size() &&
            (header_block[at + 2] == ' ' || header_block[at + 2] == '\t')) {
            return true;
        }
    }
    return false;
}

std::optional<std::string_view> framing_violation(const http::request_header<>& h) noexcept {
    const auto encodings = h.count(http::field::transfer_encoding);
    if (encodings > 0) {
        if (h.version() < 11) {
            return "Transfer-Encoding is not allowed on HTTP/1.0";
        }
        // Beast's parser has already trimmed the value of the spaces around it.
        if (encodings > 1 || !boost::beast::iequals(h[http::field::transfer_encoding], "chunked")) {
            return "the only Transfer-Encoding accepted is chunked";
        }
        if (h.count(http::field::content_length) > 0) {
            return "a request may not have both Content-Length and Transfer-Encoding";
        }
    }
    const auto hosts = h.count(http::field::host);
    if (hosts > 1 || (hosts == 0 && h.version() >= 11)) {
        return "an HTTP/1.1 request needs exactly one Host header";
    }
    return std::nullopt;
}

}  // namespace fulltime::net::detail

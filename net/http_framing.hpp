#pragma once
/// The strict reading of a request's framing (RFC 9112). Behind a proxy, a request that the
/// proxy and the engine would frame differently lets one client smuggle a request into another's
/// connection; Beast's parser is lenient where RFC 9112 lets a server be strict, so the gateway
/// refuses, with 400 and a closed connection: a Transfer-Encoding other than `chunked`, a
/// request with both Transfer-Encoding and Content-Length, Transfer-Encoding on HTTP/1.0, an
/// HTTP/1.1 request without exactly one Host, and a folded header line (obs-fold), which Beast
/// would join silently.

#include <boost/beast/http/message.hpp>

#include <cstddef>
#include <optional>
#include <string_view>

namespace fulltime::net::detail {

/// Returns the length of the header block at the start of `bytes` (the request line and the
/// header lines, through the blank line that ends them; empty lines before the request line
/// count too), or npos while the blank line has not arrived.
std::size_t header_block_length(std::string_view bytes) noexcept;

/// Returns whether a header block has a line that starts with a space or a tab: a header folded
/// onto the line before (obs-fold, RFC 9112 5.2), or whitespace before the first header.
bool has_folded_line(std::string_view header_block) noexcept;

/// Returns why the request header `h` (as Beast parsed it) must be refused, as the problem's
/// detail, or nullopt when its framing is unambiguous.
std::optional<std::string_view> framing_violation(
    const boost::beast::http::request_header<>& h) noexcept;

}  // namespace fulltime::net::detail

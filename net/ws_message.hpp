#pragma once
/// Validation of one inbound WebSocket text message, independent of any socket, so that the
/// rules of the wire protocol ("Malformed input") are unit-tested on their own.

#include "fulltime/net/endpoint_handlers.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace fulltime::net::detail {

/// Holds a well-formed request of a known type.
struct inbound_message {
    std::string type;
    nlohmann::json id;    ///< a string or an integer, as received
    nlohmann::json body;  ///< the whole message object
};

/// Returns the request in `text`, or the error reply to send for it: what parse_strict_json
/// refuses (invalid_json: not one JSON document, a raw NUL byte; invalid_request: nesting, a key
/// twice, a NUL in a string), and invalid_request when it is not an object, lacks a string
/// "type", lacks an "id" while `id_required`, has an "id" that is not a string or integer, or
/// names a type absent from `handlers`. Replies echo "id" as received (null when there is none,
/// or when the refusal came before it was read). Bet clients must send an
/// id (docs/protocol.md: every client request has one); the feed's messages (docs/protocol-feed.md)
/// carry none, so there it is optional and echoed when present.
std::variant<inbound_message, nlohmann::json> parse_message(std::string_view text,
                                                            const endpoint_handlers& handlers,
                                                            bool id_required = true);

/// Returns `{"type":"error","id":id,"code":code,"message":message}`, with `retry_after_ms`
/// (retry_after_ms_for) when the code is worth retrying.
nlohmann::json error_reply(nlohmann::json id, std::string_view code, std::string_view message);

/// Returns `{"type":"rejected","id":id,"code":"busy","message":message,"retry_after_ms":..}`.
nlohmann::json busy_reply(nlohmann::json id, std::string_view message);

/// Returns the compact text of `message`; invalid UTF-8 is replaced rather than thrown.
std::string to_wire(const nlohmann::json& message);

}  // namespace fulltime::net::detail

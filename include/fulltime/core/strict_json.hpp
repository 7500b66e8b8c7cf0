#pragma once
/// The one parser of the JSON that clients send (docs/protocol.md, "Text"): every WebSocket
/// message and every HTTP request body is parsed here, never with nlohmann::json::parse, whose
/// defaults let a hostile client through twice: it takes a NUL byte for the end of the input
/// (`{...}\0garbage` parses), and it keeps the last of two equal keys (`"stake":"0.10",
/// "stake":"5000.00"` reads 5000.00, while another reader of the same text may see 0.10). JSON
/// the engine wrote itself (stored responses, the database's documents) is not client input and
/// keeps the plain parser.
///
/// Small on purpose (nlohmann and boost::system::result only, no engine header), so that a
/// fuzzing target can link it alone.

#include <boost/system/result.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace fulltime {

/// Describes why a client's JSON was refused.
struct json_refusal {
    std::string_view code;  ///< "invalid_json" or "invalid_request" (docs/protocol.md, "Errors")
    std::string message;    ///< one sentence for the client, naming the key when there is one
    /// For invalid_request, the document as read up to the refusal (a duplicate key keeps its
    /// first value), so that a reply can echo the request's "id" when it came before; null for
    /// invalid_json, whose text is not a document to read anything from.
    nlohmann::json partial;
};

/// Holds a parsed document or why it was refused.
using strict_json = boost::system::result<nlohmann::json, json_refusal>;

/// Parses `text` as exactly one JSON document (RFC 8259) under the rules for client input.
/// Refuses as invalid_json text that is not JSON, anything but whitespace after the document, and
/// a raw NUL byte anywhere; as invalid_request arrays and objects nested more than
/// limits::json_depth_max deep, a key that appears twice in one object (at any depth), and a NUL
/// character (`\u0000`) in any string, key or value. `subject` names the text in the messages
/// ("message" gives "message is not valid JSON"). One pass of nlohmann's SAX parser, whose
/// stack does not grow with the input's depth: the duplicate check is the map insertion the
/// document needs anyway, and strings are moved into the document, not copied.
strict_json parse_strict_json(std::string_view text, std::string_view subject);

/// Throws a refusal as std::invalid_argument; used by boost::system::result::value().
[[noreturn]] void throw_exception_from_error(const json_refusal& e,
                                             const boost::source_location& loc);

}  // namespace fulltime

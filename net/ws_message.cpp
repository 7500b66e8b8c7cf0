#include "net/ws_message.hpp"

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/errors.hpp"
#include "fulltime/limits.hpp"

namespace fulltime::net::detail {

namespace {

// Returns whether arrays and objects nest deeper than limits::json_depth_max, scanning bytes
// only (brackets inside strings do not count). Runs before parsing, in linear time.
bool too_deep(std::string_view text) {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limits::json_depth_max) {
                return true;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return false;
}

// Keeps an error message short when it quotes client input.
std::string quoted_prefix(std::string_view s) {
    std::string out = "\"";
    out += s.substr(0, limits::quoted_input_chars_max);
    out += s.size() > limits::quoted_input_chars_max ? "...\"" : "\"";
    return out;
}

}  // namespace

nlohmann::json error_reply(nlohmann::json id, std::string_view code, std::string_view message) {
    nlohmann::json reply{
        {"type", "error"}, {"id", std::move(id)}, {"code", code}, {"message", message}};
    if (const auto wait = errors::retry_after_ms(code); wait > 0) {
        reply["retry_after_ms"] = wait;
    }
    return reply;
}

nlohmann::json busy_reply(nlohmann::json id, std::string_view message) {
    return bets::render_busy(id, message);
}

std::string to_wire(const nlohmann::json& message) {
    return message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::variant<inbound_message, nlohmann::json> parse_message(std::string_view text,
                                                            const endpoint_handlers& handlers,
                                                            bool id_required) {
    if (too_deep(text)) {
        return error_reply(nullptr, "invalid_request", "message nests too deeply");
    }
    nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
    if (message.is_discarded()) {
        return error_reply(nullptr, "invalid_json", "message is not valid JSON");
    }
    if (!message.is_object()) {
        return error_reply(nullptr, "invalid_request", "message must be a JSON object");
    }
    nlohmann::json id = nullptr;
    if (auto it = message.find("id"); it != message.end()) {
        id = *it;
    }
    if (id.is_null() && id_required) {
        return error_reply(nullptr, "invalid_request", "message needs an \"id\"");
    }
    if (!id.is_null() && !id.is_string() && !id.is_number_integer()) {
        return error_reply(std::move(id), "invalid_request",
                           "\"id\" must be a string or an integer");
    }
    if (id.is_string() && id.get_ref<const std::string&>().size() > limits::request_id_bytes_max) {
        return error_reply(std::move(id), "invalid_request", "\"id\" is too long");
    }
    auto type_it = message.find("type");
    if (type_it == message.end() || !type_it->is_string()) {
        return error_reply(std::move(id), "invalid_request", "message needs a string \"type\"");
    }
    const auto& type = type_it->get_ref<const std::string&>();
    if (handlers.find(type) == handlers.end()) {
        return error_reply(std::move(id), "invalid_request", "unknown type " + quoted_prefix(type));
    }
    inbound_message out;
    out.type = type;
    out.id = std::move(id);
    out.body = std::move(message);
    return out;
}

}  // namespace fulltime::net::detail

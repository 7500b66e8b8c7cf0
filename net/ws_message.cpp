#include "net/ws_message.hpp"

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/client_text.hpp"
#include "fulltime/core/errors.hpp"
#include "fulltime/core/strict_json.hpp"
#include "fulltime/limits.hpp"

namespace fulltime::net::detail {

namespace {

// Returns the "id" of `message` as sent, or null when it has none.
nlohmann::json id_of(const nlohmann::json& message) {
    if (!message.is_object()) {
        return nullptr;
    }
    const auto it = message.find("id");
    return it == message.end() ? nlohmann::json(nullptr) : *it;
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
    auto parsed = parse_strict_json(text, "message");
    if (!parsed) {
        // A refused message that got as far as its id has it echoed, so that a client matching
        // replies by id learns which request it was.
        return error_reply(id_of(parsed.error().partial), parsed.error().code,
                           parsed.error().message);
    }
    nlohmann::json message = std::move(*parsed);
    if (!message.is_object()) {
        return error_reply(nullptr, "invalid_request", "message must be a JSON object");
    }
    nlohmann::json id = id_of(message);
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
        return error_reply(std::move(id), "invalid_request",
                           "unknown type " + client_text::quoted(type));
    }
    inbound_message out;
    out.type = type;
    out.id = std::move(id);
    out.body = std::move(message);
    return out;
}

}  // namespace fulltime::net::detail

#include "fulltime/core/strict_json.hpp"

#include "fulltime/core/client_text.hpp"
#include "fulltime/limits.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fulltime {

namespace {

using json = nlohmann::json;

constexpr std::string_view invalid_json = "invalid_json";
constexpr std::string_view invalid_request = "invalid_request";

// Builds the document like nlohmann's own DOM handler (detail::json_sax_dom_parser, whose
// members are private, so it cannot be extended), and refuses what the client rules forbid as
// the events arrive: the parse stops at the first refusal.
class strict_handler {
public:
    explicit strict_handler(std::string_view subject) : subject_(subject) {
        open_.reserve(limits::json_depth_max);
    }

    bool null() { return put(nullptr); }
    bool boolean(bool v) { return put(v); }
    bool number_integer(json::number_integer_t v) { return put(v); }
    bool number_unsigned(json::number_unsigned_t v) { return put(v); }
    bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(v); }
    bool binary(json::binary_t& v) { return put(std::move(v)); }

    bool string(json::string_t& v) {
        if (std::memchr(v.data(), '\0', v.size()) != nullptr) {
            const std::string* key = open_.empty() ? nullptr : open_.back().key;
            return refuse(invalid_request,
                          key != nullptr
                              ? client_text::quoted(*key) + " " +
                                    client_text::describe(client_text::fault::nul, 0)
                              : std::string(subject_) + " has a string with a NUL character");
        }
        return put(std::move(v));
    }

    bool start_object(std::size_t /*elements*/) { return open(json::value_t::object); }
    bool start_array(std::size_t /*elements*/) { return open(json::value_t::array); }

    bool key(json::string_t& k) {
        if (const auto nul = k.find('\0'); nul != json::string_t::npos) {
            return refuse(invalid_request,
                          "a key must not contain a NUL character: " +
                              client_text::quoted(std::string_view(k).substr(0, nul)));
        }
        auto& object = open_.back().value->get_ref<json::object_t&>();
        auto [it, inserted] = object.try_emplace(std::move(k));
        if (!inserted) {
            // Never "the last one wins": two readers of the same text must not see two values.
            return refuse(invalid_request, "the key " + client_text::quoted(it->first) +
                                               " appears twice in one object");
        }
        element_ = &it->second;
        open_.back().key = &it->first;
        return true;
    }

    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                     const json::exception& /*error*/) {
        // After a complete document the only possible error is what follows it.
        return refuse(invalid_json,
                      std::string(subject_) +
                          (complete_ ? " is not valid JSON: more follows the end of the document"
                                     : " is not valid JSON"));
    }

    json take_root() { return std::move(root_); }
    std::optional<json_refusal> take_refusal() {
        if (refusal_ && refusal_->code == invalid_request) {
            refusal_->partial = std::move(root_);
        }
        return std::move(refusal_);
    }

private:
    // One array or object being filled, and the key its strings are named by in a refusal: its
    // current key (an object), or the key it is the value of (an array).
    struct open_value {
        json* value = nullptr;
        const std::string* key = nullptr;
    };

    // Stores `v` where the document is at: the root, the next element of the open array, or the
    // value of the open object's last key. Map nodes and the open containers do not move while
    // they are filled, so the pointers stay valid (as in nlohmann's own handler).
    template <class V>
    json* place(V&& v) {
        if (open_.empty()) {
            root_ = json(std::forward<V>(v));
            return &root_;
        }
        json& top = *open_.back().value;
        if (top.is_array()) {
            auto& array = top.get_ref<json::array_t&>();
            array.emplace_back(std::forward<V>(v));
            return &array.back();
        }
        *element_ = json(std::forward<V>(v));
        return element_;
    }

    template <class V>
    bool put(V&& v) {
        place(std::forward<V>(v));
        complete_ = open_.empty();
        return true;
    }

    bool open(json::value_t kind) {
        if (open_.size() >= limits::json_depth_max) {
            // Refused here rather than after parsing: whatever walks the document later (dump,
            // the handlers) recurses once per level.
            return refuse(invalid_request, std::string(subject_) + " nests too deeply (more than " +
                                               std::to_string(limits::json_depth_max) +
                                               " levels of arrays and objects)");
        }
        const std::string* key = open_.empty() ? nullptr : open_.back().key;
        json* value = place(kind);
        open_.push_back({value, kind == json::value_t::array ? key : nullptr});
        return true;
    }

    bool close() {
        open_.pop_back();
        complete_ = open_.empty();
        return true;
    }

    bool refuse(std::string_view code, std::string message) {
        refusal_ = json_refusal{code, std::move(message), nullptr};
        return false;
    }

    std::string_view subject_;
    json root_;
    std::vector<open_value> open_;
    json* element_ = nullptr;
    bool complete_ = false;
    std::optional<json_refusal> refusal_;
};

}  // namespace

strict_json parse_strict_json(std::string_view text, std::string_view subject) {
    // nlohmann's lexer reads a NUL byte as the end of the input and would accept a document
    // followed by "\0anything"; inside a string it is a raw control character, refused by JSON.
    if (const void* nul = std::memchr(text.data(), '\0', text.size()); nul != nullptr) {
        const auto offset = static_cast<const char*>(nul) - text.data();
        return strict_json(
            boost::system::in_place_error,
            json_refusal{invalid_json,
                         std::string(subject) + " is not valid JSON: a NUL byte at offset " +
                             std::to_string(offset),
                         nullptr});
    }
    strict_handler handler(subject);
    const bool parsed = json::sax_parse(text, &handler, json::input_format_t::json,
                                        /*strict=*/true, /*ignore_comments=*/false);
    if (auto refusal = handler.take_refusal()) {
        return strict_json(boost::system::in_place_error, std::move(*refusal));
    }
    if (!parsed) {
        // Not reached: the parser reports every failure through parse_error. Kept as a refusal
        // rather than an assertion because the input is a client's.
        return strict_json(
            boost::system::in_place_error,
            json_refusal{invalid_json, std::string(subject) + " is not valid JSON", nullptr});
    }
    return strict_json(boost::system::in_place_value, handler.take_root());
}

void throw_exception_from_error(const json_refusal& e, const boost::source_location&) {
    throw std::invalid_argument(e.message);
}

}  // namespace fulltime

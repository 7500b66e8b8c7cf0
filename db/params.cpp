#include "fulltime/db/params.hpp"

namespace fulltime::db {

params& params::add(std::int64_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
}

params& params::add(std::int32_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
}

params& params::add(std::uint32_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
}

params& params::add(std::uint64_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
}

params& params::add(bool v) {
    values_.emplace_back(v ? "true" : "false");
    return *this;
}

params& params::add(std::string_view v) {
    values_.emplace_back(std::string{v});
    return *this;
}

params& params::add(std::nullopt_t) {
    values_.emplace_back(std::nullopt);
    return *this;
}

void array_literal::separate() {
    if (text_.size() > 1) {
        text_ += ',';
    }
}

array_literal& array_literal::add(std::string_view element) {
    separate();
    text_ += '"';
    for (const char c : element) {
        // Inside a quoted element only these two are special (PostgreSQL's array_in); every
        // other byte, including the separators, braces and whitespace, is taken as it is.
        if (c == '"' || c == '\\') {
            text_ += '\\';
        }
        text_ += c;
    }
    text_ += '"';
    return *this;
}

array_literal& array_literal::add(std::int64_t element) {
    separate();
    text_ += '"';
    text_ += std::to_string(element);
    text_ += '"';
    return *this;
}

}  // namespace fulltime::db

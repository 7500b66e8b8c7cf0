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

}  // namespace fulltime::db

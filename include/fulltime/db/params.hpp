#pragma once
/// Typed statement parameters, sent to the server in text format as bound parameters.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::db {

/// Holds the parameters of one statement ($1, $2, ...) as text, or null.
class params {
public:
    params() = default;

    /// Builds parameters from values: integers, bool, strings, string views, C strings,
    /// std::nullopt and std::optional of those.
    template <class... Ts>
    explicit params(const Ts&... values) {
        values_.reserve(sizeof...(Ts));
        (add(values), ...);
    }

    /// Appends one parameter.
    params& add(std::int64_t v);
    params& add(std::int32_t v);
    params& add(std::uint32_t v);
    params& add(std::uint64_t v);
    params& add(bool v);
    params& add(std::string_view v);
    params& add(const std::string& v) { return add(std::string_view{v}); }
    params& add(const char* v) { return add(std::string_view{v}); }
    params& add(std::nullopt_t);
    template <class T>
    params& add(const std::optional<T>& v) {
        return v ? add(*v) : add(std::nullopt);
    }

    /// Returns the number of parameters.
    std::size_t size() const noexcept { return values_.size(); }
    /// Returns the text of parameter i, or nullopt for SQL NULL.
    const std::optional<std::string>& at(std::size_t i) const { return values_.at(i); }

private:
    std::vector<std::optional<std::string>> values_;
};

/// Builds the text of a one-dimensional PostgreSQL array literal (`{"1","a b"}`), to be bound as
/// one parameter and cast to its array type (`$1::text[]`, `$2::bigint[]`). Every element is
/// double-quoted, with backslash and double quote escaped, so that any text reads back as exactly
/// one element, unchanged: commas, braces, quotes, backslashes, spaces, the word NULL, non-ASCII
/// and the empty string included. No element is SQL NULL.
class array_literal {
public:
    /// Appends one text element.
    array_literal& add(std::string_view element);
    /// Appends one integer element.
    array_literal& add(std::int64_t element);

    /// Returns the literal built so far ("{}" when empty).
    std::string str() const { return text_ + '}'; }

private:
    void separate();

    std::string text_ = "{";
};

}  // namespace fulltime::db

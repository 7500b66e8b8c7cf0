#include "fulltime/db/result.hpp"

#include "db/detail_error.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <type_traits>

namespace fulltime::db {

result::result(pg_result* res) : res_(res, &PQclear) {}

int result::rows() const noexcept { return res_ ? PQntuples(res_.get()) : 0; }

int result::columns() const noexcept { return res_ ? PQnfields(res_.get()) : 0; }

int result::column(const std::string& name) const noexcept {
    return res_ ? PQfnumber(res_.get(), name.c_str()) : -1;
}

std::int64_t result::affected_rows() const noexcept {
    if (!res_) {
        return 0;
    }
    // PQcmdTuples returns "" for statements that do not count rows.
    const std::string_view text{PQcmdTuples(res_.get())};
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    return ec == std::errc{} && end == text.data() + text.size() ? n : 0;
}

bool result::is_null(int row, int col) const {
    return !res_ || PQgetisnull(res_.get(), row, col) != 0;
}

std::string_view result::text(int row, int col) const {
    if (!res_ || row < 0 || col < 0 || row >= rows() || col >= columns()) {
        return {};
    }
    return {PQgetvalue(res_.get(), row, col),
            static_cast<std::size_t>(PQgetlength(res_.get(), row, col))};
}

namespace {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

failure parse_failure(std::string_view type, std::string_view text, int row, int col) {
    return detail::make_failure(
        errc::bad_result, "cannot read '" + std::string{text.substr(0, 64)} + "' as " +
                              std::string{type} + " at row " + std::to_string(row) + ", column " +
                              std::to_string(col));
}

template <class T>
outcome<T> parse(std::string_view text, int row, int col) {
    if constexpr (std::is_same_v<T, std::string>) {
        return std::string{text};
    } else if constexpr (std::is_same_v<T, std::string_view>) {
        return text;
    } else if constexpr (std::is_same_v<T, bool>) {
        // PostgreSQL's text output for boolean is exactly "t" or "f".
        if (text == "t") {
            return true;
        }
        if (text == "f") {
            return false;
        }
        return parse_failure("bool", text, row, col);
    } else {
        static_assert(std::is_integral_v<T>);
        T v{};
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) {
            return parse_failure(sizeof(T) == 8 ? "int64" : "int32", text, row, col);
        }
        return v;
    }
}

}  // namespace

template <class T>
outcome<T> result::get(int row, int col) const {
    if (!res_ || row < 0 || col < 0 || row >= rows() || col >= columns()) {
        return detail::make_failure(
            errc::bad_result, "no value at row " + std::to_string(row) + ", column " +
                                  std::to_string(col) + " (result has " + std::to_string(rows()) +
                                  " rows, " + std::to_string(columns()) + " columns)");
    }
    if constexpr (is_optional<T>::value) {
        using value_type = typename T::value_type;
        if (is_null(row, col)) {
            return T{std::nullopt};
        }
        auto v = parse<value_type>(text(row, col), row, col);
        if (!v) {
            return v.error();
        }
        return T{std::move(*v)};
    } else {
        if (is_null(row, col)) {
            return detail::make_failure(errc::bad_result, "unexpected NULL at row " +
                                                              std::to_string(row) + ", column " +
                                                              std::to_string(col));
        }
        return parse<T>(text(row, col), row, col);
    }
}

template outcome<std::int64_t> result::get<std::int64_t>(int, int) const;
template outcome<std::int32_t> result::get<std::int32_t>(int, int) const;
template outcome<bool> result::get<bool>(int, int) const;
template outcome<std::string> result::get<std::string>(int, int) const;
template outcome<std::string_view> result::get<std::string_view>(int, int) const;
template outcome<std::optional<std::int64_t>> result::get<std::optional<std::int64_t>>(int,
                                                                                       int) const;
template outcome<std::optional<std::int32_t>> result::get<std::optional<std::int32_t>>(int,
                                                                                       int) const;
template outcome<std::optional<bool>> result::get<std::optional<bool>>(int, int) const;
template outcome<std::optional<std::string>> result::get<std::optional<std::string>>(int,
                                                                                     int) const;
template outcome<std::optional<std::string_view>> result::get<std::optional<std::string_view>>(
    int, int) const;

}  // namespace fulltime::db

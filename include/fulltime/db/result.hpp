#pragma once
/// The rows a statement returned, with typed access to its text-format values.

#include "fulltime/db/error.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct pg_result;  // libpq's PGresult, kept out of this header

namespace fulltime::db {

/// Holds one PGresult (shared, immutable). Values are read by row and column index.
class result {
public:
    result() = default;
    /// Takes ownership of a PGresult.
    explicit result(pg_result* res);

    /// Returns the number of rows.
    int rows() const noexcept;
    /// Returns the number of columns.
    int columns() const noexcept;

    /// Returns the index of the column named `name`, or -1 when there is none.
    int column(const std::string& name) const noexcept;
    /// Returns the number of rows an INSERT/UPDATE/DELETE affected (0 when not applicable).
    std::int64_t affected_rows() const noexcept;
    /// Returns whether the value at (row, col) is SQL NULL.
    bool is_null(int row, int col) const;
    /// Returns the text of the value at (row, col); empty for NULL.
    std::string_view text(int row, int col) const;

    /// Returns the value at (row, col) converted to T: std::int64_t, std::int32_t, bool,
    /// std::string, std::string_view, or std::optional of those (NULL -> nullopt).
    /// A NULL read as a non-optional, or text that does not parse, is errc::bad_result.
    /// A std::string_view points into the PGresult: it is valid while this result (or a copy
    /// of it) lives.
    template <class T>
    outcome<T> get(int row, int col) const;

private:
    std::shared_ptr<pg_result> res_;
};

}  // namespace fulltime::db

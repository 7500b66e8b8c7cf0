#pragma once
/// Resources compiled into the binary (see cmake/embed_resources.cmake).

#include <string_view>
#include <vector>

namespace fulltime::resources {

/// Says how the migration runner treats a schema file.
enum class source_kind {
    migration,  ///< db/migrations/NNNN_name.sql: tables, indexes, constraints, types, data; once
    function,   ///< db/functions/name.sql: CREATE OR REPLACE FUNCTION; again whenever it changes
};

/// Names one schema file (a numbered migration or a function file) and holds its SQL text.
struct migration_source {
    std::string_view name;
    std::string_view sql;
    source_kind kind = source_kind::migration;
};

/// Returns the schema as it was at build time: db/migrations/*.sql in file-name order, then
/// db/functions/*.sql in file-name order (kind source_kind::function).
std::vector<migration_source> migrations();

/// Returns net/dashboard.html as it was at build time: the page GET /dashboard serves.
std::string_view dashboard_html();

}  // namespace fulltime::resources

#pragma once
/// Resources compiled into the binary (see cmake/embed_resources.cmake).

#include <string_view>
#include <vector>

namespace fulltime::resources {

/// Names one migration file and holds its SQL text.
struct migration_source {
    std::string_view name;
    std::string_view sql;
};

/// Returns the text of config/fulltime.json as it was at build time.
std::string_view default_config();

/// Returns db/migrations/*.sql in file-name order, as they were at build time.
std::vector<migration_source> migrations();

}  // namespace fulltime::resources

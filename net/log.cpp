#include "net/log.hpp"

#include <cstdio>
#include <string>

namespace fulltime::net::detail {

void log(std::string_view level, std::string_view message) {
    // One fwrite per line so that lines from different threads do not interleave.
    std::string line = "fulltime net ";
    line += level;
    line += ": ";
    line += message;
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace fulltime::net::detail

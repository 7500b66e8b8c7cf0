#pragma once
/// One line per notable gateway event on stderr. Deliberately tiny: the engine has no logging
/// framework, and these lines are for an operator reading a terminal or a journal.

#include <string_view>

namespace fulltime::net::detail {

/// Writes "fulltime net <level>: <message>" and a newline to stderr in one call.
void log(std::string_view level, std::string_view message);

}  // namespace fulltime::net::detail

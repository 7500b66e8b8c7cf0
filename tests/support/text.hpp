#pragma once
/// Small string checks the tests share.

#include <string>

namespace fulltime::test {

/// True when `needle` occurs in `haystack`. Takes strings (not views) so that a JSON string
/// value converts to it.
inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace fulltime::test

#include "net/token_extraction.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace fulltime::net::detail {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

std::optional<std::string> percent_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '+') {
            out += ' ';
        } else if (s[i] == '%') {
            if (i + 2 >= s.size()) {
                return std::nullopt;
            }
            const int hi = hex_value(s[i + 1]);
            const int lo = hex_value(s[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

}  // namespace

std::optional<std::string> bearer_token(std::string_view authorization) {
    authorization = trim(authorization);
    constexpr std::string_view scheme = "bearer";
    if (authorization.size() <= scheme.size() || authorization[scheme.size()] != ' ') {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < scheme.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) {
            return std::nullopt;
        }
    }
    auto token = trim(authorization.substr(scheme.size()));
    if (token.empty()) {
        return std::nullopt;
    }
    return std::string(token);
}

std::optional<std::string> query_param(std::string_view query, std::string_view name) {
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        const auto eq = pair.find('=');
        const auto key = pair.substr(0, eq);
        if (key != name) {
            continue;
        }
        if (eq == std::string_view::npos) {
            return std::string{};
        }
        return percent_decode(pair.substr(eq + 1));
    }
    return std::nullopt;
}

std::optional<std::string> unexpected_query_param(std::string_view query,
                                                  std::initializer_list<std::string_view> allowed) {
    std::vector<std::string_view> seen;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        const auto key = pair.substr(0, pair.find('='));
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty()) {
            continue;  // "a=1&&b=2", "a=1&": no parameter there
        }
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end() ||
            std::find(seen.begin(), seen.end(), key) != seen.end()) {
            return std::string(key);
        }
        seen.push_back(key);
    }
    return std::nullopt;
}

std::optional<std::string> extract_token(std::string_view authorization, std::string_view query) {
    if (!authorization.empty()) {
        return bearer_token(authorization);
    }
    auto t = query_param(query, "token");
    if (t && t->empty()) {
        return std::nullopt;
    }
    return t;
}

}  // namespace fulltime::net::detail

#include "net/router.hpp"

#include <doctest/doctest.h>

using namespace fulltime::net;
using namespace fulltime::net::detail;

namespace {

http_route route(std::string name, std::string method, std::string path, bool prefix = false) {
    http_route r;
    r.name = std::move(name);
    r.method = std::move(method);
    r.path = std::move(path);
    r.prefix = prefix;
    return r;
}

http_routes table() {
    return {route("healthz", "GET", "/healthz"),
            route("feed", "POST", "/v1/feed"),
            route("accounts_create", "POST", "/v1/accounts"),
            route("accounts", "GET", "/v1/accounts", true),
            route("account_ops", "POST", "/v1/accounts/", true),
            route("dashboard", "GET", "/dashboard")};
}

}  // namespace

TEST_CASE("split separates path and query at the first question mark") {
    CHECK(split("/v1/bets?token=a?b").path == "/v1/bets");
    CHECK(split("/v1/bets?token=a?b").query == "token=a?b");
    CHECK(split("/healthz").query.empty());
    CHECK(split("/x?").query.empty());
}

TEST_CASE("exact routes match their path only") {
    const auto t = table();
    auto m = match_route(t, "GET", "/healthz");
    REQUIRE(m.kind == match_kind::found);
    CHECK(m.route->name == "healthz");
    CHECK(match_route(t, "GET", "/healthz/").kind == match_kind::not_found);
    CHECK(match_route(t, "GET", "/healthzz").kind == match_kind::not_found);
    CHECK(match_route(t, "GET", "/nope").kind == match_kind::not_found);
}

TEST_CASE("a known path with another method is 405 with Allow") {
    const auto t = table();
    auto m = match_route(t, "GET", "/v1/feed");
    CHECK(m.kind == match_kind::method_not_allowed);
    CHECK(m.allow == "POST");
    CHECK(m.route->name == "feed");
    m = match_route(t, "DELETE", "/healthz");
    CHECK(m.kind == match_kind::method_not_allowed);
    CHECK(m.allow == "GET, HEAD");
}

TEST_CASE("HEAD is served by the GET route of the path") {
    const auto t = table();
    auto m = match_route(t, "HEAD", "/healthz");
    REQUIRE(m.kind == match_kind::found);
    CHECK(m.route->name == "healthz");
    m = match_route(t, "HEAD", "/v1/accounts/42");
    REQUIRE(m.kind == match_kind::found);
    CHECK(m.route->name == "accounts");
    m = match_route(t, "HEAD", "/v1/feed");
    CHECK(m.kind == match_kind::method_not_allowed);
    CHECK(m.allow == "POST");
}

TEST_CASE("prefixes match at segment boundaries, exact beats prefix, longer prefix wins") {
    const auto t = table();
    auto m = match_route(t, "POST", "/v1/accounts");
    REQUIRE(m.kind == match_kind::found);
    CHECK(m.route->name == "accounts_create");
    m = match_route(t, "GET", "/v1/accounts");
    REQUIRE(m.kind == match_kind::found);
    CHECK(m.route->name == "accounts");
    m = match_route(t, "GET", "/v1/accounts/42");
    REQUIRE(m.kind == match_kind::found);
    CHECK(m.route->name == "accounts");
    m = match_route(t, "POST", "/v1/accounts/42/deposits");
    REQUIRE(m.kind == match_kind::found);
    CHECK(m.route->name == "account_ops");
    CHECK(match_route(t, "GET", "/v1/accountsx").kind == match_kind::not_found);
    // Allow lists every method some route would serve this path with.
    m = match_route(t, "DELETE", "/v1/accounts/42");
    CHECK(m.kind == match_kind::method_not_allowed);
    CHECK(m.allow == "GET, HEAD, POST");
    CHECK(m.route->name == "account_ops");
}

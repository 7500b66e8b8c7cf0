#include "net/token_extraction.hpp"

#include <doctest/doctest.h>

using namespace fulltime::net::detail;

TEST_CASE("bearer tokens come from the Authorization header") {
    CHECK(bearer_token("Bearer abc.def") == "abc.def");
    CHECK(bearer_token("bearer abc") == "abc");
    CHECK(bearer_token("  BEARER   abc  ") == "abc");
    CHECK_FALSE(bearer_token("Basic dXNlcg==").has_value());
    CHECK_FALSE(bearer_token("Bearer").has_value());
    CHECK_FALSE(bearer_token("Bearer ").has_value());
    CHECK_FALSE(bearer_token("Bearerabc").has_value());
    CHECK_FALSE(bearer_token("").has_value());
}

TEST_CASE("query parameters are found by exact name and percent-decoded") {
    CHECK(query_param("token=ft1.a.b", "token") == "ft1.a.b");
    CHECK(query_param("x=1&token=a%2Eb&y=2", "token") == "a.b");
    CHECK(query_param("mytoken=1&token=2", "token") == "2");
    CHECK(query_param("token=", "token") == "");
    CHECK_FALSE(query_param("tokens=1", "token").has_value());
    CHECK_FALSE(query_param("token=%zz", "token").has_value());
    CHECK_FALSE(query_param("token=%4", "token").has_value());
    CHECK_FALSE(query_param("", "token").has_value());
}

TEST_CASE("a parameter not listed, or listed twice, is unexpected") {
    CHECK_FALSE(unexpected_query_param("", {"status"}));
    CHECK_FALSE(unexpected_query_param("status=open&limit=5", {"status", "limit"}));
    CHECK_FALSE(unexpected_query_param("status", {"status"}));
    CHECK(unexpected_query_param("foo=bar", {"status"}) == "foo");
    CHECK(unexpected_query_param("status=open&Status=all", {"status"}) == "Status");
    CHECK(unexpected_query_param("status=open&status=all", {"status"}) == "status");
    CHECK_FALSE(unexpected_query_param("status=open&&limit=1&", {"status", "limit"}));
    CHECK(unexpected_query_param("=1", {"status"}) == "");
    CHECK(unexpected_query_param("st%61tus=open", {"status"}) == "st%61tus");
}

TEST_CASE("the header wins over the query and a bad header is not rescued by the query") {
    CHECK(extract_token("Bearer h", "token=q") == "h");
    CHECK(extract_token("", "token=q") == "q");
    CHECK_FALSE(extract_token("Basic x", "token=q").has_value());
    CHECK_FALSE(extract_token("", "token=").has_value());
    CHECK_FALSE(extract_token("", "").has_value());
}

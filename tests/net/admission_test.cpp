// The gateway's admission shares (net/admission.cpp), the throttle of its log lines
// (net/report_throttle.cpp) and the accept loop's backoff (net/accept_backoff.hpp): pure logic,
// no sockets.

#include "net/admission.hpp"
#include "net/accept_backoff.hpp"
#include "net/report_throttle.hpp"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace fulltime::net::detail;
namespace ip = boost::asio::ip;

TEST_CASE("a key holds at most its share; a share given back is free again") {
    share_table t(2);
    auto a1 = t.take("10.0.0.1");
    auto a2 = t.take("10.0.0.1");
    auto a3 = t.take("10.0.0.1");
    CHECK(a1);
    CHECK(a2);
    CHECK_FALSE(a3);
    CHECK(t.held("10.0.0.1") == 2);
    // Another key has its own share.
    auto b1 = t.take("10.0.0.2");
    CHECK(b1);
    CHECK(t.keys() == 2);
    a1 = share{};
    CHECK(t.held("10.0.0.1") == 1);
    CHECK(t.take("10.0.0.1"));  // taken and given back at once
    CHECK(t.held("10.0.0.1") == 1);
    // A refused take leaves no entry behind; the last share given back removes the key.
    CHECK_FALSE(share_table(0).take("x"));
    b1 = share{};
    a2 = share{};
    CHECK(t.keys() == 0);
    CHECK(t.held("10.0.0.1") == 0);
}

TEST_CASE("a share moves with its holder and is given back once") {
    share_table t(1);
    share outer;
    {
        share inner = t.take("k");
        REQUIRE(inner);
        outer = std::move(inner);
        CHECK_FALSE(inner);  // NOLINT(bugprone-use-after-move): the moved-from share is empty
    }
    CHECK(t.held("k") == 1);
    share moved(std::move(outer));
    CHECK(t.held("k") == 1);
    moved = share{};
    CHECK(t.held("k") == 0);
}

TEST_CASE("shares are counted exactly when taken and given back from many threads") {
    share_table t(1000);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&t] {
            for (int j = 0; j < 10000; ++j) {
                auto s = t.take("k");
                REQUIRE(s);
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    CHECK(t.keys() == 0);
}

TEST_CASE("an address shares with its IPv4 self and its IPv6 /64") {
    CHECK(address_key(ip::make_address("192.0.2.7")) == "192.0.2.7");
    CHECK(address_key(ip::make_address("::ffff:192.0.2.7")) == "192.0.2.7");
    const auto a = address_key(ip::make_address("2001:db8:1:2:aaaa::1"));
    CHECK(a == "2001:db8:1:2::/64");
    CHECK(address_key(ip::make_address("2001:db8:1:2:ffff:1:2:3")) == a);
    CHECK(address_key(ip::make_address("2001:db8:1:3::1")) != a);
    CHECK(address_key(ip::make_address("::1")) == "::/64");
}

TEST_CASE("a throttled report comes first at once, then at most once per interval with a count") {
    report_throttle r(10s);
    const report_throttle::clock::time_point t0{};
    CHECK(r.note(t0 + 1s) == 1);
    CHECK_FALSE(r.note(t0 + 2s));
    CHECK_FALSE(r.note(t0 + 10s));
    // Ten seconds after the last line: this one and the two held back.
    CHECK(r.note(t0 + 11s) == 3);
    CHECK_FALSE(r.note(t0 + 12s));
    CHECK(r.note(t0 + 60s) == 2);
}

TEST_CASE("the accept backoff doubles up to its cap and starts over after a success") {
    accept_backoff b(10ms, 100ms);
    CHECK(b.failed() == 10ms);
    CHECK(b.failed() == 20ms);
    CHECK(b.failed() == 40ms);
    CHECK(b.failed() == 80ms);
    CHECK(b.failed() == 100ms);
    CHECK(b.failed() == 100ms);
    b.succeeded();
    CHECK(b.failed() == 10ms);
}

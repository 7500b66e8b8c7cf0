#pragma once
/// Shares of the gateway's connections: how many one source address may hold
/// (gateway.connections_per_address_max) and how many WebSocket sessions one account or producer
/// may hold (gateway.sessions_per_account_max), so that one client cannot take the slots every
/// other client needs (docs/config.md).

#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fulltime::net::detail {

class share_table;

/// Holds one share taken from a share_table and gives it back when destroyed; empty when the
/// table refused it. The table must outlive it.
class share {
public:
    share() = default;
    share(share&& other) noexcept;
    share& operator=(share&& other) noexcept;
    ~share();
    share(const share&) = delete;
    share& operator=(const share&) = delete;

    /// Returns whether a share is held.
    explicit operator bool() const noexcept { return table_ != nullptr; }

private:
    friend class share_table;
    share(share_table* table, std::string key) noexcept;
    void release() noexcept;

    share_table* table_ = nullptr;
    std::string key_;
};

/// Counts the shares each key holds against one limit per key. Thread-safe: shares are taken
/// on the accept loop and given back by sessions on any event loop. Only keys that hold a share
/// have an entry, so it is bounded by the connections it counts.
class share_table {
public:
    /// Makes a table that lets each key hold at most `per_key_max` shares.
    explicit share_table(std::size_t per_key_max) noexcept : per_key_max_(per_key_max) {}
    share_table(const share_table&) = delete;
    share_table& operator=(const share_table&) = delete;

    /// Takes a share of `key`; an empty share when `key` holds per_key_max already.
    share take(std::string key);

    /// Returns the shares `key` holds.
    std::size_t held(std::string_view key) const;

    /// Returns the keys that hold at least one share.
    std::size_t keys() const;

private:
    friend class share;
    void give_back(const std::string& key) noexcept;

    const std::size_t per_key_max_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, std::size_t> held_;
};

/// Returns the key a source address's connections share: the IPv4 address (an IPv4-mapped IPv6
/// one as IPv4), or an IPv6 address's /64 prefix, which one subscriber usually gets whole, so
/// that walking through its addresses does not multiply the share.
std::string address_key(const boost::asio::ip::address& address);

}  // namespace fulltime::net::detail

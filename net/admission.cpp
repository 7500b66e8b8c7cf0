#include "net/admission.hpp"

#include "fulltime/core/assert.hpp"

#include <utility>

namespace fulltime::net::detail {

share::share(share_table* table, std::string key) noexcept : table_(table), key_(std::move(key)) {}

share::share(share&& other) noexcept
    : table_(std::exchange(other.table_, nullptr)), key_(std::move(other.key_)) {}

share& share::operator=(share&& other) noexcept {
    if (this != &other) {
        release();
        table_ = std::exchange(other.table_, nullptr);
        key_ = std::move(other.key_);
    }
    return *this;
}

share::~share() { release(); }

void share::release() noexcept {
    if (table_ != nullptr) {
        table_->give_back(key_);
        table_ = nullptr;
    }
}

share share_table::take(std::string key) {
    std::lock_guard lock(mutex_);
    if (const auto it = held_.find(key); it != held_.end()) {
        if (it->second >= per_key_max_) {
            return share{};
        }
        ++it->second;
    } else if (per_key_max_ == 0) {
        return share{};
    } else {
        held_.emplace(key, 1);
    }
    return share(this, std::move(key));
}

void share_table::give_back(const std::string& key) noexcept {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(key);
    // A share is given back once, by the object that took it.
    FULLTIME_DEBUG_ASSERT(it != held_.end());
    if (it == held_.end()) {
        return;
    }
    if (--it->second == 0) {
        held_.erase(it);
    }
}

std::size_t share_table::held(std::string_view key) const {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(std::string(key));
    return it == held_.end() ? 0 : it->second;
}

std::size_t share_table::keys() const {
    std::lock_guard lock(mutex_);
    return held_.size();
}

std::string address_key(const boost::asio::ip::address& address) {
    if (address.is_v4()) {
        return address.to_string();
    }
    const auto v6 = address.to_v6();
    if (v6.is_v4_mapped()) {
        return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_string();
    }
    auto bytes = v6.to_bytes();
    for (std::size_t i = 8; i < bytes.size(); ++i) {
        bytes[i] = 0;
    }
    return boost::asio::ip::address_v6(bytes).to_string() + "/64";
}

}  // namespace fulltime::net::detail

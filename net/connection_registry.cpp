#include "fulltime/net/connection_registry.hpp"

#include "net/ws_message.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace fulltime::net {

void connection_registry::add(std::int64_t account_id, std::uint64_t connection_id,
                              std::weak_ptr<push_target> target) {
    std::lock_guard lock(mutex_);
    targets_.emplace(account_id, std::make_pair(connection_id, std::move(target)));
}

void connection_registry::remove(std::int64_t account_id, std::uint64_t connection_id) {
    std::lock_guard lock(mutex_);
    auto [first, last] = targets_.equal_range(account_id);
    for (auto it = first; it != last; ++it) {
        if (it->second.first == connection_id) {
            targets_.erase(it);
            return;
        }
    }
}

std::size_t connection_registry::push(std::int64_t account_id, const nlohmann::json& message,
                                      std::uint64_t xid) {
    std::vector<std::shared_ptr<push_target>> live;
    {
        std::lock_guard lock(mutex_);
        auto [first, last] = targets_.equal_range(account_id);
        for (auto it = first; it != last; ++it) {
            if (auto t = it->second.second.lock()) {
                live.push_back(std::move(t));
            }
        }
    }
    // Sessions are called outside the lock: push posts onto the session's executor, and a
    // session that ends concurrently takes this lock to remove itself.
    const std::string text = detail::to_wire(message);
    for (const auto& t : live) {
        t->push(text, xid);
    }
    return live.size();
}

std::size_t connection_registry::sessions(std::int64_t account_id) const {
    std::lock_guard lock(mutex_);
    return targets_.count(account_id);
}

}  // namespace fulltime::net

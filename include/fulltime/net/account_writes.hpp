#pragma once
/// What this engine has written for each account, for that account's reads (read-your-writes,
/// docs/architecture.md "Reads"): the highest transaction id and commit position of the
/// placements it answered for the account, and of the settlements it pushed to it. Every session
/// of the account reads the same figures, so a bettor who places a bet on one connection and
/// lists bets on another (a second device, a client that connects per command) sees the bet.
///
/// A fixed table: an account's figures live in the slot its id hashes to. Accounts that share a
/// slot each see the other's figures too, which can only make a read wait for a newer write
/// (the projector's horizon and a standby's replay both pass writes in order), never miss one.
/// Lock-free and callable from any thread; a note is a release, a read an acquire.

#include "fulltime/limits.hpp"

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

namespace fulltime::net {

class account_writes {
public:
    /// The figures a read of one account must see.
    struct seen {
        std::uint64_t xid = 0;         ///< 0: no write to wait for
        std::uint64_t commit_lsn = 0;  ///< 0: none known
    };

    account_writes() : slots_(std::make_unique<slot[]>(limits::account_writes_slots)) {}

    /// Raises the account's figures to the given ones where they are higher (0 leaves a figure).
    void note(std::int64_t account_id, std::uint64_t xid, std::uint64_t commit_lsn) noexcept {
        slot& s = slots_[index(account_id)];
        raise(s.xid, xid);
        raise(s.commit_lsn, commit_lsn);
    }

    /// Returns the account's figures (and those of any account sharing its slot).
    seen of(std::int64_t account_id) const noexcept {
        const slot& s = slots_[index(account_id)];
        return seen{s.xid.load(std::memory_order_acquire),
                    s.commit_lsn.load(std::memory_order_acquire)};
    }

private:
    struct slot {
        std::atomic<std::uint64_t> xid{0};
        std::atomic<std::uint64_t> commit_lsn{0};
    };
    static_assert((limits::account_writes_slots & (limits::account_writes_slots - 1)) == 0,
                  "the slot count is a power of two");

    static std::size_t index(std::int64_t account_id) noexcept {
        // Fibonacci hashing (the product's top bits): consecutive ids, the usual case, spread
        // over the whole table.
        constexpr int bits = std::countr_zero(limits::account_writes_slots);
        const std::uint64_t h = static_cast<std::uint64_t>(account_id) * 0x9E3779B97F4A7C15ULL;
        return static_cast<std::size_t>(h >> (64 - bits));
    }

    static void raise(std::atomic<std::uint64_t>& field, std::uint64_t value) noexcept {
        std::uint64_t seen = field.load(std::memory_order_relaxed);
        while (value > seen && !field.compare_exchange_weak(seen, value, std::memory_order_release,
                                                            std::memory_order_relaxed)) {
        }
    }

    std::unique_ptr<slot[]> slots_;
};

}  // namespace fulltime::net

#pragma once
/// The process's file-descriptor limit (RLIMIT_NOFILE) against what `fulltime serve` may hold
/// open: one descriptor per client connection, per refusal under way, per database connection,
/// and some of its own (limits::fds_reserved). A soft limit below that makes accept fail with
/// EMFILE before gateway.connections_max is reached, and then no connection gets even its 503.
/// So at start the engine raises the soft limit to the hard one, and when even the hard limit
/// cannot hold connections_max it serves fewer connections and says so (docs/operations.md,
/// "File descriptors").

#include <cstddef>
#include <cstdint>

namespace fulltime::process {

/// Holds what the engine does about its descriptor limit, and the figures behind it.
struct fd_limit_plan {
    std::uint64_t soft_before = 0;  ///< the soft limit the process started with
    std::uint64_t hard = 0;         ///< the hard limit (UINT64_MAX: unlimited)
    std::uint64_t soft = 0;         ///< the soft limit to serve with
    std::size_t reserved = 0;       ///< descriptors needed besides the client connections
    std::size_t connections_max_configured = 0;
    /// The connections the soft limit holds besides `reserved`, at most the configured ones;
    /// 0 when not even one does.
    std::size_t connections_max = 0;

    /// Returns whether connections_max is below the configured value.
    bool lowered() const noexcept { return connections_max < connections_max_configured; }
};

/// Returns the plan for a process whose limits are `soft` and `hard` (UINT64_MAX: unlimited),
/// configured for `connections_max` client connections, that needs `reserved` descriptors
/// besides: the soft limit raised to the hard one (to what is needed when the hard limit is
/// unlimited, never lowered), and connections_max lowered to what that holds.
fd_limit_plan plan_fd_limit(std::uint64_t soft, std::uint64_t hard, std::size_t connections_max,
                            std::size_t reserved) noexcept;

/// Reads this process's RLIMIT_NOFILE, plans as plan_fd_limit does and raises the soft limit.
/// A raise the kernel refuses (beyond fs.nr_open) leaves the limit as it was, and the plan is
/// made again on it. Throws std::runtime_error when the limit cannot be read.
fd_limit_plan raise_fd_limit(std::size_t connections_max, std::size_t reserved);

}  // namespace fulltime::process

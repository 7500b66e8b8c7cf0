#include "fulltime/core/fd_limit.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace fulltime::process {

namespace {

constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

std::uint64_t from_rlim(rlim_t v) noexcept {
    return v == RLIM_INFINITY ? unlimited : static_cast<std::uint64_t>(v);
}

}  // namespace

fd_limit_plan plan_fd_limit(std::uint64_t soft, std::uint64_t hard, std::size_t connections_max,
                            std::size_t reserved) noexcept {
    fd_limit_plan p;
    p.soft_before = soft;
    p.hard = hard;
    p.reserved = reserved;
    p.connections_max_configured = connections_max;
    const std::uint64_t needed =
        static_cast<std::uint64_t>(connections_max) + static_cast<std::uint64_t>(reserved);
    // All the hard limit allows: descriptors cost nothing until they are used, and a soft
    // limit below the hard one only turns a flood into EMFILE sooner.
    p.soft = hard == unlimited ? std::max(soft, needed) : std::max(soft, hard);
    const std::uint64_t room = p.soft > reserved ? p.soft - reserved : 0;
    p.connections_max = static_cast<std::size_t>(
        std::min<std::uint64_t>(room, static_cast<std::uint64_t>(connections_max)));
    return p;
}

fd_limit_plan raise_fd_limit(std::size_t connections_max, std::size_t reserved) {
    rlimit current{};
    if (getrlimit(RLIMIT_NOFILE, &current) != 0) {
        throw std::runtime_error(std::string("cannot read the descriptor limit: ") +
                                 std::strerror(errno));
    }
    const std::uint64_t soft = from_rlim(current.rlim_cur);
    const std::uint64_t hard = from_rlim(current.rlim_max);
    fd_limit_plan p = plan_fd_limit(soft, hard, connections_max, reserved);
    if (p.soft != soft) {
        rlimit wanted = current;
        wanted.rlim_cur = p.soft == unlimited ? RLIM_INFINITY : static_cast<rlim_t>(p.soft);
        if (setrlimit(RLIMIT_NOFILE, &wanted) != 0) {
            // Beyond fs.nr_open (an unlimited hard limit): serve within the limit there is.
            p = plan_fd_limit(soft, soft, connections_max, reserved);
        }
    }
    return p;
}

}  // namespace fulltime::process

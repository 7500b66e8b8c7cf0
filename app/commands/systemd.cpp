#include "app/commands/systemd.hpp"

#include "fulltime/core/log.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace fulltime::app::systemd {

bool managed() noexcept {
    const char* id = std::getenv("INVOCATION_ID");
    return id != nullptr && *id != '\0';
}

namespace {
std::string taken_socket;  // take_notify_socket()'s, set once before any thread starts
}  // namespace

void take_notify_socket() {
    if (const char* path = std::getenv("NOTIFY_SOCKET"); path != nullptr && *path != '\0') {
        taken_socket = path;
        ::unsetenv("NOTIFY_SOCKET");
    }
}

void notify(std::string_view state) noexcept {
    const char* path = taken_socket.empty() ? std::getenv("NOTIFY_SOCKET") : taken_socket.c_str();
    if (path == nullptr || *path == '\0') {
        return;
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::size_t length = std::strlen(path);
    // A path, or "@name" for a socket in the abstract namespace (a leading NUL byte).
    if ((path[0] != '/' && path[0] != '@') || length >= sizeof address.sun_path) {
        log::debug("systemd: NOTIFY_SOCKET is neither a path nor an abstract name");
        return;
    }
    std::memcpy(address.sun_path, path, length);
    if (path[0] == '@') {
        address.sun_path[0] = '\0';
    }
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        log::debug(std::string("systemd: socket: ") + std::strerror(errno));
        return;
    }
    const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
    if (::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&address), size) < 0) {
        log::debug(std::string("systemd: notify: ") + std::strerror(errno));
    }
    ::close(fd);
}

void require_absolute_state_dir(const config& cfg) {
    if (managed() && !std::filesystem::path(cfg.state_dir).is_absolute()) {
        throw std::invalid_argument(
            "state_dir '" + cfg.state_dir +
            "' is relative, and this is a systemd unit: set an absolute state_dir (the packaged "
            "config has /var/lib/fulltime, the unit's StateDirectory)");
    }
}

}  // namespace fulltime::app::systemd

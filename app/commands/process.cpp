#include "app/commands/process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <deque>
#include <fstream>

namespace fulltime::app {

std::optional<run_as> find_user(const std::string& name) {
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (::getpwnam_r(name.c_str(), &pw, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr) {
        return std::nullopt;
    }
    return run_as{name, found->pw_uid, found->pw_gid};
}

bool running_as_root() { return ::geteuid() == 0; }

namespace {

// In the child: drops privileges to `user`. Returns false on failure.
bool drop_to(const run_as& user) {
    return ::initgroups(user.user.c_str(), static_cast<gid_t>(user.gid)) == 0 &&
           ::setgid(static_cast<gid_t>(user.gid)) == 0 &&
           ::setuid(static_cast<uid_t>(user.uid)) == 0;
}

int wait_status_exit_code(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return 127;
}

int wait_for(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return 127;
        }
    }
    return wait_status_exit_code(status);
}

}  // namespace

int spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                  const std::optional<run_as>& user, const std::vector<std::string>* env) {
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    // Built before the fork: a child of a threaded parent may only make async-signal-safe
    // calls, so it gets its environment ready-made.
    std::vector<char*> envp;
    if (env != nullptr) {
        envp.reserve(env->size() + 1);
        for (const auto& e : *env) {
            envp.push_back(const_cast<char*>(e.c_str()));
        }
        envp.push_back(nullptr);
    }

    const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        return -1;
    }
    if (user) {
        // The child writes the log after dropping privileges: let it own the file.
        [[maybe_unused]] int rc =
            ::fchown(log_fd, static_cast<uid_t>(user->uid), static_cast<gid_t>(user->gid));
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(log_fd);
        return -1;
    }
    if (pid == 0) {
        // Only async-signal-safe calls from here to exec.
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        const int null_fd = ::open("/dev/null", O_RDONLY);
        if (null_fd >= 0) {
            ::dup2(null_fd, STDIN_FILENO);
        }
        // A new process group: the postmaster must not receive the terminal's SIGINT meant for
        // the engine, which stops it in order itself.
        ::setpgid(0, 0);
        if (user && !drop_to(*user)) {
            ::_exit(126);
        }
        if (env != nullptr) {
            ::execve(args[0], args.data(), envp.data());
        } else {
            ::execv(args[0], args.data());
        }
        ::_exit(127);
    }
    ::close(log_fd);
    return pid;
}

int wait_process(int pid) { return pid < 0 ? 127 : wait_for(static_cast<pid_t>(pid)); }

std::optional<int> poll_process(int pid) {
    int status = 0;
    const pid_t done = ::waitpid(static_cast<pid_t>(pid), &status, WNOHANG);
    if (done == 0) {
        return std::nullopt;
    }
    return done < 0 ? 127 : wait_status_exit_code(status);
}

int run_process(const std::vector<std::string>& argv, const std::string& log_path,
                const std::optional<run_as>& user) {
    return wait_process(spawn_process(argv, log_path, user, nullptr));
}

bool user_can_use_directory(const run_as& user, const std::string& dir) {
    const pid_t pid = ::fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        if (!drop_to(user)) {
            ::_exit(1);
        }
        ::_exit(::access(dir.c_str(), R_OK | W_OK | X_OK) == 0 ? 0 : 1);
    }
    return wait_for(pid) == 0;
}

std::string tail_of_file(const std::string& path, int lines) {
    std::ifstream in(path);
    std::deque<std::string> last;
    std::string line;
    while (std::getline(in, line)) {
        last.push_back(line);
        if (static_cast<int>(last.size()) > lines) {
            last.pop_front();
        }
    }
    std::string out;
    for (const auto& l : last) {
        out += l + "\n";
    }
    return out;
}

}  // namespace fulltime::app

#pragma once
/// Runs helper programs (initdb, pg_ctl) as child processes, optionally as another user.
/// Blocking: used at startup and shutdown from main only.

#include <optional>
#include <string>
#include <vector>

namespace fulltime::app {

/// Names a Unix user a child process runs as.
struct run_as {
    std::string user;
    unsigned uid = 0;
    unsigned gid = 0;
};

/// Looks up a user by name; nullopt when it does not exist.
std::optional<run_as> find_user(const std::string& name);

/// Returns whether this process runs as root.
bool running_as_root();

/// Runs argv[0] (an absolute path) with argv, stdout and stderr appended to `log_path`, as
/// `user` when given (the child drops to that uid/gid before exec). Returns the exit status
/// (128 + signal when killed, 127 when exec failed).
int run_process(const std::vector<std::string>& argv, const std::string& log_path,
                const std::optional<run_as>& user);

/// Starts argv[0] (an absolute path) as run_process does, in a process group of its own, without
/// waiting for it. `env` (NAME=VALUE strings), when given, is the child's whole environment.
/// Returns the child's pid, or -1 when it could not be started.
int spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                  const std::optional<run_as>& user, const std::vector<std::string>* env);

/// Waits for a child started by spawn_process; returns its exit status as run_process does.
int wait_process(int pid);

/// Returns a child's exit status when it has exited (reaping it), else nullopt. Never blocks.
std::optional<int> poll_process(int pid);

/// Returns whether `user` can read, write and enter `dir` (checked in a child that drops to the
/// user, so every parent directory's permissions count).
bool user_can_use_directory(const run_as& user, const std::string& dir);

/// Returns the last `lines` lines of a text file (empty when it cannot be read).
std::string tail_of_file(const std::string& path, int lines);

}  // namespace fulltime::app

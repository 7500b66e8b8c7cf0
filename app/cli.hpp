#pragma once
/// The command line of the `fulltime` binary (app/cli.cpp: the one translation unit that
/// includes CLI11).

namespace fulltime::app {

/// Parses the command line, loads the configuration and runs the subcommand it names; returns
/// the exit status (app/commands/exit_status.hpp). Answers --help and --version itself; a usage
/// error is one line on stderr and 2. Throws what the subcommand throws, for main to map.
int run_command_line(int argc, char** argv);

}  // namespace fulltime::app

// The `fulltime` binary: runs the command line (app/cli.cpp) and turns every failure that
// reaches here into one line on stderr and the exit status it is (app/commands/exit_status.hpp):
// 2 usage or configuration, 1 a refusal, 3 unreachable, 4 anything else.

#include "app/cli.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/config/config.hpp"

#include <cstdio>
#include <exception>
#include <stdexcept>

int main(int argc, char** argv) {
    using namespace fulltime::app;
    try {
        return run_command_line(argc, argv);
    } catch (const fulltime::config_error& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return exit_usage;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return exit_usage;
    } catch (const refusal& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return exit_no;
    } catch (const unreachable& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return exit_unreachable;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return exit_failed;
    }
}

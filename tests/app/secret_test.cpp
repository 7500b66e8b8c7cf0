// Where the token secrets come from: the previous secret of a rollover is read like the current
// one (inline, systemd credential, file) but never generated, and `fulltime serve` refuses a
// rollover whose two secrets are the same.

#include "app/commands/secret.hpp"

#include <doctest/doctest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

using namespace fulltime::app;

namespace {

constexpr const char* current_secret = "current-secret-0123456789";
constexpr const char* previous_secret = "previous-secret-0123456789";

// A fresh directory for secret files and credentials, removed with the fixture.
struct scratch {
    scratch() {
        char name[] = "/tmp/fulltime-secret-test-XXXXXX";
        REQUIRE(::mkdtemp(name) != nullptr);
        dir = name;
    }
    ~scratch() { std::filesystem::remove_all(dir); }
    scratch(const scratch&) = delete;
    scratch& operator=(const scratch&) = delete;

    // Writes `text` to the file `name` here and returns its path.
    std::string file(const std::string& name, const std::string& text) const {
        const std::string path = dir + "/" + name;
        std::ofstream(path) << text;
        return path;
    }

    std::string dir;
};

// Sets CREDENTIALS_DIRECTORY for one scope (unset when `dir` is empty) and restores it after:
// the tests may run inside a systemd unit.
class credentials_directory {
public:
    explicit credentials_directory(const std::string& dir) {
        if (const char* v = std::getenv("CREDENTIALS_DIRECTORY")) {
            saved_ = v;
        }
        if (dir.empty()) {
            ::unsetenv("CREDENTIALS_DIRECTORY");
        } else {
            ::setenv("CREDENTIALS_DIRECTORY", dir.c_str(), 1);
        }
    }
    ~credentials_directory() {
        if (saved_) {
            ::setenv("CREDENTIALS_DIRECTORY", saved_->c_str(), 1);
        } else {
            ::unsetenv("CREDENTIALS_DIRECTORY");
        }
    }
    credentials_directory(const credentials_directory&) = delete;
    credentials_directory& operator=(const credentials_directory&) = delete;

private:
    std::optional<std::string> saved_;
};

fulltime::config config_with(const std::string& current) {
    fulltime::config c;
    c.token_secret = current;
    return c;
}

}  // namespace

TEST_CASE("secret: without a previous secret the keyring has the current one alone") {
    const credentials_directory none("");
    const auto keys = load_token_keyring(config_with(current_secret));
    CHECK(keys.current == current_secret);
    CHECK(keys.previous.empty());
    CHECK(load_previous_token_secret(config_with(current_secret)).empty());
}

TEST_CASE("secret: the previous secret comes inline, from a credential or from a file") {
    const scratch s;
    const credentials_directory none("");
    auto cfg = config_with(current_secret);
    cfg.token_secret_previous_file = s.file("previous", std::string(previous_secret) + "  \n");
    CHECK(load_token_keyring(cfg).previous == previous_secret);  // trailing blanks dropped

    {
        // systemd's credential is read before the file, as for the current secret.
        const credentials_directory creds(s.dir);
        s.file("token_secret_previous", "from-the-credential-0123\n");
        CHECK(load_previous_token_secret(cfg) == "from-the-credential-0123");
        // The current secret is still the one configured: the credentials are per name.
        CHECK(load_token_keyring(cfg).current == current_secret);
    }

    // Inline wins over both.
    cfg.token_secret_previous = "inline-previous-0123456789";
    CHECK(load_previous_token_secret(cfg) == "inline-previous-0123456789");
}

TEST_CASE("secret: a previous secret file that cannot be used stops the start") {
    const scratch s;
    const credentials_directory none("");
    auto cfg = config_with(current_secret);
    cfg.token_secret_previous_file = s.dir + "/missing";
    CHECK_THROWS_WITH_AS(load_token_keyring(cfg), doctest::Contains("token_secret_previous_file"),
                         std::runtime_error);
    cfg.token_secret_previous_file = s.file("short", "too-short\n");
    CHECK_THROWS_WITH_AS(load_token_keyring(cfg), doctest::Contains("at least 16 characters"),
                         std::runtime_error);
}

TEST_CASE("secret: a rollover whose two secrets are the same is refused") {
    const scratch s;
    const credentials_directory none("");
    auto cfg = config_with("");
    cfg.token_secret_file = s.file("current", std::string(current_secret) + "\n");
    cfg.token_secret_previous_file = s.file("previous", std::string(current_secret) + "\n");
    CHECK_THROWS_WITH_AS(load_token_keyring(cfg), doctest::Contains("the same as the current"),
                         fulltime::config_error);
    // Signing reads the current secret alone, and is not stopped by it.
    CHECK(load_or_create_token_secret(cfg) == current_secret);
}

#include "app/commands/secret.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fulltime::app {

namespace {
constexpr std::size_t secret_bytes = 32;
}

std::string random_hex(std::size_t bytes) {
    std::vector<unsigned char> raw(bytes);
    if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
        throw std::runtime_error("cannot generate a secret: no randomness");
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : raw) {
        out += hex[b >> 4];
        out += hex[b & 0xf];
    }
    return out;
}

namespace {

// The first line of `path`, without trailing blanks; throws when it cannot be read or is shorter
// than config's minimum for token_secret.
std::string read_secret_file(const std::string& path, const std::string& origin) {
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("cannot read the token secret from " + path + " (" + origin + ")");
    }
    std::string secret;
    std::getline(in, secret);
    while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) {
        secret.pop_back();
    }
    if (secret.size() < 16) {
        throw std::runtime_error("the token secret in " + path + " (" + origin +
                                 ") must be at least 16 characters on its first line");
    }
    return secret;
}

// The secret configured under `name` (token_secret or token_secret_previous): `value` from the
// configuration, else the systemd credential `name`, else the file `file` (key `name`_file);
// nullopt when none of them is set.
std::optional<std::string> configured_secret(const std::string& name, const std::string& value,
                                             const std::string& file) {
    if (!value.empty()) {
        return value;
    }
    // systemd's LoadCredential=token_secret:... (packaging/fulltime.service): the service reads
    // its copy; an operator's `fulltime token` on the same machine reads token_secret_file. A
    // missing credential is not an error: the unit names only the ones the package makes.
    if (const char* dir = std::getenv("CREDENTIALS_DIRECTORY"); dir != nullptr && *dir != '\0') {
        const std::string path = std::string(dir) + "/" + name;
        if (std::filesystem::exists(path)) {
            return read_secret_file(path, "systemd credential " + name);
        }
    }
    if (!file.empty()) {
        return read_secret_file(file, name + "_file");
    }
    return std::nullopt;
}

}  // namespace

std::string load_or_create_token_secret(const config& cfg) {
    if (auto secret = configured_secret("token_secret", cfg.token_secret, cfg.token_secret_file)) {
        return std::move(*secret);
    }
    std::error_code ec;
    std::filesystem::create_directories(cfg.state_dir, ec);
    if (ec) {
        throw std::runtime_error("cannot create state directory " + cfg.state_dir + ": " +
                                 ec.message());
    }
    const std::string path = cfg.state_dir + "/token_secret";
    {
        std::ifstream in(path);
        std::string secret;
        if (in && std::getline(in, secret) && secret.size() >= 32) {
            return secret;
        }
    }
    const std::string secret = random_hex(secret_bytes);
    // Written to a private temporary file, then linked into place: link(2) fails if the name
    // exists, so when two processes start at once exactly one secret wins and nobody ever
    // reads a half-written file.
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        throw std::runtime_error("cannot create " + tmp);
    }
    const std::string line = secret + "\n";
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                    ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) {
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot write " + tmp);
    }
    const bool linked = ::link(tmp.c_str(), path.c_str()) == 0;
    ::unlink(tmp.c_str());
    if (!linked) {
        std::ifstream in(path);
        std::string existing;
        if (in && std::getline(in, existing) && existing.size() >= 32) {
            return existing;
        }
        throw std::runtime_error("cannot create " + path);
    }
    return secret;
}

std::string load_previous_token_secret(const config& cfg) {
    // Never generated: a previous secret nobody configured could verify nothing.
    return configured_secret("token_secret_previous", cfg.token_secret_previous,
                             cfg.token_secret_previous_file)
        .value_or(std::string());
}

token::keyring load_token_keyring(const config& cfg) {
    token::keyring keys{load_or_create_token_secret(cfg), load_previous_token_secret(cfg)};
    if (!keys.previous.empty() && keys.previous == keys.current) {
        throw config_error(
            "config: the previous token secret is the same as the current one: write the new "
            "secret where token_secret is read from (docs/operations.md, \"Rotating the token "
            "secret\")");
    }
    return keys;
}

}  // namespace fulltime::app

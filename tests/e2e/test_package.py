"""The Debian package (cmake/packaging.cmake, packaging/): made with cpack from the build tree of
FULLTIME_BINARY, its control data and contents checked, its systemd unit verified, its maintainer
scripts checked without touching this machine, and the engine extracted from it run with the
packaged configuration until a bettor has placed a bet through it. The package is never
installed: its postinst creates a system user and enables a service."""

import asyncio
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import unittest

import websockets.client

from fixtures import MARKET
from harness import (BINARY, STARTUP_TIMEOUT_S, Engine, drop_database, scratch_database,
                     wait_until)
from money import assert_money_invariants

BUILD_DIR = os.path.dirname(os.path.abspath(BINARY))
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CPACK = shutil.which("cpack")
DPKG_DEB = shutil.which("dpkg-deb")
CPACK_TIMEOUT_S = 300

# What the package must hold (paths as `dpkg-deb -c` prints them) and where anything may be.
REQUIRED_FILES = {
    "./usr/bin/fulltime",
    "./etc/fulltime/fulltime.json",
    "./lib/systemd/system/fulltime.service",
    "./usr/share/doc/fulltime/README.md",
    "./usr/share/doc/fulltime/copyright",
}
ALLOWED_DIRS = ("./usr/bin/", "./etc/fulltime/", "./lib/systemd/system/",
                "./usr/share/doc/fulltime/")
MAINTAINER_SCRIPTS = ("postinst", "prerm", "postrm")
# What systemd gives a service; the test's own engine gets only NOTIFY_SOCKET, its own.
SYSTEMD_VARIABLES = ("NOTIFY_SOCKET", "CREDENTIALS_DIRECTORY", "JOURNAL_STREAM", "INVOCATION_ID",
                     "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*fulltime\s+VERSION\s+([0-9.]+)", f.read())
    assert m, "no project(fulltime VERSION ...) in CMakeLists.txt"
    return m.group(1)


def run(args, **kwargs):
    """Runs a command to completion; returns the CompletedProcess (text, both streams kept)."""
    kwargs.setdefault("timeout", 120)
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


class NotifySocket:
    """What systemd is for a Type=notify service: a datagram socket at $NOTIFY_SOCKET, each
    message one or more KEY=VALUE lines."""

    def __init__(self, path):
        self.path = path
        self.messages = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        while not self._closed:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            self.messages.append(data.decode(errors="replace"))

    def saw(self, line):
        return any(line in m.split("\n") for m in self.messages)

    def close(self):
        self._closed = True
        self._reader.join(5)
        self.sock.close()


@unittest.skipUnless(CPACK and DPKG_DEB, "needs cpack (cmake) and dpkg-deb (dpkg)")
class PackageTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="fulltime-package-")
        cls.addClassCleanup(shutil.rmtree, cls.work, True)
        config = os.path.join(BUILD_DIR, "CPackConfig.cmake")
        if not os.path.exists(config):
            raise AssertionError(f"{config} is missing: is {BUILD_DIR} the CMake build "
                                 "directory of FULLTIME_BINARY?")
        out = os.path.join(cls.work, "out")
        # -B: the package and cpack's staging tree go to the scratch directory, not build/.
        p = run([CPACK, "-G", "DEB", "--config", config, "-B", out], cwd=cls.work,
                timeout=CPACK_TIMEOUT_S)
        if p.returncode != 0:
            raise AssertionError(f"cpack failed (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
        debs = [f for f in os.listdir(out) if f.endswith(".deb")]
        if len(debs) != 1:
            raise AssertionError(f"cpack made {debs}, not one .deb:\n{p.stdout}\n{p.stderr}")
        cls.deb = os.path.join(out, debs[0])
        cls.root = os.path.join(cls.work, "root")
        cls.control = os.path.join(cls.work, "control")
        for flag, into in (("-x", cls.root), ("-e", cls.control)):
            p = run([DPKG_DEB, flag, cls.deb, into])
            if p.returncode != 0:
                raise AssertionError(f"dpkg-deb {flag} failed: {p.stderr}")

    def field(self, name):
        p = run([DPKG_DEB, "-f", self.deb, name])
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.strip()

    def test_control_fields(self):
        version = project_version()
        self.assertEqual(os.path.basename(self.deb), f"fulltime_{version}_amd64.deb")
        self.assertEqual(self.field("Package"), "fulltime")
        self.assertEqual(self.field("Version"), version)
        self.assertEqual(self.field("Architecture"), "amd64")
        self.assertEqual(self.field("Section"), "net")
        self.assertTrue(self.field("Maintainer"))
        self.assertTrue(self.field("Description"))
        depends = self.field("Depends")
        names = [re.split(r"[\s(]", d.strip())[0] for d in re.split(r"[,|]", depends)]
        for needed in ("libpq5", "libssl3", "libstdc++6", "libc6"):
            self.assertIn(needed, names, depends)
        self.assertTrue(any(n.startswith("libcaf-core") for n in names), depends)
        self.assertEqual([n for n in names if n.endswith("-dev")], [], depends)
        self.assertEqual(self.field("Recommends"), "postgresql-15")
        self.assertEqual(self.field("Suggests"), "pgbouncer")
        # The binary says the version the package does.
        p = run([os.path.join(self.root, "usr/bin/fulltime"), "version"])
        self.assertEqual((p.returncode, p.stdout.strip()), (0, f"fulltime {version}"), p.stderr)

    def test_contents(self):
        p = run([DPKG_DEB, "-c", self.deb])
        self.assertEqual(p.returncode, 0, p.stderr)
        entries = {}
        for line in p.stdout.splitlines():
            fields = line.split(None, 5)
            entries[fields[5]] = (fields[0], fields[1])
        files = {path for path, (mode, _) in entries.items() if not mode.startswith("d")}
        required = set(REQUIRED_FILES)
        if os.path.exists(os.path.join(SOURCE_DIR, "docs/operations.md")):
            required.add("./usr/share/doc/fulltime/operations.md")
        self.assertLessEqual(required, files, p.stdout)
        self.assertEqual([f for f in files if not f.startswith(ALLOWED_DIRS)], [], p.stdout)
        for path, (mode, owner) in entries.items():
            self.assertEqual(owner, "root/root", path)
        self.assertEqual(entries["./usr/bin/fulltime"][0], "-rwxr-xr-x")
        self.assertEqual(entries["./etc/fulltime/fulltime.json"][0], "-rw-r--r--")
        # Shipped stripped (cmake/packaging.cmake): no DWARF in the packaged binary.
        binary = os.path.join(self.root, "usr/bin/fulltime")
        p = run(["readelf", "-S", "-W", binary])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(".debug_info", p.stdout)
        # The packaged configuration is the repository's, and valid JSON.
        with open(os.path.join(self.root, "etc/fulltime/fulltime.json")) as f:
            packaged = json.load(f)
        with open(os.path.join(SOURCE_DIR, "packaging/fulltime.json")) as f:
            self.assertEqual(packaged, json.load(f))
        self.assertEqual(packaged["token_secret_file"], "/etc/fulltime/token_secret")
        self.assertEqual(packaged["state_dir"], "/var/lib/fulltime")

    def test_maintainer_scripts(self):
        with open(os.path.join(self.control, "conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/fulltime/fulltime.json"])
        shellcheck = shutil.which("shellcheck")
        for name in MAINTAINER_SCRIPTS:
            path = os.path.join(self.control, name)
            self.assertTrue(os.path.exists(path), f"no {name} in the package")
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o755, name)
            with open(path) as f:
                self.assertEqual(f.readline().strip(), "#!/bin/sh", name)
            p = run(["sh", "-n", path])
            self.assertEqual(p.returncode, 0, f"sh -n {name}: {p.stderr}")
            if shellcheck:
                p = run([shellcheck, "-s", "sh", path])
                self.assertEqual(p.returncode, 0, f"shellcheck {name}:\n{p.stdout}{p.stderr}")

    def test_postinst_and_postrm_in_a_scratch_root(self):
        # Not for real: DPKG_ROOT points their files at a scratch root, and PATH holds only
        # stubs for what would change this machine (users, ownership, systemd; each logs its
        # arguments) and the few harmless tools the scripts use, so a command added to a
        # script without a stub here fails the test instead of running.
        scratch = tempfile.mkdtemp(dir=self.work)
        os.makedirs(os.path.join(scratch, "etc/fulltime"))
        bin_dir = os.path.join(scratch, "bin")
        os.mkdir(bin_dir)
        calls = os.path.join(scratch, "calls")
        users = os.path.join(scratch, "users")
        os.mkdir(users)
        stubs = {
            # getent DB NAME: known once addgroup/adduser "made" it.
            "getent": f'[ -e "{users}/$1-$2" ]',
            "addgroup": f'echo "addgroup $*" >>"{calls}"; '
                        f'for a; do n="$a"; done; : >"{users}/group-$n"',
            "adduser": f'echo "adduser $*" >>"{calls}"; '
                       f'for a; do n="$a"; done; : >"{users}/passwd-$n"',
            "chown": f'echo "chown $*" >>"{calls}"',
            "systemctl": f'echo "systemctl $*" >>"{calls}"',
            # was-enabled answers from the state file a `disable` would write (the stub's).
            "deb-systemd-helper": f'echo "deb-systemd-helper $*" >>"{calls}"; '
                                  f'[ "$1" != --quiet ] || [ ! -e "{scratch}/disabled" ]',
        }
        for name, body in stubs.items():
            with open(os.path.join(bin_dir, name), "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(os.path.join(bin_dir, name), 0o755)
        for tool in ("od", "tr", "rm", "mv", "chmod", "rmdir"):
            os.symlink(shutil.which(tool), os.path.join(bin_dir, tool))
        env = {"PATH": bin_dir, "DPKG_ROOT": scratch, "LC_ALL": "C"}

        def script(name, *args):
            p = run(["/bin/sh", os.path.join(self.control, name), *args], env=env)
            self.assertEqual(p.returncode, 0, f"{name} {' '.join(args)}:\n{p.stdout}{p.stderr}")

        def logged():
            if not os.path.exists(calls):
                return []
            with open(calls) as f:
                return f.read().splitlines()

        secret_path = os.path.join(scratch, "etc/fulltime/token_secret")
        script("postinst", "configure", "")
        made = logged()
        self.assertTrue(any(c.startswith("addgroup --system") and c.endswith(" fulltime")
                            for c in made), made)
        self.assertTrue(any(c.startswith("adduser --system") and "--home /var/lib/fulltime" in c
                            and c.endswith(" fulltime") for c in made), made)
        self.assertTrue(any(re.fullmatch(r"chown root:fulltime \S+", c) for c in made), made)
        # With DPKG_ROOT set (or no systemd running) systemd itself is left alone, but the unit
        # is enabled (its symlinks made by deb-systemd-helper), so that an image built in a
        # chroot starts it at its first boot.
        self.assertEqual([c for c in made if c.startswith("systemctl")], [])
        self.assertEqual([c for c in made if c.startswith("deb-systemd-helper")],
                         ["deb-systemd-helper unmask fulltime.service",
                          "deb-systemd-helper --quiet was-enabled fulltime.service",
                          "deb-systemd-helper enable fulltime.service"])
        with open(secret_path) as f:
            secret = f.read()
        self.assertRegex(secret, r"\A[0-9a-f]{64}\n\Z")
        self.assertEqual(stat.S_IMODE(os.stat(secret_path).st_mode), 0o640)
        self.assertEqual(sorted(os.listdir(os.path.join(scratch, "etc/fulltime"))),
                         ["token_secret"])

        # Again (an upgrade, a reconfigure) after the operator disabled the unit: no new user,
        # the same secret, and it stays disabled.
        with open(os.path.join(scratch, "disabled"), "w"):
            pass
        script("postinst", "configure", "0.0.9")
        again = logged()[len(made):]
        self.assertEqual(again, ["deb-systemd-helper unmask fulltime.service",
                                 "deb-systemd-helper --quiet was-enabled fulltime.service",
                                 "deb-systemd-helper update-state fulltime.service"])
        with open(secret_path) as f:
            self.assertEqual(f.read(), secret)

        script("prerm", "remove")
        script("postrm", "remove")
        self.assertTrue(os.path.exists(secret_path))
        self.assertEqual(logged()[-1], "deb-systemd-helper mask fulltime.service")
        script("postrm", "purge")
        self.assertFalse(os.path.exists(secret_path))
        self.assertEqual(logged()[-2:], ["deb-systemd-helper purge fulltime.service",
                                         "deb-systemd-helper unmask fulltime.service"])
        self.assertFalse([c for c in logged() if c.startswith(("deluser", "delgroup"))],
                         "postrm must never remove the user")

    def test_systemd_unit_verifies(self):
        analyze = shutil.which("systemd-analyze")
        self.assertIsNotNone(analyze, "systemd-analyze is missing (package systemd)")
        # `--root` makes ExecStart's /usr/bin/fulltime resolve in the extracted package (Debian
        # 12's systemd 252 supports it for verify). The root must also hold the units every
        # service depends on (sysinit.target, ...): copies of this machine's, ours not replaced.
        vroot = os.path.join(self.work, "verify-root")
        shutil.copytree(self.root, vroot, symlinks=True)
        units = os.path.join(vroot, "lib/systemd/system")
        for host_units in sorted({os.path.realpath(d) for d in
                                  ("/lib/systemd/system", "/usr/lib/systemd/system")
                                  if os.path.isdir(d)}):
            for name in os.listdir(host_units):
                target = os.path.join(units, name)
                if not os.path.lexists(target):
                    source = os.path.join(host_units, name)
                    if os.path.islink(source):
                        os.symlink(os.readlink(source), target)
                    elif os.path.isfile(source):
                        shutil.copy2(source, target)
        p = run([analyze, "verify", "--man=no", f"--root={vroot}", "fulltime.service"])
        # Unknown keys are warnings with exit 0: the output must be empty too.
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))
        with open(os.path.join(units, "fulltime.service")) as f:
            unit = f.read()
        for line in ("Type=notify", "User=fulltime", "StateDirectory=fulltime",
                     "LoadCredential=token_secret:/etc/fulltime/token_secret",
                     "ExecStart=/usr/bin/fulltime serve --config /etc/fulltime/fulltime.json",
                     "KillMode=mixed", "WantedBy=multi-user.target"):
            self.assertIn(line, unit.splitlines())

    def test_packaged_engine_serves(self):
        db_name, db_url = scratch_database()
        self.addCleanup(drop_database, db_name)
        here = tempfile.mkdtemp(dir=self.work)
        binary = os.path.join(self.root, "usr/bin/fulltime")
        config = os.path.join(self.root, "etc/fulltime/fulltime.json")
        # The secret postinst would make (a scratch root has no /etc/fulltime/token_secret).
        secret_file = os.path.join(here, "token_secret")
        with open(secret_file, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(secret_file, 0o640)
        # The packaged config as it is, but for what a scratch root cannot provide. No other
        # FULLTIME_* (the engine refuses unknown ones, and FULLTIME_TOKEN_SECRET would win over
        # the file); none of systemd's variables from whatever runs the tests.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("FULLTIME_") and k not in SYSTEMD_VARIABLES}
        env.update({
            "FULLTIME_STATE_DIR": os.path.join(here, "state"),
            "FULLTIME_TOKEN_SECRET_FILE": secret_file,
            "FULLTIME_DATABASE_URL": db_url,
            "FULLTIME_LISTEN": "127.0.0.1:0",
            "FULLTIME_ADMIN_LISTEN": "127.0.0.1:0",
        })

        def cli(*args):
            p = run([binary, "--config", config, *args], env=env, cwd=here)
            return p.returncode, p.stdout, p.stderr

        tokens = {}
        for who, args in (("admin", ["admin", "package-test"]),
                          ("producer", ["producer", "feed-1"]),
                          ("bettor", ["account", "42"])):
            code, out, err = cli("token", *args)
            self.assertEqual(code, 0, err)
            tokens[who] = out.strip()

        notify = NotifySocket(os.path.join(here, "notify"))
        self.addCleanup(notify.close)
        engine = Engine(dict(env, NOTIFY_SOCKET=notify.path),
                        argv=[binary, "serve", "--config", config], cwd=here)  # as ExecStart
        operators = engine.operators()
        try:
            # Type=notify: systemd's start returns on READY=1, so it must come once both
            # listeners serve.
            wait_until(lambda: notify.saw("READY=1"),
                       "no READY=1 on $NOTIFY_SOCKET:\n" + engine.log(), STARTUP_TIMEOUT_S)
            engine.wait_ready()

            status, body = operators.get("/metrics")
            self.assertEqual(status, 200, body)
            self.assertIn("fulltime_", body)
            # The bettors' address serves none of the operator's routes.
            self.assertEqual(engine.get("/metrics")[0], 404)
            self.assertEqual(engine.post_json("/v1/accounts",
                                              {"account_id": 42, "currency": "EUR"},
                                              tokens["admin"])[0], 404)

            status, body = operators.post_json("/v1/feed", MARKET, tokens["producer"])
            self.assertEqual(status, 200, body)
            status, body = operators.post_json("/v1/accounts",
                                               {"account_id": 42, "currency": "EUR"},
                                               tokens["admin"])
            self.assertIn(status, (200, 201), body)
            status, body = operators.post_json("/v1/accounts/42/deposits",
                                               {"amount": "100.00", "key": "dep-1"},
                                               tokens["admin"])
            self.assertIn(status, (200, 201), body)

            async def place():
                async with websockets.client.connect(
                        f"ws://127.0.0.1:{engine.port}/v1/bets",
                        extra_headers={"Authorization": "Bearer " + tokens["bettor"]}) as ws:
                    await ws.send(json.dumps({"type": "place", "id": "c1",
                                              "idempotency_key": "pkg-1", "selection_id": 1001,
                                              "stake": "10.00", "odds": "2.50"}))
                    return json.loads(await asyncio.wait_for(ws.recv(), 10))

            placed = asyncio.run(place())
            self.assertEqual(placed["type"], "placed", placed)
            self.assertEqual(placed["balance"], {"available": "90.00", "reserved": "10.00"})

            # The operator's audit, from the package, beside the running service.
            code, out, err = cli("audit")
            self.assertEqual(code, 0, out + err)
        finally:
            code = engine.stop()
        self.assertEqual(code, 0, engine.log())
        wait_until(lambda: notify.saw("STOPPING=1"), "no STOPPING=1 on $NOTIFY_SOCKET", 5)
        # log_format json: every line the engine wrote is one JSON object.
        not_json = []
        for line in engine.lines:
            try:
                if not isinstance(json.loads(line), dict):
                    not_json.append(line)
            except ValueError:
                if line.strip():
                    not_json.append(line)
        self.assertEqual(not_json, [], "log lines that are not JSON objects")
        assert_money_invariants(self, db_url)


if __name__ == "__main__":
    unittest.main()

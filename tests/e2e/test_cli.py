"""The command line's one convention (README.md, "Exit status"), command by command: every
subcommand answers --help (exit 0, naming its options), an unknown option is a usage error (2,
one line with a hint to --help), a domain "no" is 1 and a database that cannot be reached is 3."""

import json
import os
import re
import unittest

import psycopg

from harness import database_env, drop_database, engine_env, run_cli

SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")

# Every subcommand (as its words on the command line) and the options its --help must name.
SUBCOMMANDS = {
    ("serve",): [],
    ("migrate",): ["--status", "--json"],
    ("token",): ["account", "producer", "admin"],
    ("token", "account"): ["ID", "--ttl"],
    ("token", "producer"): ["NAME", "--ttl"],
    ("token", "admin"): ["OPERATOR", "--ttl"],
    ("void-overdue",): ["--market", "--key", "--force", "--operator", "--json"],
    ("close-gap",): ["--market", "--from", "--through", "--key", "--operator", "--json"],
    ("reconcile",): ["--json"],
    ("audit",): ["--json"],
    ("partitions",): ["--keep", "--json"],
    ("project",): ["--rebuild", "--verify", "--json"],
    ("diagnose",): ["--url", "--json", "--samples"],
    ("rehearse",): ["SCENARIO", "--out", "--database-url", "--pgbouncer", "--keep"],
    ("bench-placement",): ["--host", "--port", "--connections", "--accounts", "--selections",
                           "--stakes", "--rate", "--arrivals", "--duration-s", "--json"],
    ("version",): ["--json"],
}

# Arguments that make each subcommand otherwise complete, so that the unknown option is the one
# thing wrong with the line.
COMPLETE = {
    ("token", "account"): ["42"],
    ("token", "producer"): ["feed-1"],
    ("token", "admin"): ["alice"],
    ("void-overdue",): ["--market", "1"],
    ("close-gap",): ["--market", "1", "--from", "1", "--through", "2"],
    ("rehearse",): ["scenario.json"],
}

# A database that is not there: a Unix socket directory that does not exist fails at once.
UNREACHABLE = "host=/nonexistent port=1 dbname=x connect_timeout=2"

# The commands that talk to the database, each as a whole command line.
DATABASE_COMMANDS = [["serve"], ["migrate"], ["migrate", "--status"], ["migrate", "--status", "--json"],
                     ["void-overdue", "--market", "1"],
                     ["close-gap", "--market", "1", "--from", "1", "--through", "2"], ["reconcile"], ["reconcile", "--json"],
                     ["audit"], ["audit", "--json"], ["partitions"], ["partitions", "--keep"],
                     ["project"], ["project", "--verify"], ["project", "--rebuild"]]


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*fulltime\s+VERSION\s+([0-9.]+)", f.read())
    assert m, "no project(fulltime VERSION ...) in CMakeLists.txt"
    return m.group(1)


class UsageTest(unittest.TestCase):
    """No database: --help, unknown options, missing arguments, the version."""

    def setUp(self):
        self.env = engine_env()

    def failure_line(self, err):
        """The one "fulltime: ..." line of a failure (log records may precede it)."""
        lines = [line for line in err.splitlines() if line.startswith("fulltime: ")]
        self.assertEqual(len(lines), 1, err)
        return lines[0]

    def test_every_subcommand_answers_help(self):
        for words, options in SUBCOMMANDS.items():
            for flag in ("--help", "-h"):
                with self.subTest(command=" ".join(words), flag=flag):
                    code, out, err = run_cli([*words, flag], self.env)
                    self.assertEqual(code, 0, err)
                    self.assertIn("fulltime " + " ".join(words), out)
                    for option in options:
                        self.assertIn(option, out)

    def test_the_top_level_help_lists_every_command_and_the_exit_statuses(self):
        for args in (["--help"], ["-h"], ["help"]):
            code, out, err = run_cli(args, self.env)
            self.assertEqual(code, 0, err)
            for words in SUBCOMMANDS:
                self.assertIn(words[0], out)
            self.assertIn("--config", out)
            self.assertIn("--version", out)
            self.assertRegex(out, r"3 unreachable")

    def test_help_needs_no_configuration(self):
        env = dict(self.env, FULLTIME_GATEWAY_CONNECTIONS_MAX="many")
        code, out, err = run_cli(["audit", "--help"], env)
        self.assertEqual(code, 0, err)
        code, _, err = run_cli(["audit"], env)
        self.assertEqual(code, 2, err)
        self.assertIn("is not an integer", self.failure_line(err))

    def test_an_unknown_option_is_a_usage_error_everywhere(self):
        for words in SUBCOMMANDS:
            with self.subTest(command=" ".join(words)):
                code, out, err = run_cli([*words, *COMPLETE.get(words, []), "--bogus"],
                                         self.env)
                self.assertEqual(code, 2, out + err)
                line = self.failure_line(err)
                self.assertIn("--bogus", line)
                self.assertIn("--help", line)
                self.assertEqual(out, "")

    def test_missing_and_bad_arguments_are_usage_errors(self):
        for args in ([], ["frobnicate"], ["token"], ["token", "wizard"], ["token", "account"],
                     ["token", "account", "0"], ["token", "account", "x"],
                     ["token", "admin", "alice", "--ttl", "0"], ["token", "admin"],
                     ["void-overdue"], ["void-overdue", "--market"],
                     ["void-overdue", "--market", "0"], ["void-overdue", "--market", "1.5"],
                     ["close-gap", "--market", "1"], ["close-gap", "--market", "1", "--from", "1"],
                     ["close-gap", "--market", "1", "--from", "x", "--through", "2"],
                     ["migrate", "--json"], ["project", "--rebuild", "--verify"],
                     ["diagnose", "--samples", "0"], ["diagnose", "--url", "127.0.0.1:8080"],
                     ["rehearse"], ["bench-placement", "--arrivals", "bursty"],
                     ["bench-placement", "--port", "70000"], ["serve", "extra"],
                     ["--config"]):
            with self.subTest(args=args):
                code, out, err = run_cli(args, self.env)
                self.assertEqual(code, 2, out + err)
                self.failure_line(err)
        code, _, err = run_cli(["frobnicate"], self.env)
        self.assertIn("unknown command 'frobnicate'", self.failure_line(err))
        code, _, err = run_cli(["token", "admin"], self.env)
        self.assertIn("fulltime token admin OPERATOR", self.failure_line(err))

    def test_the_version_is_the_build_s(self):
        version = project_version()
        for args in (["version"], ["--version"]):
            code, out, err = run_cli(args, self.env)
            self.assertEqual((code, out.strip()), (0, f"fulltime {version}"), err)
        code, out, err = run_cli(["version", "--json"], self.env)
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out), {"version": version})

    def test_the_engine_unreachable_is_3_for_diagnose(self):
        # Port 1 on the loopback: nothing listens there, the connect is refused at once.
        code, out, err = run_cli(["diagnose", "--url", "http://127.0.0.1:1"], self.env)
        self.assertEqual(code, 3, out + err)
        self.assertIn("cannot reach the engine at 127.0.0.1:1", self.failure_line(err))


class DatabaseTest(unittest.TestCase):
    """The domain "no" (1) and the database unreachable (3)."""

    def test_an_unreachable_database_is_3_everywhere(self):
        env = engine_env({"FULLTIME_DATABASE_URL": UNREACHABLE,
                          "FULLTIME_DATABASE_CONNECT_TIMEOUT_MS": "2000"})
        for args in DATABASE_COMMANDS:
            with self.subTest(args=args):
                code, out, err = run_cli(args, env)
                self.assertEqual(code, 3, out + err)
                lines = [line for line in err.splitlines() if line.startswith("fulltime: ")]
                self.assertEqual(len(lines), 1, err)
                self.assertIn("cannot reach the database", lines[0])

    def test_domain_no_is_1(self):
        name, url, env = database_env()
        self.addCleanup(drop_database, name)
        # A fresh database: everything pending.
        code, out, err = run_cli(["migrate", "--status", "--json"], env)
        self.assertEqual(code, 1, err)
        self.assertEqual(json.loads(out)["state"], "pending")
        code, _, err = run_cli(["migrate"], env)
        self.assertEqual(code, 0, err)
        code, out, err = run_cli(["migrate", "--status", "--json"], env)
        self.assertEqual(code, 0, err)

        # A refusal: the market is not known.
        code, out, err = run_cli(["void-overdue", "--market", "987654"], env)
        self.assertEqual(code, 1, out + err)
        self.assertEqual(json.loads(out)["code"], "unknown_market")

        # Everything holds on an empty database...
        for args in (["audit", "--json"], ["reconcile", "--json"], ["project", "--verify"]):
            code, out, err = run_cli(args, env)
            self.assertEqual(code, 0, out + err)
        code, out, err = run_cli(["partitions", "--json"], env)
        self.assertEqual(code, 0, out + err)
        self.assertIn("periods", json.loads(out))

        # ...until a balance is written without its ledger: a failed invariant and a drift.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO accounts (account_id, currency, available) "
                         "VALUES (7, 'EUR', 100)")
        code, out, err = run_cli(["audit", "--json"], env)
        self.assertEqual(code, 1, out + err)
        self.assertFalse(json.loads(out)["passed"])
        code, out, err = run_cli(["reconcile", "--json"], env)
        self.assertEqual(code, 1, out + err)


if __name__ == "__main__":
    unittest.main()

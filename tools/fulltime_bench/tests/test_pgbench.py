"""pgbench: its per-transaction log lines, its closing report, its command line."""

import os
import tempfile
import unittest

from fulltime_bench import pgbench

REPORT = """pgbench (15.10 (Debian 15.10-0+deb12u1))
transaction type: /tmp/place.pgbench
scaling factor: 1
query mode: prepared
number of clients: 32
number of threads: 2
maximum number of tries: 1
duration: 15 s
number of transactions actually processed: 45210
number of failed transactions: 3 (0.007%)
latency average = 10.601 ms
initial connection time = 25.123 ms
tps = 3014.246877 (without initial connection time)
"""


class LogTest(unittest.TestCase):
    def test_a_rate_limited_line_has_its_lag(self):
        t = pgbench.parse_log_line("3 17 2500 0 1700000000 123456 400\n")
        self.assertEqual(t, pgbench.Transaction(3, 2500, 1700000000, 123456, 400))

    def test_a_closed_loop_line_has_none(self):
        self.assertIsNone(pgbench.parse_log_line("3 17 2500 0 1700000000 123456").lag_us)

    def test_skipped_and_short_lines_are_left_out(self):
        self.assertIsNone(pgbench.parse_log_line("3 17 skipped 0 1700000000 123456 9000"))
        self.assertIsNone(pgbench.parse_log_line("3 17 2500"))

    def test_every_thread_log_of_a_directory(self):
        with tempfile.TemporaryDirectory() as d:
            for name, lines in (("pgbench_log.100", ["0 0 100 0 10 0 5", "1 0 skipped 0 10 0 5"]),
                                ("pgbench_log.100.1", ["2 0 300 0 11 0 7"]),
                                ("other.txt", ["9 9 9 9 9 9 9"])):
                with open(os.path.join(d, name), "w") as f:
                    f.write("\n".join(lines) + "\n")
            got = sorted(pgbench.transactions(d))
        self.assertEqual([t.client for t in got], [0, 2])


class ReportTest(unittest.TestCase):
    def test_the_figures_of_the_closing_report(self):
        self.assertEqual(pgbench.report(REPORT), {
            "clients": 32, "transactions": 45210, "failed": 3, "latency_avg_ms": 10.601,
            "tps": 3014.246877})

    def test_a_report_without_failures_has_no_failed_count(self):
        self.assertNotIn("failed", pgbench.report("number of clients: 1\ntps = 1.0 (x)\n"))


class CommandTest(unittest.TestCase):
    def test_open_loop_with_log_and_variables(self):
        args = pgbench.command("host=/tmp dbname=b", "s.pgbench", 16, 25, rate=300, log=True,
                               prepared=True, variables={"run": 3})
        self.assertEqual(args, ["pgbench", "-n", "-M", "prepared", "-c", "16", "-j", "2", "-T",
                                "25", "-D", "run=3", "-f", "s.pgbench", "-R", "300", "-l",
                                "host=/tmp dbname=b"])


if __name__ == "__main__":
    unittest.main()

"""Each benchmark's options keep the names and defaults its script always had; a wrong command
line ends with status 1, as the scripts' `die` did."""

import contextlib
import io
import unittest

from fulltime_bench import (common, gateway_floor, history, placement, reads, settlement,
                            settlement_governor, settlement_repeat, soak, wal_split)


def refused(parse, argv):
    """The exit status of parsing a wrong command line (its message swallowed)."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            parse(argv)
        except SystemExit as e:
            return e.code
    return None


class PlacementArgsTest(unittest.TestCase):
    def test_defaults(self):
        a = placement.parse_args([])
        self.assertEqual((a.connections, a.inflight, a.accounts, a.duration_s, a.open_percent,
                          a.fixed_rate, a.repeat_ratio, a.hot_market, a.quick),
                         (32, 8, 1000, "15", "70", "1500", "0.1", False, False))
        self.assertEqual(a.engine_pool, common.shipped("database.pools.placement.size_max"))

    def test_quick_and_hot_market(self):
        a = placement.parse_args(["--quick", "--hot-market"])
        self.assertEqual((a.duration_s, a.repeat_ratio), ("5", "0.03"))
        self.assertEqual(placement.parse_args(["--quick", "--duration-s", "7"]).duration_s, "7")

    def test_refusals(self):
        self.assertEqual(refused(placement.parse_args, ["--duration-s", "2"]), 1)
        self.assertEqual(refused(placement.parse_args, ["--connections", "36"]), 1)  # 288 > 280
        self.assertEqual(refused(placement.parse_args, ["--conn", "2"]), 1)  # no abbreviations
        self.assertEqual(refused(placement.parse_args, ["--nope"]), 1)


class SettlementArgsTest(unittest.TestCase):
    def test_defaults(self):
        a = settlement.parse_args([])
        self.assertEqual((a.accounts, a.bets, a.placement_rate, a.arrivals, a.before_s,
                          a.control_rate, a.batch_size, a.lanes, a.control_read_model),
                         (10000, 100000, 300, "poisson", 10, "0", None, None, None))

    def test_read_model_choices(self):
        self.assertEqual(settlement.parse_args(["--control-read-model"]).control_read_model, "1")
        self.assertEqual(settlement.parse_args(["--control-without-read-model"])
                         .control_read_model, "0")

    def test_refusals(self):
        for argv in (["--bets", "0"], ["--bets", "1e5"], ["--arrivals", "even"],
                     ["--budget-factor", "x"], ["--budget-factor", "2", "--budget-ms", "5"],
                     ["--budget-percent", "150", "--budget-ms", "5"],
                     ["--budget-percent", "99"], ["--accounts", "15"]):
            self.assertEqual(refused(settlement.parse_args, argv), 1, argv)


class RunnersArgsTest(unittest.TestCase):
    def test_repeat_passes_what_it_does_not_know(self):
        a = settlement_repeat.parse_args(["--bets", "20000", "--runs", "2", "--before-s", "3"])
        self.assertEqual((a.runs, a.out_dir, a.passed), (2, None, ["--bets", "20000",
                                                                   "--before-s", "3"]))
        self.assertEqual(settlement_repeat.parse_args([]).runs, 5)
        self.assertEqual(refused(settlement_repeat.parse_args, ["--svg", "x.svg"]), 1)
        self.assertEqual(refused(settlement_repeat.parse_args, ["--runs", "0"]), 1)

    def test_governor(self):
        a = settlement_governor.parse_args(["--bets", "20000"])
        self.assertEqual((a.budget_percent, a.passed), (150, ["--bets", "20000"]))
        self.assertEqual(refused(settlement_governor.parse_args, ["--control-rate", "5"]), 1)

    def test_reads_quick_sizes_unless_given(self):
        a = reads.parse_args([])
        self.assertEqual((a.accounts, a.bets_per_account, a.reads, a.connections, a.repeat,
                          a.place_duration_s, a.place_connections, a.place_inflight),
                         (200, 100, 20000, 16, 3, "10", 32, 8))
        a = reads.parse_args(["--quick", "--reads", "500"])
        self.assertEqual((a.accounts, a.bets_per_account, a.reads, a.connections, a.repeat,
                          a.place_duration_s), (20, 60, 500, 8, 1, "4"))
        self.assertEqual(refused(reads.parse_args, ["--connections", "300"]), 1)

    def test_history_floor_soak_wal_split(self):
        a = history.parse_args([])
        self.assertEqual((a.accounts, a.legs, a.open_legs, a.runs), (10000, 50, 10, 5))
        a = gateway_floor.parse_args([])
        self.assertEqual((a.rate, a.duration_s), ("1500", "8"))
        self.assertEqual(soak.parse_args(["--seed", "7", "--ops", "20"]),
                         ["--ops", "20", "--seed", "7"])
        self.assertEqual(refused(soak.parse_args, []), 1)
        self.assertEqual(refused(soak.parse_args, ["--seeds", "-1"]), 1)
        self.assertEqual(refused(wal_split.main, ["url", "dir", "0/1"]), 1)
        self.assertEqual(refused(wal_split.main, ["url", "dir", "0/1", "0/2", "0"]), 1)


if __name__ == "__main__":
    unittest.main()

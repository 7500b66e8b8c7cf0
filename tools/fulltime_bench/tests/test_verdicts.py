"""verdicts: every target met at its bound and not met past it, with the figures."""

import unittest

from fulltime_bench import verdicts


class PlacementTargetsTest(unittest.TestCase):
    def test_engine_over_ceiling_at_least_three(self):
        self.assertEqual(verdicts.placement_over_ceiling(3000, 1000), (True, 3.0, 3.0))
        self.assertFalse(verdicts.placement_over_ceiling(2999, 1000).met)

    def test_cpu_at_most_forty_microseconds(self):
        self.assertTrue(verdicts.placement_cpu(40.0).met)
        self.assertFalse(verdicts.placement_cpu(40.1).met)

    def test_open_loop_p99_no_worse_than_pgbench(self):
        self.assertTrue(verdicts.placement_open_loop_p99(5.0, 5.0).met)
        self.assertFalse(verdicts.placement_open_loop_p99(5.1, 5.0).met)

    def test_one_statement_ratio_at_most_one_and_a_half(self):
        v = verdicts.placement_one_statement_p99(3.0, 2.0)
        self.assertEqual(v, (True, 1.5, 1.5))
        self.assertFalse(verdicts.placement_one_statement_p99(3.1, 2.0).met)
        self.assertIsNone(verdicts.placement_one_statement_p99(3.0, 0.0))

    def test_words(self):
        self.assertEqual(verdicts.word(verdicts.at_least(1, 1)), "met")
        self.assertEqual(verdicts.word(verdicts.at_least(0, 1), "MET", "NOT MET"), "NOT MET")


class SettlementTargetsTest(unittest.TestCase):
    def test_throughput_depends_on_the_governor(self):
        self.assertTrue(verdicts.settlement_throughput(1.0, governed=False).met)
        self.assertFalse(verdicts.settlement_throughput(0.99, governed=False).met)
        self.assertTrue(verdicts.settlement_throughput(0.3, governed=True).met)
        self.assertFalse(verdicts.settlement_throughput(0.29, governed=True).met)

    def test_p99_ratios(self):
        self.assertTrue(verdicts.settlement_p99_governed(1.5).met)
        self.assertFalse(verdicts.settlement_p99_governed(1.51).met)
        self.assertEqual(verdicts.settlement_p99_against_control(2.0, 2.5), (True, 2.0, 2.5))
        self.assertFalse(verdicts.settlement_p99_against_control(2.6, 2.5).met)

    def test_wal_forty_percent_under_1901_bytes(self):
        self.assertTrue(verdicts.settlement_wal(1140).met)   # 1901 x 0.6 = 1140.6
        self.assertFalse(verdicts.settlement_wal(1141).met)
        self.assertAlmostEqual(verdicts.wal_change_percent(1140.6), -40.0)

    def test_governor_off_and_on_from_json_lines(self):
        run = {"ratio_to_baseline": 1.2, "p99_ratio": 3.0, "control_p99_ratio": 2.0}
        throughput, p99 = verdicts.governor_off(run)
        self.assertTrue(throughput.met)
        self.assertFalse(p99.met)
        self.assertEqual(verdicts.governor_off({"ratio_to_baseline": None, "p99_ratio": None,
                                                "control_p99_ratio": None}), (None, None))
        p99, throughput = verdicts.governor_on({"ratio_to_baseline": 0.4, "p99_ratio": 1.2})
        self.assertTrue(p99.met and throughput.met)
        self.assertIsNone(verdicts.governor_on({"ratio_to_baseline": 0.4, "p99_ratio": None}))


def run(ratio, eng_ratio, ctl_ratio, eng_p99=10.0, ctl_p99=9.0):
    return {"ratio_to_baseline": ratio, "p99_ratio": eng_ratio, "control_p99_ratio": ctl_ratio,
            "p99_settling_ms": eng_p99, "control_p99_during_ms": ctl_p99,
            "engine_bets_per_s": 1000.0, "control_bets_per_s": 900.0}


class RepeatJudgementTest(unittest.TestCase):
    def test_medians_decide_where_single_runs_disagree(self):
        runs = [run(1.1, 5.0, 6.0), run(0.9, 8.0, 6.0), run(1.2, 5.5, 6.0)]
        medians, v, each = verdicts.repeat_judgement(runs)
        self.assertEqual(medians["engine/base"], 1.1)
        self.assertEqual(medians["eng ratio"], 5.5)
        self.assertTrue(v["throughput"].met)
        self.assertTrue(v["p99"].met)
        self.assertEqual(each, {"throughput": 2, "p99": 2, "gap": 0})
        self.assertAlmostEqual(medians["eng-ctl ms"], 1.0)
        self.assertAlmostEqual(medians["ctl/engine"], 0.9)

    def test_even_count_takes_the_mean_of_the_middle_two(self):
        medians, v, _ = verdicts.repeat_judgement([run(0.8, 7.0, 6.0), run(1.1, 5.0, 6.0)])
        self.assertAlmostEqual(medians["engine/base"], 0.95)
        self.assertFalse(v["throughput"].met)
        self.assertTrue(v["p99"].met)  # 6.0 against 6.0

    def test_missing_figures_give_no_verdict(self):
        medians, v, each = verdicts.repeat_judgement([run(None, None, 6.0, eng_p99=None)])
        self.assertEqual(v, {"throughput": None, "p99": None})
        self.assertIsNone(medians["eng-ctl ms"])
        self.assertEqual(each["throughput"], 0)


class HistoryTargetTest(unittest.TestCase):
    def test_ten_times_the_history_at_most_one_and_a_half_times_the_time(self):
        self.assertEqual(verdicts.history_closed(150, 100), (True, 1.5, 1.5))
        self.assertFalse(verdicts.history_closed(151, 100).met)


if __name__ == "__main__":
    unittest.main()

"""The pure parts of the benchmarks' figures: the placement benchmark's mix, open loops and CPU;
the settlement benchmark's windows, control rows, series rows and drawing."""

import unittest
from types import SimpleNamespace

from fulltime_bench import pgbench, placement, settlement_report, svg


class PlacementFiguresTest(unittest.TestCase):
    def test_the_hot_market_mix(self):
        m = placement.mix(SimpleNamespace(hot_market=True, repeat_ratio="0.03"))
        weights = m["selections"].split(",")
        self.assertEqual(weights[:3], ["11:10", "12:10", "13:10"])
        self.assertEqual(len(weights), 3 + 19 * 2)
        self.assertEqual(weights[3], "21:1.842105")  # 70 % over 38 selections
        self.assertEqual(weights[-1], "202:1.842105")
        self.assertEqual(m["ppm"], 30000)
        self.assertEqual(m["draw"]["script"], "placement_draw_hot.pgbench")
        self.assertIn("0.03 repeated requests", m["text"])

    def test_the_single_market_mix(self):
        m = placement.mix(SimpleNamespace(hot_market=False, repeat_ratio="0.1"))
        self.assertEqual((m["selections"], m["stakes"], m["ppm"]), ("11:1", "1.00:1", 100000))
        self.assertEqual(m["text"], "one market, one selection, stake 1.00, 0.1 repeated requests")

    def test_open_loop_from_the_schedule_after_the_warmup(self):
        # Scheduled at completion less latency: 0 s, 1 s, 2 s, 3 s; the first second left out.
        txs = [pgbench.Transaction(0, lat, 100 + s, 0, lag) for s, lat, lag in
               ((0, 9000, 0), (1, 2000, 500), (2, 4000, 3000), (3, 1000, 2000))]
        r = placement.open_loop(txs, duration_s=4, warmup_s=1)
        self.assertEqual(r["rate"], 3 / 3)
        self.assertEqual(r["latency_ms"], {"p50": 2.0, "p99": 2.0, "p999": 2.0, "max": 4.0})
        self.assertEqual(r["lag_ms"]["max"], 3.0)
        self.assertEqual(r["lag_over_latency"], 1)  # 2 ms of lag in a 1 ms latency

    def test_cpu_between_two_samples(self):
        c = placement.cpu(((10.0, 0, 100, 1000, 50), (12.0, 100, 300, 1400, 150)), 1000, 100)
        self.assertEqual(c["wall_s"], 2.0)
        self.assertEqual((c["engine_cores"], c["postgres_cores"], c["machine_cores"],
                          c["client_cores"]), (0.5, 1.0, 2.0, 0.5))
        self.assertEqual((c["engine_us_per_op"], c["client_us_per_op"]), (1000.0, 1000.0))


def samples():
    # (scheduled unix s, latency ms, send lag ms, outcome) per market
    return {2: [(100.0, 1.0, 0.1, "placed"), (100.5, 3.0, 0.2, "placed"),
                (101.0, 2.0, 0.1, "rejected x")],
            3: [(100.2, 5.0, 1.0, "placed")]}


class SettlementFiguresTest(unittest.TestCase):
    def test_a_window_cut_by_scheduled_time(self):
        got = settlement_report.cut(samples(), 100.0, 101.0)
        self.assertEqual(got[2], {"replies": 2, "outcomes": {"placed": 2},
                                  "latency_ms": {"p50": 3.0, "p99": 3.0, "p999": 3.0,
                                                 "max": 3.0}})
        self.assertEqual(got[3]["replies"], 1)
        self.assertEqual(settlement_report.cut(samples(), 200, 300), {2: None, 3: None})

    def test_the_worse_market(self):
        rows = [(1.0, 0, 2), (2.0, 0, 2), (9.0, 0, 3)]
        self.assertEqual(settlement_report.worse_market(rows, 0.5), 9.0)
        self.assertEqual(settlement_report.worse_market(rows[:2], 0.5), 2.0)

    def test_control_rows_from_pgbench(self):
        rows = settlement_report.control_rows([pgbench.Transaction(5, 2500, 100, 500000, 300),
                                               pgbench.Transaction(4, 1000, 100, 0, None)])
        self.assertEqual(rows[0], (100.5 - 0.0025, 2.5, 3, 0.3))
        self.assertEqual(rows[1][2:], (2, 0.0))

    def test_a_series_row_with_rates_since_the_previous(self):
        prev = ["1.000", "none", "500", "1000", "0.5", "2", "1.0", "10", "0.004", "500", "0",
                "0", "-", "0"]
        row = ["1.500", "none", "900", "1500", "?", "2", "1.5", "20", "-1", "400", "0.01", "1",
               "bets", "1"]
        text = settlement_report.series_row(row, prev)
        self.assertEqual(text.split(), ["1.5", "none", "900", "1500", "1000", "50", "?", "2", "-",
                                        "400", "10", "yes", "bets", "floor"])


class SvgTest(unittest.TestCase):
    def test_the_settlement_drawing(self):
        text = svg.settlement([(0.0, 2.0, None), (0.5, None, 800.0), (1.0, 3.0, 900.0)],
                              "settlement of 10 bets, governor off", 0.8, 0, 2.5)
        self.assertTrue(text.startswith("<svg ") and text.endswith("</svg>\n"))
        self.assertIn("settlement of 10 bets, governor off", text)
        self.assertIn("p99 before", text)
        self.assertNotIn(">budget<", text)
        self.assertEqual(text.count("<polyline"), 3)  # the p99 line has a gap


if __name__ == "__main__":
    unittest.main()

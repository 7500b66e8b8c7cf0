"""metrics: reading saved scrapes of /metrics."""

import unittest

from fulltime_bench import metrics


def stage_scrape(counts):
    """A scrape with fulltime_placement_stage_seconds buckets: {stage: [(le, cumulative)]}."""
    lines = ["# HELP fulltime_placement_stage_seconds where a placement's time went",
             "# TYPE fulltime_placement_stage_seconds histogram"]
    for stage, buckets in counts.items():
        for le, n in buckets:
            lines.append(f'fulltime_placement_stage_seconds_bucket{{stage="{stage}",le="{le}"}} {n}')
    return "\n".join(lines) + "\n"


SCRAPE = """# TYPE fulltime_settlement_steps_total counter
fulltime_settlement_steps_total{status="batch"} 42
fulltime_settlement_steps_total{status="failed"} 1
fulltime_settlement_pushes_total 7
fulltime_projector_caught_up 1
fulltime_standby_staleness_seconds 0.25
fulltime_reads_total{target="primary",route="fresh"} 10
fulltime_reads_total{target="standby",route="fresh"} 90
fulltime_placement_latency_seconds_bucket{le="0.001"} 5
fulltime_placement_latency_seconds_bucket{le="0.01"} 9
fulltime_placement_latency_seconds_bucket{le="+Inf"} 10
"""


class SeriesTest(unittest.TestCase):
    def test_values_by_name_and_labels(self):
        self.assertEqual(metrics.value(SCRAPE, "fulltime_settlement_steps_total",
                                       'status="batch"'), "42")
        self.assertEqual(metrics.value(SCRAPE, "fulltime_settlement_pushes_total"), "7")
        self.assertEqual(metrics.value(SCRAPE, "fulltime_nothing"), "?")
        self.assertEqual(metrics.values(SCRAPE, "fulltime_projector_caught_up", "x"), ["1", "?"])

    def test_gauge_counter_and_routes(self):
        self.assertEqual(metrics.gauge(SCRAPE, "fulltime_standby_staleness_seconds"), 0.25)
        self.assertIsNone(metrics.gauge(SCRAPE, "fulltime_standby_up"))
        self.assertEqual(metrics.counter(SCRAPE, "fulltime_settlement_steps_total"), 43)
        self.assertEqual(metrics.counter(SCRAPE, "fulltime_nothing_total"), 0)
        self.assertEqual(metrics.reads_by_route(SCRAPE),
                         {"primary/fresh": 10.0, "standby/fresh": 90.0})

    def test_an_empty_scrape_has_nothing(self):
        self.assertEqual(metrics.value("", "fulltime_settlement_pushes_total"), "?")
        self.assertEqual(metrics.buckets("", "fulltime_placement_latency_seconds"), [])


class HistogramTest(unittest.TestCase):
    def test_quantile_between_two_scrapes_is_a_bucket_bound_in_ms(self):
        before = metrics.buckets(SCRAPE, "fulltime_placement_latency_seconds")
        after = [(0.001, 5), (0.01, 59), (float("inf"), 110)]
        self.assertEqual(metrics.bucket_quantile(before, after, 0.5), (10.0, 100))
        self.assertEqual(metrics.bucket_quantile(before, after, 0.99), (float("inf"), 100))
        self.assertEqual(metrics.bucket_quantile(after, after, 0.5), (None, 0))

    def test_stages_between_two_scrapes(self):
        a = stage_scrape({"queue": [("0.001", 10), ("0.01", 10), ("+Inf", 10)]})
        b = stage_scrape({"queue": [("0.001", 60), ("0.01", 109), ("+Inf", 110)],
                          "parse": [("0.001", 100), ("+Inf", 100)],
                          "reply": [("0.001", 0), ("+Inf", 0)]})
        st = metrics.stages(a, b)
        self.assertEqual(st["queue"], {"n": 100, "p50_ms": 1.0, "p99_ms": 10.0})
        self.assertEqual(st["parse"], {"n": 100, "p50_ms": 1.0, "p99_ms": 1.0})
        self.assertNotIn("reply", st)  # nothing observed
        self.assertEqual(metrics.stages_line(st), "parse 1/1, queue 1/10")
        self.assertEqual(metrics.stages_line({}), "n/a")


if __name__ == "__main__":
    unittest.main()

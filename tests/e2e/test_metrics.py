"""GET /metrics against docs/metrics.md: every family the engine exports is in the reference,
and every family the reference says is always there is exported; the families are in base
units, without lifetime quantile gauges. The engine has placed a bet and taken feed calls
first, so that the series that appear as they occur (HTTP routes, histograms) exist."""

import os
import re
import sys
import urllib.request

from fixtures import MARKET
from harness import Engine, EngineTestCase, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "monitoring"))
import metrics_doc  # noqa: E402

TYPE_LINE = re.compile(
    r"^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$", re.MULTILINE)
SAMPLE_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", re.MULTILINE)


def scrape(engine):
    with urllib.request.urlopen(engine.url("/metrics"), timeout=10) as r:
        return r.read().decode()


def exported_families(text):
    """{name: type} from the # TYPE lines; fails on a sample outside its family's header."""
    types = dict((m.group(1), m.group(2)) for m in TYPE_LINE.finditer(text))
    for m in SAMPLE_LINE.finditer(text):
        if metrics_doc.family_of(m.group(1), {n: (t,) for n, t in types.items()}) not in types:
            raise AssertionError(f"sample without a # TYPE line: {m.group(0)}")
    return types


class MetricsReferenceTest(EngineTestCase):
    def test_metrics_match_the_reference_in_docs(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.open_accounts(engine, [42], "100.00")
            self.place_bet(engine, self.token("account", "42"))

            # The peak sampler's families come with its first sample that read the database;
            # the feed POSTs' durations once their responses were written.
            def complete():
                text = scrape(engine)
                return text if ("\nfulltime_db_lock_waiting_sessions " in text and
                                'fulltime_http_request_duration_seconds_count{route="feed",'
                                in text) else None

            text = wait_until(complete, "no peak sample or no feed request duration in /metrics")
            exported = exported_families(text)
            documented = metrics_doc.families()

            self.assertEqual(sorted(set(exported) - set(documented)), [],
                             "exported but not in docs/metrics.md")
            always = {n for n, (_, when) in documented.items() if when == "always"}
            self.assertEqual(sorted(always - set(exported)), [],
                             "docs/metrics.md says always, but not exported")
            for name, kind in exported.items():
                self.assertEqual(kind, documented[name][0], f"{name}: type in docs/metrics.md")

            # Base units and no lifetime quantiles.
            for name in exported:
                self.assertNotRegex(name, r"_(milliseconds|microseconds|ms|us|p50|p99)$")
            self.assertRegex(text, r'\nfulltime_build_info\{version="[0-9][^"]*"\} 1\n')
            self.assertRegex(text, r"\nprocess_start_time_seconds [0-9.e+]+\n")
            self.assertIn('fulltime_placement_latency_seconds_count 1\n', text)
            self.assertIn('fulltime_db_pool_acquire_wait_seconds_bucket{pool="placement",le="+Inf"}',
                          text)
        finally:
            engine.stop()

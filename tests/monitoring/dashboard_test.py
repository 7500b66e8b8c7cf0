"""config/grafana-dashboard.json is well-formed and, with config/alerts.yml, queries only
metrics docs/metrics.md lists. Needs no engine: run by CTest (label "monitoring")."""

import json
import os
import re
import unittest

import metrics_doc

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def dashboard_exprs(path):
    with open(path, encoding="utf-8") as f:
        board = json.load(f)
    exprs = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            exprs.append(target["expr"])
    for variable in board.get("templating", {}).get("list", []):
        query = variable.get("query")
        if isinstance(query, dict):
            exprs.append(re.sub(r"label_values\(([^,)]+).*", r"\1", query["query"]))
    return board, exprs


def alert_exprs(path):
    """Each rule's expr: a one-line value or a `|` block, without a YAML parser."""
    exprs = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)expr:\s*(.*)$", lines[i])
        i += 1
        if not m:
            continue
        if m.group(2) not in ("|", ">", "|-", ">-"):
            exprs.append(m.group(2))
            continue
        block = []
        while i < len(lines) and (not lines[i].strip() or
                                  len(lines[i]) - len(lines[i].lstrip()) > len(m.group(1))):
            block.append(lines[i])
            i += 1
        exprs.append("\n".join(block))
    return exprs


class MonitoringFilesTest(unittest.TestCase):
    def setUp(self):
        self.known = metrics_doc.families()

    def unknown(self, exprs):
        missing = set()
        for expr in exprs:
            for name in metrics_doc.promql_metric_names(expr):
                if name in metrics_doc.PROMETHEUS_OWN:
                    continue
                if metrics_doc.family_of(name, self.known) not in self.known:
                    missing.add(name)
        return missing

    def test_the_dashboard_is_grafana_json_with_panels_and_queries(self):
        board, exprs = dashboard_exprs(os.path.join(ROOT, "config", "grafana-dashboard.json"))
        self.assertEqual(board["uid"], "fulltime-engine")
        self.assertGreaterEqual(len(board["panels"]), 10)
        ids = [p["id"] for p in board["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids must be unique")
        self.assertTrue(all(p.get("targets") for p in board["panels"]), "a panel without a query")
        self.assertTrue(any("histogram_quantile" in e for e in exprs))

    def test_the_dashboard_queries_only_documented_metrics(self):
        _, exprs = dashboard_exprs(os.path.join(ROOT, "config", "grafana-dashboard.json"))
        self.assertEqual(self.unknown(exprs), set())

    def test_the_alerts_query_only_documented_metrics(self):
        exprs = alert_exprs(os.path.join(ROOT, "config", "alerts.yml"))
        self.assertGreaterEqual(len(exprs), 7)
        self.assertEqual(self.unknown(exprs), set())

    def test_the_parser_sees_names_and_not_functions_or_labels(self):
        self.assertEqual(metrics_doc.promql_metric_names(
            'histogram_quantile(0.99, sum by (pool, le) (rate(a_bucket{pool="x y"}[5m]))) > 0.05'
            ' and on (instance) b / 2^30'), {"a_bucket", "b"})
        self.assertEqual(self.unknown(["fulltime_no_such_metric_total"]),
                         {"fulltime_no_such_metric_total"})


if __name__ == "__main__":
    unittest.main()

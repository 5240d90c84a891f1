#!/usr/bin/python3
"""docs/metrics.md lists every series the daemon emits (and no series it
does not), with the type the daemon gives it; every expression of the
example Grafana dashboard (docs/grafana/hyperoffload-dashboard.json,
valid JSON) names only series the daemon emits.  The series are read from
a real daemon with a live replaying session, so the per-session and
per-job families are there too."""

import json
import os
import re
import time
import unittest

import opstest

DOC = os.path.join(opstest.SOURCE_DIR, "docs", "metrics.md")
DASH = os.path.join(opstest.SOURCE_DIR, "docs", "grafana",
                    "hyperoffload-dashboard.json")


def documented():
    """{name: type} from the table of docs/metrics.md."""
    rows = {}
    for line in opstest.read(DOC).splitlines():
        m = re.match(r"^\| `(hyperoffload_[a-z0-9_]+)` \| (\w+) \|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def emitted(text):
    """{name: type} from the # TYPE lines of a Prometheus text."""
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M)}


class MetricsDocsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        s = opstest.Scratch()
        d = opstest.Daemon(s)
        client = opstest.start_client(d, s, steps=400)
        try:
            deadline = time.time() + 120
            while True:
                text = d.metrics_text()
                if "hyperoffload_session_replay_steps_total{" in text:
                    break
                if time.time() > deadline or client.poll() is not None:
                    raise AssertionError("no replaying session seen:\n"
                                         + opstest.read(s.path(
                                             "client.log")))
                time.sleep(0.2)
        finally:
            client.kill()
            client.wait()
            d.stop()
            s.close()
        cls.text = text
        cls.series = emitted(text)
        opstest.parse(text)   # and it parses

    def test_every_series_documented(self):
        doc = documented()
        self.assertGreater(len(self.series), 40)
        missing = sorted(set(self.series) - set(doc))
        self.assertEqual(missing, [], "emitted but not in docs/metrics.md")
        stale = sorted(set(doc) - set(self.series))
        self.assertEqual(stale, [], "in docs/metrics.md but not emitted")
        for name, typ in self.series.items():
            self.assertEqual(doc[name], typ, name)
            if typ == "counter":
                self.assertTrue(name.endswith("_total"), name)

    def test_dashboard_names_real_series(self):
        with open(DASH, encoding="utf-8") as f:
            dash = json.load(f)
        exprs = []

        def walk(x):
            if isinstance(x, dict):
                if isinstance(x.get("expr"), str):
                    exprs.append(x["expr"])
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
        walk(dash)
        self.assertGreaterEqual(len(exprs), 8)
        used = set()
        for e in exprs:
            names = set(re.findall(r"\bhyperoffload_[a-z0-9_]+", e))
            self.assertTrue(names, "expression without a series: " + e)
            for n in names:
                self.assertIn(n, self.series, "dashboard expression %r" % e)
            used |= names
        # the dashboard covers each area
        for area in ("tier_", "device_", "job_", "link_", "errors_total",
                     "plan_cache", "admission_", "region"):
            self.assertTrue(any(area in n for n in used), area)


if __name__ == "__main__":
    unittest.main(verbosity=2)

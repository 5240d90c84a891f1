#!/usr/bin/python3
"""The daemon's metrics (docs/metrics.md) against a real daemon, a real
session that allocates (libhyperoffload through the Python binding) and a
real replaying ho-demo-client: specific series take specific values, and
grow when the replay moves bytes.  `hoctl metrics` is the exit used."""

import os
import re
import signal
import time
import unittest

import opstest
from opstest import value

import hyperoffload.binding as hob

MiB = 1 << 20


class MetricsTest(unittest.TestCase):
    def setUp(self):
        self.s = opstest.Scratch()
        self.d = opstest.Daemon(self.s)

    def tearDown(self):
        rc = self.d.stop()
        self.s.close()
        self.assertEqual(rc, 0)

    def test_idle_daemon(self):
        m = self.d.metrics()
        self.assertEqual(value(m, "hyperoffload_build_info"), 1)
        self.assertEqual(value(m, "hyperoffload_tier_capacity_bytes",
                               tier="ddr"), 256 * MiB)
        self.assertEqual(value(m, "hyperoffload_tier_capacity_bytes",
                               tier="flash"), 64 * MiB)
        self.assertEqual(value(m, "hyperoffload_device_hbm_capacity_bytes",
                               device=1), 1 << 30)
        self.assertEqual(value(m, "hyperoffload_sessions"), 0)
        self.assertEqual(value(m, "hyperoffload_connections"), 1)  # hoctl
        self.assertGreater(value(m, "hyperoffload_uptime_seconds"), 0)
        # every HO_E_* code is present, at 0
        self.assertEqual(value(m, "hyperoffload_errors_total",
                               code="HO_E_QUOTA"), 0)
        header = opstest.read(os.path.join(
            opstest.SOURCE_DIR, "client", "include", "hyperoffload",
            "errors.h"))
        names = re.findall(r"XX\((\w+), -\d+,", header)
        self.assertGreater(len(names), 20)
        self.assertEqual(sorted(ls["code"] for ls, _ in
                                m["hyperoffload_errors_total"]
                                if ls["code"].startswith("HO_E_")),
                         sorted("HO_E_" + n for n in names))

    def test_allocation_and_quota_refusal(self):
        with hob.Client.connect(self.d.sock, "ops-alloc") as c:
            c.register(job="alloc", device=1, hbm_budget=64 * MiB)
            c.extent_alloc(3 * MiB)
            m = self.d.metrics()
            sid = str(c.session_id)
            self.assertEqual(value(m, "hyperoffload_sessions"), 1)
            self.assertEqual(value(m, "hyperoffload_session_ddr_bytes",
                                   session=sid, client="ops-alloc",
                                   ho_job="alloc"), 3 * MiB)
            self.assertEqual(value(m, "hyperoffload_session_allocated_"
                                   "bytes_total", session=sid), 3 * MiB)
            self.assertEqual(value(m, "hyperoffload_session_hbm_granted_"
                                   "bytes", session=sid), 64 * MiB)
            self.assertEqual(value(m, "hyperoffload_tier_used_bytes",
                                   tier="ddr"), 3 * MiB)
            self.assertEqual(value(m, "hyperoffload_tier_extents",
                                   tier="ddr"), 1)
            self.assertEqual(value(m, "hyperoffload_device_hbm_granted_"
                                   "bytes", device=1), 64 * MiB)
            self.assertEqual(value(m, "hyperoffload_job_ddr_bytes",
                                   ho_job="alloc"), 3 * MiB)
            self.assertEqual(value(m, "hyperoffload_admission_decisions_"
                                   "total", request="register",
                                   decision="admitted"), 1)
            self.assertEqual(value(m, "hyperoffload_admission_decisions_"
                                   "total", request="alloc",
                                   decision="admitted"), 1)
            # a DDR quota of 4 MiB: 2 MiB more is refused
            self.d.hoctl("quota", "set", "--job", "alloc", "--tier", "ddr",
                         "4M")
            with self.assertRaises(hob.HoError):
                c.extent_alloc(2 * MiB)
            m = self.d.metrics()
            self.assertEqual(value(m, "hyperoffload_errors_total",
                                   code="HO_E_QUOTA"), 1)
            self.assertEqual(value(m, "hyperoffload_quota_refusals_total",
                                   tier="ddr"), 1)
            self.assertEqual(value(m, "hyperoffload_admission_decisions_"
                                   "total", request="alloc",
                                   decision="refused"), 1)
            self.assertEqual(value(m, "hyperoffload_session_ddr_bytes",
                                   session=sid), 3 * MiB)
        m = self.d.metrics()
        # the session ended: its series are gone, its job keeps the totals
        self.assertNotIn(sid, [ls["session"] for ls, _ in
                               m.get("hyperoffload_session_ddr_bytes", [])])
        self.assertEqual(value(m, "hyperoffload_job_sessions_ended_total",
                               ho_job="alloc"), 1)
        self.assertEqual(value(m, "hyperoffload_job_allocated_bytes_total",
                               ho_job="alloc"), 3 * MiB)
        self.assertEqual(value(m, "hyperoffload_tier_used_bytes",
                               tier="ddr"), 0)

    def test_replay_moves_bytes(self):
        m0 = self.d.metrics()
        self.assertEqual(value(m0, "hyperoffload_link_moved_bytes_total",
                               link="h2d"), 0)
        p = opstest.start_client(self.d, self.s, steps=4)
        self.assertEqual(p.wait(300), 0, opstest.read(self.s.path(
            "client.log")))
        m = self.d.metrics()
        h2d = value(m, "hyperoffload_job_moved_bytes_total", ho_job="ops",
                    direction="h2d")
        d2h = value(m, "hyperoffload_job_moved_bytes_total", ho_job="ops",
                    direction="d2h")
        self.assertGreater(h2d, 0)
        self.assertGreater(d2h, 0)
        self.assertEqual(value(m, "hyperoffload_link_moved_bytes_total",
                               link="h2d"), h2d)
        # a 4 MiB DDR limit stages most host copies on flash
        self.assertGreater(value(m, "hyperoffload_job_moved_bytes_total",
                                 ho_job="ops", direction="to_flash"), 0)
        self.assertGreater(value(m, "hyperoffload_link_moved_bytes_total",
                                 link="ddr_to_flash"), 0)
        self.assertGreater(value(m, "hyperoffload_link_busy_seconds_total",
                                 link="ddr_to_flash"), 0)
        self.assertGreaterEqual(value(m, "hyperoffload_job_replay_steps_"
                                      "total", ho_job="ops"), 4)
        self.assertEqual(value(m, "hyperoffload_job_replays_ended_total",
                               ho_job="ops"), 1)
        self.assertEqual(value(m, "hyperoffload_job_sessions_ended_total",
                               ho_job="ops"), 1)
        self.assertGreaterEqual(value(m, "hyperoffload_plans_total",
                                      result="ok"), 1)
        self.assertGreaterEqual(value(m, "hyperoffload_admission_decisions_"
                                      "total", request="stage",
                                      decision="admitted"), 1)
        self.assertEqual(value(m, "hyperoffload_regions", kind="control"), 0)
        # a second replay of the same trace: the job's counters grow, the
        # plan comes from the cache
        p = opstest.start_client(self.d, self.s, steps=4, name="client2")
        self.assertEqual(p.wait(300), 0)
        m2 = self.d.metrics()
        self.assertGreater(value(m2, "hyperoffload_job_moved_bytes_total",
                                 ho_job="ops", direction="h2d"), h2d)
        self.assertGreaterEqual(value(m2, "hyperoffload_plan_cache_hits_"
                                      "total"), 1)

    def test_label_values_escaped(self):
        name = 'a "quoted" \\ name'
        with hob.Client.connect(self.d.sock, name) as c:
            c.register(job="esc", device=-1)
            text = self.d.metrics_text()
            self.assertIn('client="a \\"quoted\\" \\\\ name"', text)
            m = opstest.parse(text)
            self.assertEqual([ls["client"] for ls, _ in
                              m["hyperoffload_session_extents"]], [name])


def wait_for(pred, timeout=10):
    deadline = time.time() + timeout
    while not pred():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


class TextfileTest(unittest.TestCase):
    """[metrics] textfile: written at start and every interval, atomically
    (no temporary file left), moved by a SIGHUP reload, removed at a clean
    stop."""

    def test_textfile_reload_and_stop(self):
        s = opstest.Scratch()
        try:
            conf = s.path("hod.conf")
            first, second = s.path("a.prom"), s.path("b.prom")
            with open(conf, "w") as f:
                f.write("[metrics]\ntextfile = %s\ninterval = 1\n" % first)
            d = opstest.Daemon(s, ["--config=" + conf])
            self.assertTrue(wait_for(lambda: os.path.exists(first)),
                            d.text())
            m = opstest.parse(opstest.read(first))
            self.assertEqual(value(m, "hyperoffload_build_info"), 1)
            self.assertFalse(os.path.exists(first + ".tmp"))
            # rewritten every second: the uptime in it moves on
            up = value(m, "hyperoffload_uptime_seconds")
            self.assertTrue(wait_for(lambda: value(opstest.parse(
                opstest.read(first)), "hyperoffload_uptime_seconds") > up))
            with open(conf, "w") as f:
                f.write("[metrics]\ntextfile = %s\ninterval = 1\n"
                        % second)
            d.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_for(lambda: os.path.exists(second)),
                            d.text())
            self.assertTrue(wait_for(lambda: not os.path.exists(first)),
                            "the old textfile stayed")
            m = opstest.parse(opstest.read(second))
            self.assertGreaterEqual(value(m, "hyperoffload_textfile_writes_"
                                          "total", result="ok"), 2)
            self.assertEqual(value(m, "hyperoffload_textfile_writes_total",
                                   result="failed"), 0)
            self.assertEqual(d.stop(), 0)
            self.assertFalse(os.path.exists(second))
            self.assertFalse(os.path.exists(second + ".tmp"))
        finally:
            s.close()

    def test_unwritable_textfile_is_counted(self):
        s = opstest.Scratch()
        try:
            bad = s.path("missing-dir/ho.prom")
            d = opstest.Daemon(s, ["--metrics-textfile=" + bad,
                                   "--metrics-interval=1"])
            self.assertTrue(wait_for(lambda: value(d.metrics(),
                                                   "hyperoffload_textfile_"
                                                   "writes_total",
                                                   result="failed") >= 2,
                                     timeout=10))
            self.assertEqual(d.stop(), 0)
            # logged once, not at every interval
            self.assertEqual(d.text().count("metrics textfile: cannot "
                                            "create"), 1, d.text())
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/python3
"""The CI check of docs/metrics.md: Debian's real node_exporter
(/usr/bin/prometheus-node-exporter, its own instance on 127.0.0.1 and a
free port, only the textfile collector) reads the textfile a real daemon
writes ([metrics] textfile, interval 1 s) while a real client replays;
curl scrapes http://127.0.0.1:PORT/metrics, and Debian's
python3-prometheus-client parses it.  The hyperoffload series must be
there with sane values, and grow while the client replays."""

import os
import socket
import subprocess
import time
import unittest

import opstest
from opstest import value

NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
MiB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeExporterTest(unittest.TestCase):
    def setUp(self):
        for tool in (NODE_EXPORTER, "/usr/bin/curl"):
            self.assertTrue(os.access(tool, os.X_OK),
                            "%s missing (scripts/install-deps)" % tool)
        self.s = opstest.Scratch()
        self.tdir = self.s.path("textfile")
        os.mkdir(self.tdir)
        self.prom = os.path.join(self.tdir, "hyperoffload.prom")
        self.d = opstest.Daemon(self.s, ["--metrics-textfile=" + self.prom,
                                         "--metrics-interval=1"])
        self.port = free_port()
        self.ne_log = open(self.s.path("node_exporter.log"), "w")
        self.ne = subprocess.Popen(
            [NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % self.port,
             "--collector.disable-defaults", "--collector.textfile",
             "--collector.textfile.directory=" + self.tdir],
            stdout=self.ne_log, stderr=subprocess.STDOUT,
            env=opstest.system_env(), preexec_fn=opstest._die_with_parent)

    def tearDown(self):
        self.ne.terminate()
        self.ne.wait(30)
        self.ne_log.close()
        rc = self.d.stop()
        gone = not os.path.exists(self.prom)
        self.s.close()
        self.assertEqual(rc, 0)
        self.assertTrue(gone, "the textfile outlived the daemon")

    def scrape(self):
        """curl the exporter (retrying while it starts); the parsed text."""
        deadline = time.time() + 20
        while True:
            p = subprocess.run(["/usr/bin/curl", "-sf", "--max-time", "5",
                                "http://127.0.0.1:%d/metrics" % self.port],
                               stdout=subprocess.PIPE, env=opstest.system_env(),
                               universal_newlines=True)
            if p.returncode == 0 or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(p.returncode, 0, "curl failed: %d\n%s"
                         % (p.returncode, opstest.read(
                             self.s.path("node_exporter.log"))))
        return opstest.parse(p.stdout)

    def test_scrape_while_replaying(self):
        client = opstest.start_client(self.d, self.s, steps=400)
        try:
            # wait until the exporter shows the replay under way
            seen, m = None, None
            deadline = time.time() + 120
            while time.time() < deadline and client.poll() is None:
                m = self.scrape()
                steps = [v for ls, v in
                         m.get("hyperoffload_session_replay_steps_total", [])
                         if ls.get("ho_job") == "ops"]
                if steps and steps[0] >= 2:
                    seen = m
                    break
                time.sleep(0.5)
            self.assertIsNotNone(seen, "no replay seen through node_exporter"
                                 "; client log:\n" + opstest.read(
                                     self.s.path("client.log")))
            self.assertIsNone(client.poll(), "the client ended before the "
                              "scrape")
            m = seen
            # node_exporter read the file without error
            self.assertEqual(value(m, "node_textfile_scrape_error"), 0)
            self.assertEqual(value(m, "hyperoffload_build_info"), 1)
            self.assertEqual(value(m, "hyperoffload_tier_capacity_bytes",
                                   tier="ddr"), 256 * MiB)
            self.assertEqual(value(m, "hyperoffload_sessions"), 1)
            self.assertEqual(value(m, "hyperoffload_regions",
                                   kind="control"), 1)
            self.assertGreater(value(m, "hyperoffload_region_bytes",
                                     kind="host_copy"), 0)
            used = value(m, "hyperoffload_tier_used_bytes", tier="ddr")
            self.assertGreater(used, 0)
            self.assertLessEqual(used, 256 * MiB)
            h2d = value(m, "hyperoffload_job_moved_bytes_total",
                        ho_job="ops", direction="h2d")
            self.assertGreater(h2d, 0)
            self.assertGreater(value(m, "hyperoffload_textfile_writes_total",
                                     result="ok"), 0)
            # a later scrape: the textfile was rewritten, the counters grew
            time.sleep(2.5)
            m2 = self.scrape()
            self.assertGreater(value(m2, "hyperoffload_job_moved_bytes_total",
                                     ho_job="ops", direction="h2d"), h2d)
            self.assertGreater(value(m2, "hyperoffload_uptime_seconds"),
                               value(m, "hyperoffload_uptime_seconds"))
        finally:
            client.kill()
            client.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)

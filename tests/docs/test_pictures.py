#!/usr/bin/python3
"""Every picture the project draws, checked as a person would look at it:
rendered to PNG with rsvg-convert (librsvg2-bin) and the PNG read back.

  1. hoctl plan --svg on a generated trace;
  2. hoctl schedule check --svg on a hand-written schedule with a `wait`
     (the wait markers and the stalls must be there);
  3. hoctl node plan --svg on a small node (3 clients, 2 devices, 2 links);
  4. the demo's job picture and step chart (ho-demo-picture) from two real
     ho-demo-client processes against a real hyperoffloadd;
  5. a 200,000-op trace: the file stays small (binned into pixel columns).

Each SVG must be well-formed XML (xml.etree), declare the size
planner/viz/plan_svg.h gives for its rows, and render to a PNG of exactly
that size whose pixels are not all one colour.

Environment: HO_BUILD_DIR (build tree), HO_SOURCE_DIR.
"""

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import hotest  # noqa: E402  (SOURCE_DIR, BUILD_DIR, TINY)

SOURCE_DIR, BUILD_DIR = hotest.SOURCE_DIR, hotest.BUILD_DIR
BIN = os.path.join(BUILD_DIR, "bin")
RSVG = shutil.which("rsvg-convert")
SVG_NS = "{http://www.w3.org/2000/svg}"

# planner/viz/plan_svg.h
WIDTH, HEAD, FOOT = 1200, 96, 110
GROUP_HEAD, MEM_H, MEM_H_SMALL, LANES_H, GAP = 34, 260, 110, 150, 28
LINK_HEAD, LINK_ROW_H = 30, 34
STEPS_H = 460


def expected_height(groups, link_rows=0):
    mem = MEM_H if groups <= 1 else MEM_H_SMALL
    h = HEAD + FOOT + groups * (GROUP_HEAD + mem + LANES_H + GAP)
    if link_rows:
        h += LINK_HEAD + link_rows * LINK_ROW_H
    return h


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def run(*cmd, cwd=None):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise AssertionError("%s exited %d\n%s\n%s" % (" ".join(map(str, cmd)),
                             p.returncode, p.stdout, p.stderr))
    return p


def png_size_and_colours(path):
    """(width, height, distinct byte values of the decoded pixel data)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    w = h = 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    pixels = zlib.decompress(idat)
    return w, h, len(set(pixels[:2000000]))


class Pictures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ho-pictures-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def check_svg(self, svg, width, height):
        """Well-formed, the declared size, rendered at that size, not
        blank.  Returns the parsed tree's root."""
        self.assertIsNotNone(RSVG, "rsvg-convert missing (librsvg2-bin; "
                             "scripts/install-deps installs it)")
        root = ET.parse(svg).getroot()
        self.assertEqual(root.tag, SVG_NS + "svg")
        self.assertEqual((int(root.get("width")), int(root.get("height"))),
                         (width, height))
        png = svg[:-4] + ".png"
        run(RSVG, "--format=png", "-o", png, svg)
        self.assertGreater(os.path.getsize(png), 1000)
        w, h, colours = png_size_and_colours(png)
        self.assertEqual((w, h), (width, height))
        self.assertGreater(colours, 8, "the PNG is (nearly) one colour")
        return root

    def classes(self, root, cls):
        return [e for e in root.iter() if e.get("class") == cls]

    def test_plan_svg(self):
        t, svg = self.path("r.json"), self.path("plan.svg")
        run(os.path.join(BIN, "hoctl"), "trace", "gen", "random", "--seed",
            "3", "--ops", "2000", "--storages", "400", "--out", t)
        run(os.path.join(BIN, "hoctl"), "plan", "--trace", t, "--budget",
            "60%", "--svg", svg, "--svg-ddr-limit", "512M")
        root = self.check_svg(svg, WIDTH, expected_height(1))
        self.assertTrue(self.classes(root, "budget"))
        self.assertTrue(self.classes(root, "mem"))
        # at 60% a random trace cannot hide every copy
        self.assertTrue(self.classes(root, "stall"))
        text = open(svg).read()
        for lane in (">H2D<", ">D2H<", ">flash in<", ">flash out<"):
            self.assertIn(lane, text)
        # the staging plan within 512 MiB of DDR moves data both ways:
        # bars on the flash lanes (legend swatches are one each)
        self.assertIn("flash staging within DDR 512 MiB", text)
        self.assertGreater(text.count('fill="#0f766e"'), 2)
        self.assertGreater(text.count('fill="#a16207"'), 2)

    def test_schedule_with_wait(self):
        mib = 1 << 20
        trace = {
            "format": "hyperoffload-trace", "version": 1, "name": "wait-demo",
            "link": {"h2d_gbps": 1.0, "d2h_gbps": 1.0, "latency_us": 10.0,
                     "duplex": True},
            "storages": [
                {"id": 1, "bytes": 8 * mib, "kind": "activation",
                 "initial": "none", "retained": False, "pinned": False},
                {"id": 2, "bytes": 8 * mib, "kind": "activation",
                 "initial": "none", "retained": False, "pinned": False}],
            "ops": [{"name": "write1", "duration_us": 1000.0, "reads": [],
                     "writes": [1]},
                    {"name": "write2", "duration_us": 1000.0, "reads": [],
                     "writes": [2]},
                    {"name": "read", "duration_us": 1000.0, "reads": [1, 2],
                     "writes": []}]}
        sched = {
            "format": "hyperoffload-schedule", "version": 1,
            "planner": "by-hand", "budget_bytes": 16 * mib,
            "actions": [
                {"op": 0, "when": "after", "kind": "store", "storage": 1},
                {"op": 0, "when": "after", "kind": "wait", "storage": 1},
                {"op": 0, "when": "after", "kind": "free_device",
                 "storage": 1},
                {"op": 2, "when": "before", "kind": "prefetch",
                 "storage": 1}]}
        t, s, svg = (self.path("w.trace.json"), self.path("w.sched.json"),
                     self.path("wait.svg"))
        write_json(t, trace)
        write_json(s, sched)
        run(os.path.join(BIN, "hoctl"), "schedule", "check", "--trace", t,
            "--schedule", s, "--svg", svg)
        root = self.check_svg(svg, WIDTH, expected_height(1))
        waits = self.classes(root, "wait")
        self.assertEqual(len(waits), 1)
        # the marker is at least PLAN_SVG_MARK_W (7) px wide
        xs = [float(p.split(",")[0]) for p in waits[0].get("points").split()]
        self.assertGreaterEqual(max(xs) - min(xs), 7.0)
        # the store (8 MiB at 1 GB/s: 8.4 ms) is waited for, and the
        # prefetch before "read" is exposed: compute stalls twice
        self.assertTrue(self.classes(root, "wait-time"))
        self.assertGreaterEqual(len(self.classes(root, "stall")), 2)

    def test_node_plan_svg(self):
        hoctl = os.path.join(BIN, "hoctl")
        for seed in (1, 2, 3):
            run(hoctl, "trace", "gen", "random", "--seed", seed, "--ops",
                "300", "--storages", "80", "--out", self.path("n%d.json" % seed))
        node = {"format": "hyperoffload-node", "version": 1,
                "links": [{"name": "host", "h2d_gbps": 24.0, "d2h_gbps": 24.0,
                           "duplex": True},
                          {"name": "sw0", "parent": "host", "h2d_gbps": 16.0,
                           "d2h_gbps": 16.0, "duplex": False}],
                "devices": [{"id": d, "name": "npu%d" % d,
                             "hbm_bytes": 1 << 30, "h2d_gbps": 16.0,
                             "d2h_gbps": 16.0, "latency_us": 10.0,
                             "parent": "sw0"} for d in (0, 1)],
                "ddr_bytes": 8 << 30}
        wl = {"format": "hyperoffload-workload", "version": 1,
              "clients": [
                  {"name": "a", "device": 0, "trace": "n1.json",
                   "budget_bytes": 300000000, "sync": "train"},
                  {"name": "b", "device": 1, "trace": "n2.json",
                   "budget_bytes": 300000000, "sync": "train"},
                  {"name": "c", "device": 0, "trace": "n3.json",
                   "weight": 2.0}]}
        write_json(self.path("node.json"), node)
        write_json(self.path("wl.json"), wl)
        svg, out = self.path("node.svg"), self.path("planned")
        p = run(hoctl, "--json", "node", "plan", "--node",
                self.path("node.json"), "--workload", self.path("wl.json"),
                "--out", out, "--svg", svg)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["strategy"], "arbiter")
        cands = doc["candidates"]
        self.assertEqual(sorted(cands),
                         ["arbiter", "equal-share", "independent"])
        chosen = cands[doc["chosen"]]
        self.assertTrue(chosen["valid"])
        for c in cands.values():  # the best candidate is returned
            if c["valid"]:
                self.assertLessEqual(chosen["weighted_exposed_us"],
                                     c["weighted_exposed_us"] + 1e-6)
        self.assertAlmostEqual(doc["node"]["weighted_exposed_us"],
                               chosen["weighted_exposed_us"], places=6)
        self.assertEqual(len(doc["clients"]), 3)
        # host duplex: 2 rows; sw0 not duplex: 1 row
        root = self.check_svg(svg, WIDTH, expected_height(3, 3))
        self.assertEqual(len([e for e in root.iter(SVG_NS + "g")
                              if e.get("class") == "group"]), 3)
        self.assertEqual(len(self.classes(root, "link")), 3)
        # the arbiter-style output judges to the same figures
        run(hoctl, "node", "check", "--node", self.path("node.json"),
            "--workload", os.path.join(out, "workload.json"))
        # each baseline alone: its own plan, or a reason it has none that
        # matches what the arbiter's run said of it
        for strategy in ("independent", "equal-share"):
            p = subprocess.run(
                [hoctl, "--json", "node", "plan", "--node",
                 self.path("node.json"), "--workload", self.path("wl.json"),
                 "--strategy", strategy], stdout=subprocess.PIPE,
                universal_newlines=True)
            d2 = json.loads(p.stdout)
            if cands[strategy]["valid"]:
                self.assertEqual(p.returncode, 0)
                self.assertEqual(d2["chosen"], strategy)
                self.assertEqual(list(d2["candidates"]), [strategy])
                self.assertAlmostEqual(
                    d2["node"]["weighted_exposed_us"],
                    cands[strategy]["weighted_exposed_us"], places=6)
            else:
                self.assertEqual(p.returncode, 1)
                self.assertIn(cands[strategy]["reason"],
                              d2["error"]["message"])

    def test_demo_job_picture(self):
        d = self.path("demo")
        os.mkdir(d)
        sock = os.path.join(d, ".hyperoffload", "hyperoffloadd.sock")
        daemon = subprocess.Popen([os.path.join(BIN, "hyperoffloadd")],
                                  cwd=d, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                if os.path.exists(sock):
                    break
                time.sleep(0.1)
            clients = [subprocess.Popen(
                [os.path.join(BIN, "ho-demo-client"), "--socket", sock,
                 "--device", str(k), "--job", "pic", "--steps", "3",
                 "--picture-data", os.path.join(d, "c%d.dat" % k),
                 "--svg", os.path.join(d, "c%d.svg" % k)] + hotest.TINY,
                cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                universal_newlines=True) for k in (0, 1)]
            for c in clients:
                out, _ = c.communicate(timeout=300)
                self.assertEqual(c.returncode, 0, out)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
        job, steps = os.path.join(d, "job.svg"), os.path.join(d, "steps.svg")
        run(os.path.join(BIN, "ho-demo-picture"), "--job", "pic", "--svg", job,
            "--steps-svg", steps, os.path.join(d, "c0.dat"),
            os.path.join(d, "c1.dat"))
        root = self.check_svg(job, WIDTH, expected_height(2))
        self.assertEqual(len([e for e in root.iter(SVG_NS + "g")
                              if e.get("class") == "group"]), 2)
        self.assertTrue(self.classes(root, "budget"))
        # one client alone (--svg) is the same drawing, one group
        self.check_svg(os.path.join(d, "c0.svg"), WIDTH, expected_height(1))
        root = self.check_svg(steps, WIDTH, STEPS_H)
        # 3 replayed steps x 2 clients
        self.assertEqual(len(self.classes(root, "step-exposed")), 6)

    def test_size_is_bounded(self):
        hoctl = os.path.join(BIN, "hoctl")
        sizes = []
        for ops in (1000, 200000):
            t, svg = self.path("b%d.json" % ops), self.path("b%d.svg" % ops)
            run(hoctl, "trace", "gen", "random", "--seed", "5", "--ops", ops,
                "--storages", ops // 4, "--out", t)
            run(hoctl, "plan", "--trace", t, "--budget", "70%", "--svg", svg)
            ET.parse(svg)
            sizes.append(os.path.getsize(svg))
        # 1000 columns x a few lanes: well under 2 MiB whatever the trace
        self.assertLess(max(sizes), 2 << 20, sizes)


if __name__ == "__main__":
    unittest.main(verbosity=2)

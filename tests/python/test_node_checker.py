#!/usr/bin/python3
"""The node judge (`hoctl node check`) against an independent one.

Random nodes (trees of links, several devices, devices shared by several
clients, duplex on and off on links and devices, latencies, HBM sometimes
tight) and random workloads (random traces from `hoctl trace gen random`,
some with movable storages; schedules from `hoctl plan` with every planner
at several budgets, and random schedules with waits and homes from
test_ref_validator; random weights, sync groups, budgets; 1 to 3 steps)
are judged by the shipped judge and by node_checker.py (written from
NODE.md §3 and docs/node.md alone).  Both must agree on validity (and,
when invalid, on which client and why: alone or back-pressure) and, when
valid, on every figure to 1e-6 relative.
"""

import json
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotest  # noqa: E402
import node_checker  # noqa: E402
import ref_validator  # noqa: E402
import test_ref_validator  # noqa: E402

REL = 1e-6
CASES = int(os.environ.get("HO_NODE_CASES",
                           "6" if hotest.UNDER_VALGRIND else "60"))
SEED = int(os.environ.get("HO_NODE_SEED", "4242"))

CLIENT_FIGURES = ["compute_us", "step_time_us", "exposed_us",
                  "alloc_wait_us", "slowdown", "start_us", "end_us"]
CLIENT_BYTES = ["h2d_bytes", "d2h_bytes", "peak_device_bytes",
                "peak_host_bytes"]


def close(a, b, scale):
    return abs(a - b) <= REL * max(abs(a), abs(b), scale, 1e-3)


def random_node(rng, n_devices):
    """A tree: the root, 0-3 switches (nested now and then), devices under
    switches or the root.  Figures in GB/s, some links narrower than the
    devices below so that sharing binds."""
    links = [{"name": "host", "h2d_gbps": rng.choice([8.0, 32.0, 200.0]),
              "d2h_gbps": rng.choice([8.0, 32.0, 200.0]),
              "duplex": rng.random() < 0.8}]
    for i in range(rng.randrange(0, 4)):
        parent = rng.choice([l["name"] for l in links])
        g = rng.choice([2.0, 4.0, 8.0, 16.0, 64.0])
        links.append({"name": "sw%d" % i, "parent": parent, "h2d_gbps": g,
                      "d2h_gbps": g if rng.random() < 0.7
                      else rng.choice([1.0, 4.0, 12.0]),
                      "duplex": rng.random() < 0.6})
    devices = []
    for d in range(n_devices):
        g = rng.choice([2.0, 8.0, 16.0])
        devices.append({
            "id": d * 3 + 1, "name": "dev%d" % d,
            "hbm_bytes": 1 << 40, "reserve_bytes": rng.choice([0, 4096]),
            "h2d_gbps": g,
            "d2h_gbps": g if rng.random() < 0.7 else rng.choice([4.0, 12.0]),
            "latency_us": rng.choice([0.0, 0.0, 5.0, 17.5]),
            "duplex": rng.random() < 0.75,
            "parent": rng.choice([l["name"] for l in links])})
    return {"format": "hyperoffload-node", "version": 1, "links": links,
            "devices": devices, "ddr_bytes": 1 << 40}


class NodeCheckerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        hotest.require_hoctl()
        cls.s = hotest.Scratch()
        cls.planners = [p for p in test_ref_validator.planner_names()
                        if p != "oracle"]
        cls.stats = {"valid": 0, "invalid": 0, "alone": 0, "waits": 0,
                     "sync": 0, "shared_device": 0, "compared": 0}
        # a pool of traces and schedules, reused by the cases
        rng = random.Random(20260)
        cls.pool = []  # (trace path, schedule path, budget, peak)
        for k in range(4 if hotest.UNDER_VALGRIND else 8):
            tpath = cls.s.path("t%d.json" % k)
            hotest.hoctl("trace", "gen", "random", "--seed", 100 + k,
                         "--ops", rng.choice([40, 80, 150]), "--storages",
                         rng.choice([15, 30]), "--max-bytes", "4M",
                         "--p-host", "0.15", "--p-retained", "0.3",
                         "--out", tpath)
            doc = hotest.load(tpath)
            if k % 2:
                doc = test_ref_validator.movable_variant(doc, k)
            hotest.dump(doc, tpath)
            for planner in cls.planners:
                for pct in ([100, 60] if hotest.UNDER_VALGRIND
                            else [100, 75, 50, 30]):
                    spath = cls.s.path("s%d-%s-%d.json" % (k, planner, pct))
                    rc, res = hotest.hoctl_json(
                        "plan", "--trace", tpath, "--budget", "%d%%" % pct,
                        "--planner", planner, "--out", spath,
                        expect=(0, 1))
                    if not res.get("feasible") or not os.path.exists(spath):
                        continue
                    peak = res["metrics"]["peak_device_bytes"]
                    cls.pool.append((tpath, spath, res["budget_bytes"],
                                     peak, cls.sound(doc, spath)))
            # random schedules with waits and homes (valid or not)
            for j in range(3):
                spath = cls.s.path("r%d-%d.json" % (k, j))
                sched = test_ref_validator.random_schedule(
                    doc, random.Random(k * 10 + j))
                hotest.dump(sched, spath)
                # homes the binder refuses make an unreadable workload,
                # not a judged one: keep only schedules that bind
                p = hotest.hoctl("--json", "schedule", "check", "--trace",
                                 tpath, "--schedule", spath, expect=(0, 1))
                if hotest.no_result(p):
                    continue
                cls.pool.append((tpath, spath, sched["budget_bytes"],
                                 sched["budget_bytes"],
                                 cls.sound(doc, spath)))
        cls.good = [e for e in cls.pool if e[4]]
        cls.bad = [e for e in cls.pool if not e[4]]

    @staticmethod
    def sound(trace, spath):
        """Valid alone whatever the budget (ref_validator)?"""
        sched = dict(hotest.load(spath), budget_bytes=2 ** 62)
        return ref_validator.simulate(trace, sched)["valid"]

    @classmethod
    def tearDownClass(cls):
        sys.stderr.write("node checker: %s\n" % cls.stats)
        cls.s.close()

    def make_case(self, rng, n):
        """Write node and workload files for case n; returns their paths
        and the steps to run."""
        n_dev = rng.randrange(1, 5)
        node = random_node(rng, n_dev)
        n_clients = rng.randrange(1, 6)
        groups = [None] + ["g%d" % g for g in range(rng.randrange(0, 3))]
        clients = []
        by_dev = {}
        # now and then one client invalid alone (on purpose)
        spoil = rng.randrange(n_clients) if rng.random() < 0.15 else -1
        for i in range(n_clients):
            tpath, spath, budget, peak, _ = rng.choice(
                self.bad if i == spoil and self.bad else self.good)
            dev = rng.choice(node["devices"])
            c = {"name": "c%d" % i, "device": dev["id"],
                 "trace": os.path.basename(tpath),
                 "schedule": os.path.basename(spath),
                 "weight": rng.choice([1.0, 1.0, 0.5, 2.0, 3.0, 4.0])}
            u = rng.random()
            if i != spoil or u < 0.5:
                c["budget_bytes"] = max(budget, peak) + rng.choice(
                    [0, 0, 1 << 20])
            elif u < 0.75 and peak > 0:
                c["budget_bytes"] = peak - 1  # over budget alone
            # else: the schedule's own budget (a baseline may exceed it)
            g = rng.choice(groups)
            if g:
                c["sync"] = g
            clients.append(c)
            by_dev.setdefault(dev["id"], []).append(
                c.get("budget_bytes", budget))
        # HBM: plenty, or tight so that co-located clients wait
        for d in node["devices"]:
            budgets = by_dev.get(d["id"], [])
            if budgets and rng.random() < 0.5:
                d["hbm_bytes"] = d["reserve_bytes"] + max(
                    max(budgets), int(sum(budgets) * rng.uniform(0.7, 1.0)))
        npath = self.s.path("node%d.json" % n)
        wpath = self.s.path("w%d.json" % n)
        hotest.dump(node, npath)
        hotest.dump({"format": "hyperoffload-workload", "version": 1,
                     "clients": clients}, wpath)
        return node, npath, wpath, rng.choice([1, 2, 3, 3])

    def compare(self, n, c_res, p_res, node, wl):
        what = "case %d" % n
        self.assertEqual(c_res["valid"], p_res["valid"],
                         "%s: validity differs\nC: %s\nPython: %s"
                         % (what, c_res.get("violation"),
                            p_res.get("violation")))
        if not c_res["valid"]:
            cv, pv = c_res["violation"], p_res["violation"]
            self.assertEqual(cv["client_index"], pv["client"],
                             "%s: %s / %s" % (what, cv, pv))
            self.assertEqual("invalid alone" in cv["message"], pv["alone"],
                             "%s: %s / %s" % (what, cv, pv))
            if not pv["alone"]:
                self.assertEqual(cv["step"], pv["step"], what)
            self.stats["invalid"] += 1
            self.stats["alone"] += pv["alone"]
            if os.environ.get("HO_NODE_DEBUG"):
                sys.stderr.write("%s: %s\n" % (what, cv["message"]))
            return
        self.stats["valid"] += 1
        for i, (cc, pc) in enumerate(zip(c_res["clients"],
                                         p_res["clients"])):
            scale = cc["step_time_us"]
            for k in CLIENT_FIGURES:
                self.assertTrue(close(cc[k], pc[k], scale),
                                "%s client %d %s: C %r Python %r"
                                % (what, i, k, cc[k], pc[k]))
            for k in CLIENT_BYTES:
                self.assertEqual(cc[k], pc[k], "%s client %d %s"
                                 % (what, i, k))
            self.stats["waits"] += cc["alloc_wait_us"] > 0
            self.stats["compared"] += 1
        for cd, pd in zip(c_res["devices"], p_res["devices"]):
            self.assertEqual(cd["id"], pd["id"])
            self.assertEqual(cd["peak_bytes"], pd["peak_bytes"],
                             "%s device %d" % (what, cd["id"]))
            self.assertEqual(cd["clients"], pd["clients"])
            self.stats["shared_device"] += cd["clients"] > 1
        scale = max([c["step_time_us"] for c in c_res["clients"]] + [1])
        for k in ["weighted_exposed_us", "max_slowdown", "alloc_wait_us"]:
            self.assertTrue(close(c_res["node"][k], p_res["node"][k],
                                  scale if k != "max_slowdown" else 1),
                            "%s node %s: C %r Python %r"
                            % (what, k, c_res["node"][k], p_res["node"][k]))
        self.stats["sync"] += any(c.get("sync") for c in wl["clients"])

    def test_random_workloads_agree(self):
        rng = random.Random(SEED)
        cache = {}
        for n in range(CASES):
            node, npath, wpath, steps = self.make_case(rng, n)
            rc, c_res = hotest.hoctl_json("node", "check", "--node", npath,
                                          "--workload", wpath, "--steps",
                                          steps, expect=(0, 1))
            p_res = node_checker.judge(node, hotest.load(wpath), self.s.dir,
                                       steps, cache)
            self.assertEqual(rc, 0 if c_res["valid"] else 1)
            self.compare(n, c_res, p_res, node, hotest.load(wpath))
        # the cases must have exercised what they are for
        self.assertGreater(self.stats["valid"], CASES // 3)
        if not hotest.UNDER_VALGRIND:
            self.assertGreater(self.stats["invalid"], 0)
            self.assertGreater(self.stats["waits"], 0)
            self.assertGreater(self.stats["sync"], 0)
            self.assertGreater(self.stats["shared_device"], 0)

    def test_hand_case(self):
        """Two clients on one 1 GB/s switch, weights 1 and 3, each
        prefetching 3000 B and reading it for 1 us: the weight-3 copy ends
        at 4 us, the other at 6 us (NODE.md §3.2, by hand)."""
        trace = {"format": "hyperoffload-trace", "version": 1, "name": "p",
                 "link": {"h2d_gbps": 1.0, "d2h_gbps": 1.0,
                          "latency_us": 0.0, "duplex": True},
                 "storages": [{"id": 1, "bytes": 3000, "initial": "host"}],
                 "ops": [{"name": "a", "duration_us": 1.0, "reads": [1]}]}
        sched = {"format": "hyperoffload-schedule", "version": 1,
                 "planner": "hand", "budget_bytes": 3000,
                 "actions": [{"op": 0, "when": "before", "kind": "prefetch",
                              "storage": 1}]}
        node = {"format": "hyperoffload-node", "version": 1,
                "links": [{"name": "host", "h2d_gbps": 100.0,
                           "d2h_gbps": 100.0},
                          {"name": "sw", "parent": "host", "h2d_gbps": 1.0,
                           "d2h_gbps": 1.0}],
                "devices": [{"id": i, "name": "d%d" % i, "hbm_bytes": 10 ** 6,
                             "h2d_gbps": 1.0, "d2h_gbps": 1.0,
                             "parent": "sw"} for i in range(2)],
                "ddr_bytes": 0}
        wl = {"format": "hyperoffload-workload", "version": 1,
              "clients": [{"name": "w1", "device": 0, "trace": "ht.json",
                           "schedule": "hs.json", "weight": 1},
                          {"name": "w3", "device": 1, "trace": "ht.json",
                           "schedule": "hs.json", "weight": 3}]}
        for name, doc in [("ht.json", trace), ("hs.json", sched),
                          ("hn.json", node), ("hw.json", wl)]:
            hotest.dump(doc, self.s.path(name))
        p = node_checker.judge(node, wl, self.s.dir, 1)
        self.assertTrue(p["valid"])
        self.assertAlmostEqual(p["clients"][0]["step_time_us"], 7.0)
        self.assertAlmostEqual(p["clients"][1]["step_time_us"], 5.0)
        rc, c = hotest.hoctl_json("node", "check", "--node",
                                  self.s.path("hn.json"), "--workload",
                                  self.s.path("hw.json"), "--steps", "1")
        self.assertAlmostEqual(c["clients"][0]["step_time_us"], 7.0)
        self.assertAlmostEqual(c["node"]["weighted_exposed_us"], 6 + 3 * 4)
        # the human table names both clients; show prints the tree
        out = hotest.hoctl("node", "check", "--node", self.s.path("hn.json"),
                           "--workload", self.s.path("hw.json")).stdout
        self.assertIn("w3", out)
        self.assertIn("weighted exposed", out)
        tree = hotest.hoctl("node", "show", "--node",
                            self.s.path("hn.json")).stdout
        self.assertIn("`-- sw", tree)
        self.assertIn("d1 (device 1)", tree)
        exported = json.loads(hotest.hoctl("--json", "node", "show", "--node",
                                           self.s.path("hn.json")).stdout)
        self.assertEqual(exported["links"][1]["parent"], "host")
        self.assertEqual(exported["devices"][1]["reserve_bytes"], 0)

    def test_invalid_exit_and_reason(self):
        """A workload whose allocation has nothing pending: exit 1 and a
        reason naming client, op and cause; both judges agree."""
        trace = {"format": "hyperoffload-trace", "version": 1, "name": "c",
                 "link": {"h2d_gbps": 1.0, "d2h_gbps": 1.0},
                 "storages": [{"id": 1, "bytes": 1000},
                              {"id": 2, "bytes": 1000}],
                 "ops": [{"name": "w1", "duration_us": 1.0, "writes": [1]},
                         {"name": "w2", "duration_us": 1.0, "reads": [1],
                          "writes": [2]}]}
        sched = {"format": "hyperoffload-schedule", "version": 1,
                 "planner": "none", "budget_bytes": 2000, "actions": []}
        node = {"format": "hyperoffload-node", "version": 1,
                "devices": [{"id": 0, "name": "d0", "hbm_bytes": 2000,
                             "h2d_gbps": 1.0, "d2h_gbps": 1.0}],
                "ddr_bytes": 0}
        wl = {"format": "hyperoffload-workload", "version": 1,
              "clients": [{"name": "a", "device": 0, "trace": "it.json",
                           "schedule": "is.json"},
                          {"name": "b", "device": 0, "trace": "it.json",
                           "schedule": "is.json"}]}
        for name, doc in [("it.json", trace), ("is.json", sched),
                          ("in.json", node), ("iw.json", wl)]:
            hotest.dump(doc, self.s.path(name))
        p = hotest.hoctl("node", "check", "--node", self.s.path("in.json"),
                         "--workload", self.s.path("iw.json"), expect=(1,))
        self.assertIn('client "a"', p.stderr)
        self.assertIn("op 1 ('w2')", p.stderr)
        self.assertIn("no release pending", p.stderr)
        rc, c = hotest.hoctl_json("node", "check", "--node",
                                  self.s.path("in.json"), "--workload",
                                  self.s.path("iw.json"), expect=(1,))
        self.assertFalse(c["valid"])
        self.assertEqual(c["violation"]["client"], "a")
        self.assertEqual(c["violation"]["op"], 1)
        self.assertEqual(c["violation"]["storage"], 2)
        py = node_checker.judge(node, wl, self.s.dir, 3)
        self.assertFalse(py["valid"])
        self.assertEqual(py["violation"]["client"], 0)
        self.assertEqual(py["violation"]["op"], 1)
        # a bad node file: exit 1 naming the place
        bad = dict(node, devices=[dict(node["devices"][0], parent="sw9")])
        hotest.dump(bad, self.s.path("bad.json"))
        p = hotest.hoctl("node", "show", "--node", self.s.path("bad.json"),
                         expect=(1,))
        self.assertIn("devices[0].parent: unknown link \"sw9\"", p.stderr)
        hotest.hoctl("node", "show", "--node", self.s.path("nope.json"),
                     expect=(4,))
        hotest.hoctl("node", "check", "--node", self.s.path("in.json"),
                     expect=(2,))


if __name__ == "__main__":
    unittest.main(verbosity=2)

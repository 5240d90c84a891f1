#!/usr/bin/python3
"""The shipped planners and validator against an independent one.

For generated training and decode traces, random traces and a captured
PyTorch trace, every planner and several budgets: `hoctl plan ... --out S`
must produce schedules whose `predicted` figures the reference validator
(ref_validator.py, written from PLANNER.md alone) reproduces to 0.1%, and
both validators must agree on validity and on the budget.  Deliberately
broken schedules must be rejected by both, at the same op.
"""

import copy
import json
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotest  # noqa: E402
import ref_validator  # noqa: E402

REL = 1e-3  # 0.1%

SMALL_DIMS = ["--layers", "2", "--hidden", "512", "--heads", "8",
              "--ffn", "1376", "--vocab", "2000"]

# A tiny trace on which the exhaustive oracle must work (few gaps).
TINY = {
    "format": "hyperoffload-trace", "version": 1, "name": "tiny",
    "link": {"h2d_gbps": 1.0, "d2h_gbps": 1.0, "latency_us": 1.0,
             "duplex": True},
    "storages": [
        {"id": 1, "bytes": 4000, "kind": "param", "initial": "device",
         "retained": True, "pinned": False},
        {"id": 2, "bytes": 3000, "kind": "activation", "initial": "none",
         "retained": False, "pinned": False},
        {"id": 3, "bytes": 2000, "kind": "activation", "initial": "none",
         "retained": False, "pinned": False},
        {"id": 4, "bytes": 1000, "kind": "optimizer", "initial": "host",
         "retained": True, "pinned": False},
    ],
    "ops": [
        {"name": "a", "duration_us": 10, "reads": [1], "writes": [2]},
        {"name": "b", "duration_us": 10, "reads": [2], "writes": [3]},
        {"name": "c", "duration_us": 10, "reads": [3], "writes": []},
        {"name": "d", "duration_us": 10, "reads": [3], "writes": []},
        {"name": "e", "duration_us": 10, "reads": [2, 3], "writes": []},
        {"name": "f", "duration_us": 10, "reads": [1, 4], "writes": [1, 4]},
    ],
}


def random_homes(trace, rng):
    """(homes, effective initial by id, broken) for a random schedule:
    some movable storages get a home; now and then (broken) an entry the
    binder must refuse: a storage that is not movable, or a second entry
    of one storage."""
    by_id = {s["id"]: s for s in trace["storages"]}
    eff = {sid: s.get("initial", "none") for sid, s in by_id.items()}
    homes = []
    movable = sorted(sid for sid, s in by_id.items() if s.get("movable"))
    if movable and rng.random() < 0.7:
        for sid in movable:
            if rng.random() < 0.5:
                home = rng.choice(["device", "host"])
                homes.append({"storage": sid, "home": home})
                eff[sid] = home
    broken = rng.random() < 0.1
    if broken:
        fixed = sorted(sid for sid, s in by_id.items()
                       if not s.get("movable"))
        if homes and (not fixed or rng.random() < 0.5):
            homes.append(dict(rng.choice(homes)))
        elif fixed:
            homes.insert(rng.randrange(len(homes) + 1),
                         {"storage": rng.choice(fixed),
                          "home": rng.choice(["device", "host"])})
        else:
            broken = False
    return homes, eff, broken


def random_schedule(trace, rng):
    """A random schedule for `trace`: at each point some plausible actions
    (offload a storage the next op does not need, bring back what an op
    reads), waits (for a store so that its memory is back before the next
    op allocates, for a prefetch, or on anything), homes for movable
    storages, now and then an arbitrary action; budget sometimes tight."""
    by_id = {s["id"]: s for s in trace["storages"]}
    ops = trace["ops"]
    last = {}
    for i, o in enumerate(ops):
        for sid in o.get("reads", []) + o.get("writes", []):
            last[sid] = i
    homes, eff, _ = random_homes(trace, rng)
    on_dev = {sid for sid, s in by_id.items() if eff[sid] == "device"
              and (s.get("retained") or sid in last)}
    host = {sid: 0 for sid in by_id if eff[sid] == "host"}
    ver = {sid: 0 for sid in by_id}
    acts = []
    wild = rng.random() < 0.5
    waity = rng.random() < 0.6
    ids = sorted(by_id)

    def act(op, when, kind, sid):
        acts.append({"op": op, "when": when, "kind": kind, "storage": sid})

    for i, o in enumerate(ops):
        needed = set(o.get("reads", []))
        for sid in sorted(needed):
            if sid not in on_dev and host.get(sid) == ver[sid]:
                act(i, "before", "prefetch", sid)
                on_dev.add(sid)
                if waity and rng.random() < 0.05:
                    act(i, "before", "wait", sid)
        if wild and rng.random() < 0.01:
            act(i, "before", rng.choice(["prefetch", "store", "free_device",
                                         "free_host", "wait"]),
                rng.choice(ids))
        if waity and rng.random() < 0.02:
            act(i, rng.choice(["before", "after"]), "wait", rng.choice(ids))
        for sid in o.get("writes", []):
            on_dev.add(sid)
            ver[sid] += 1
        nxt = set(ops[i + 1].get("reads", [])) if i + 1 < len(ops) else set()
        for sid in sorted(on_dev):
            s = by_id[sid]
            if sid in nxt or s.get("pinned") and last.get(sid, -1) > i:
                continue
            if rng.random() < 0.08:
                stored = host.get(sid) != ver[sid]
                if stored:
                    act(i, "after", "store", sid)
                    host[sid] = ver[sid]
                act(i, "after", "free_device", sid)
                on_dev.discard(sid)
                if stored and waity and rng.random() < 0.3:
                    # let the memory come back before what follows
                    if i + 1 < len(ops) and rng.random() < 0.5:
                        act(i + 1, "before", "wait", sid)
                    else:
                        act(i, "after", "wait", sid)
                if rng.random() < 0.05 and last.get(sid, -1) <= i:
                    act(i, "after", "free_host", sid)
                    del host[sid]
        for sid in list(on_dev):
            if not by_id[sid].get("retained") and last.get(sid) == i:
                on_dev.discard(sid)
    end = len(ops) - 1
    for sid, s in by_id.items():
        if not s.get("retained"):
            continue
        if eff[sid] == "host":
            if sid in on_dev:
                if host.get(sid) != ver[sid]:
                    act(end, "after", "store", sid)
                act(end, "after", "free_device", sid)
            elif host.get(sid) != ver[sid]:
                pass  # lost: invalid at step end, on purpose
        elif sid not in on_dev and host.get(sid) == ver[sid]:
            act(end, "after", "prefetch", sid)
    sched = {"format": "hyperoffload-schedule", "version": 1,
             "planner": "fuzz", "budget_bytes": 2 ** 62, "actions": acts}
    if homes:
        sched["homes"] = homes
    peak = ref_validator.simulate(trace, sched)["metrics"][
        "peak_device_bytes"]
    sched["budget_bytes"] = peak if rng.random() < 0.7 else int(peak * 0.9)
    return sched


def movable_variant(doc, seed):
    """`doc` with some retained, initial device/host storages movable."""
    rng = random.Random(seed)
    doc = copy.deepcopy(doc)
    doc["name"] += "-movable"
    for s in doc["storages"]:
        if s.get("retained") and s.get("initial", "none") != "none" and \
                rng.random() < 0.7:
            s["movable"] = True
    return doc


def planner_names():
    p = hotest.hoctl("plan", "help")
    for line in p.stdout.splitlines():
        if line.startswith("planners:"):
            return line.split()[1:]
    raise AssertionError("hoctl plan help lists no planners:\n" + p.stdout)


def close(a, b, slack=0.0):
    return abs(a - b) <= max(REL * max(abs(a), abs(b)), slack)


class RefValidatorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        hotest.require_hoctl()
        cls.s = hotest.Scratch()
        cls.traces = {}
        small = hotest.UNDER_VALGRIND
        path = cls.s.path("train.json")
        hotest.hoctl("trace", "gen", "train", *SMALL_DIMS, "--seq", "256",
                     "--micro", "2", "--device", "910b", "--out", path)
        cls.traces["train"] = path
        path = cls.s.path("decode.json")
        hotest.hoctl("trace", "gen", "decode", *SMALL_DIMS, "--kv-heads",
                     "2", "--prompt", "300", "--tokens",
                     "3" if small else "6", "--batch", "2", "--kv-block",
                     "64", "--device", "h200", "--out", path)
        cls.traces["decode"] = path
        path = cls.s.path("tiny.json")
        hotest.dump(TINY, path)
        cls.traces["tiny"] = path
        if not small:
            path = cls.s.path("train-host.json")
            hotest.hoctl("trace", "gen", "train", *SMALL_DIMS, "--gelu",
                         "--seq", "128", "--micro", "3", "--params", "host",
                         "--optimizer", "host", "--device", "a100", "--out",
                         path)
            cls.traces["train-host"] = path
            for seed in (1, 2, 3):
                path = cls.s.path("random%d.json" % seed)
                hotest.hoctl("trace", "gen", "random", "--seed", seed,
                             "--ops", "400", "--storages", "120",
                             "--p-pinned", "0.05", "--out", path)
                cls.traces["random%d" % seed] = path
            cls.traces["captured"] = cls._capture()
        else:
            path = cls.s.path("random1.json")
            hotest.hoctl("trace", "gen", "random", "--seed", "1", "--ops",
                         "150", "--storages", "50", "--out", path)
            cls.traces["random1"] = path
        cls.docs = {k: hotest.load(v) for k, v in cls.traces.items()}
        for base in ("train", "random1"):
            name = base + "-mov"
            cls.docs[name] = movable_variant(cls.docs[base], name)
            cls.traces[name] = cls.s.path(name + ".json")
            hotest.dump(cls.docs[name], cls.traces[name])
        cls.budgets = ["70%"] if small else ["50%", "70%", "90%"]
        cls.planners = planner_names()

    @classmethod
    def _capture(cls):
        import torch
        sys.path.insert(0, hotest.PYTHON)
        from hyperoffload import trace as hot
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64),
                                    torch.nn.GELU(), torch.nn.Linear(64, 8))
        opt = torch.optim.Adam(model.parameters())
        x = torch.randn(16, 32)
        y = torch.randint(0, 8, (16,))

        def step():
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        trace = hot.capture_step(step, model=model, optimizer=opt,
                                 name="mlp", device="a100")
        path = cls.s.path("captured.json")
        hot.save(trace, path)
        return path

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    # ------------------------------------------------------------ helpers
    def check_agreement(self, tname, sched_path, c_valid):
        """Python and C agree on this schedule file."""
        trace = self.docs[tname]
        sched = hotest.load(sched_path)
        py = ref_validator.simulate(trace, sched)
        what = "%s / %s" % (tname, sched_path)
        self.assertEqual(py["valid"], c_valid, "%s: validity, python says "
                         "%s" % (what, py["violation"]))
        rc, chk = hotest.hoctl_json("schedule", "check", "--trace",
                                    self.traces[tname], "--schedule",
                                    sched_path, expect=(0, 1))
        self.assertEqual(chk["valid"], py["valid"], "%s: C %s / python %s"
                         % (what, chk["violation"], py["violation"]))
        if not py["valid"]:
            self.assertEqual(chk["violation"]["op"], py["violation"]["op"],
                             "%s: C %s / python %s" % (what,
                                                       chk["violation"],
                                                       py["violation"]))
        pred = sched.get("predicted")
        self.assertIsNotNone(pred, what)
        if not py["stopped"]:
            m = py["metrics"]
            for k in ("peak_device_bytes", "peak_host_bytes", "compute_us",
                      "step_time_us", "h2d_bytes", "d2h_bytes"):
                self.assertTrue(close(pred[k], m[k]), "%s: %s predicted %r "
                                "python %r" % (what, k, pred[k], m[k]))
            self.assertTrue(close(pred["exposed_us"], m["exposed_us"],
                                  REL * m["step_time_us"]),
                            "%s: exposed_us predicted %r python %r"
                            % (what, pred["exposed_us"], m["exposed_us"]))
            self.assertEqual(py["over_budget"],
                             pred["peak_device_bytes"] >
                             sched["budget_bytes"], what)
            if chk["valid"]:
                self.assertTrue(chk["predicted_matches"], what)
        return py

    def plan(self, tname, planner, budget, out):
        return hotest.hoctl_json("plan", "--trace", self.traces[tname],
                                 "--budget", budget, "--planner", planner,
                                 "--out", out, expect=(0, 1))

    # ------------------------------------------------------------ tests
    def test_every_planner_agrees(self):
        checked = {p: 0 for p in self.planners}
        for tname in sorted(self.traces):
            for planner in self.planners:
                for budget in self.budgets:
                    out = self.s.path("%s-%s-%s.json"
                                      % (tname, planner, budget[:-1]))
                    if os.path.exists(out):
                        os.unlink(out)
                    p = hotest.hoctl("--json", "plan", "--trace",
                                     self.traces[tname], "--budget", budget,
                                     "--planner", planner, "--out", out,
                                     expect=(0, 1))
                    if hotest.no_result(p):
                        # no result object: only the oracle may refuse a
                        # trace (too many candidate gaps)
                        self.assertEqual(planner, "oracle", p.stderr)
                        self.assertNotEqual(tname, "tiny", p.stderr)
                        continue
                    res = json.loads(p.stdout)
                    if not res["feasible"]:
                        self.assertEqual(p.returncode, 1)
                        self.assertGreater(res["min_budget"],
                                           res["budget_bytes"])
                        self.assertGreaterEqual(res["min_budget"],
                                                res["working_set_bound"])
                        self.assertIn("infeasible", p.stderr)
                        self.assertFalse(os.path.exists(out))
                        # the smallest feasible budget it reports works
                        rc, again = self.plan(tname, planner,
                                              str(res["min_budget"]), out)
                        self.assertEqual(rc, 0, again)
                        self.assertTrue(again["valid"])
                        self.check_agreement(tname, out, True)
                        checked[planner] += 1
                        continue
                    self.assertEqual(p.returncode,
                                     0 if res["valid"] else 1)
                    if planner == "hoplan":
                        self.assertTrue(res["valid"], (tname, budget, res))
                    self.check_agreement(tname, out, res["valid"])
                    checked[planner] += 1
        for planner, n in checked.items():
            self.assertGreater(n, 0, "no schedule of %s was checked"
                               % planner)

    def _hoplan_schedule(self, tname, budget):
        """A valid hoplan schedule at `budget`, or at the smallest budget
        hoplan reports when that one is infeasible (initial: device
        storages all count at t = 0, so tight budgets can be)."""
        out = self.s.path("base-%s-%s.json" % (tname, budget[:-1]))
        rc, res = self.plan(tname, "hoplan", budget, out)
        if rc != 0 and not res.get("feasible", True):
            rc, res = self.plan(tname, "hoplan", str(res["min_budget"]), out)
        self.assertEqual(rc, 0, res)
        self.assertTrue(res["valid"], res)
        return hotest.load(out)

    def _both_reject(self, tname, sched, want_op, want_storage, label):
        path = self.s.path("broken-%s-%s.json" % (tname, label))
        hotest.dump(sched, path)
        py = ref_validator.simulate(self.docs[tname], sched)
        self.assertFalse(py["valid"], label)
        self.assertEqual(py["violation"]["op"], want_op,
                         "%s: python %s" % (label, py["violation"]))
        self.assertEqual(py["violation"]["storage"], want_storage, label)
        rc, chk = hotest.hoctl_json("schedule", "check", "--trace",
                                    self.traces[tname], "--schedule", path,
                                    expect=(1,))
        self.assertFalse(chk["valid"], label)
        self.assertEqual(chk["violation"]["op"], want_op,
                         "%s: C %s" % (label, chk["violation"]))
        self.assertEqual(chk["violation"]["storage"], want_storage, label)
        p = hotest.hoctl("schedule", "check", "--trace", self.traces[tname],
                         "--schedule", path, expect=(1,))
        self.assertIn("invalid: op %d" % want_op, p.stdout)

    def _first_untouched_read(self, trace, sched, kind):
        """(op, id) of the first read of an `initial: device` storage of
        `kind` with no action on it up to and including that point."""
        touched = {}
        for a in sched["actions"]:
            touched.setdefault(a["storage"], []).append(a["op"])
        by_id = {s["id"]: s for s in trace["storages"]}
        seen = set()
        for i, o in enumerate(trace["ops"]):
            for sid in o["reads"]:
                if sid in seen:
                    continue
                seen.add(sid)
                s = by_id[sid]
                if s["kind"] != kind or s["initial"] != "device":
                    continue
                if all(op > i for op in touched.get(sid, [])):
                    return i, sid
        raise AssertionError("no untouched %s read" % kind)

    def test_broken_prefetch_on_device(self):
        for tname in ("train", "decode"):
            sched = self._hoplan_schedule(tname, "50%")
            op, sid = self._first_untouched_read(self.docs[tname], sched,
                                                 "param")
            bad = copy.deepcopy(sched)
            bad["actions"].insert(0, {"op": op, "when": "before",
                                      "kind": "prefetch", "storage": sid})
            self._both_reject(tname, bad, op, sid, "prefetch-on-device")

    def test_broken_read_not_on_device(self):
        for tname in ("train", "decode"):
            sched = self._hoplan_schedule(tname, "50%")
            op, sid = self._first_untouched_read(self.docs[tname], sched,
                                                 "param")
            bad = copy.deepcopy(sched)
            bad["actions"].insert(0, {"op": op, "when": "before",
                                      "kind": "free_device", "storage": sid})
            self._both_reject(tname, bad, op, sid, "read-not-on-device")

    def test_broken_read_write_not_on_device(self):
        # op f reads and writes storage 1, which was offloaded after op a
        # and never brought back: allocating it for the write does not
        # bring its data, so the read is of a storage not on device
        sched = {"format": "hyperoffload-schedule", "version": 1,
                 "planner": "hand", "budget_bytes": 10**9, "actions": [
                     {"op": 0, "when": "after", "kind": "store", "storage": 1},
                     {"op": 0, "when": "after", "kind": "free_device",
                      "storage": 1},
                     {"op": 5, "when": "before", "kind": "prefetch",
                      "storage": 4},
                     {"op": 5, "when": "after", "kind": "store", "storage": 4},
                     {"op": 5, "when": "after", "kind": "free_device",
                      "storage": 4}]}
        self._both_reject("tiny", sched, 5, 1, "read-write-not-on-device")
        # with the prefetch it is valid for both
        sched["actions"].insert(2, {"op": 5, "when": "before",
                                    "kind": "prefetch", "storage": 1})
        path = self.s.path("tiny-rw-ok.json")
        hotest.dump(sched, path)
        self.assertTrue(ref_validator.simulate(self.docs["tiny"],
                                               sched)["valid"])
        rc, chk = hotest.hoctl_json("schedule", "check", "--trace",
                                    self.traces["tiny"], "--schedule", path)
        self.assertTrue(chk["valid"])

    def test_broken_stale_host_copy(self):
        # a weight gradient: written by micro-batch 0, accumulated by
        # micro-batch 1, read by the optimizer
        trace = self.docs["train"]
        out = self.s.path("none-train.json")
        rc, res = self.plan("train", "none", "1000%", out)
        self.assertEqual(rc, 0, res)
        sched = hotest.load(out)
        grad = [s["id"] for s in trace["storages"] if s["kind"] == "grad"][0]
        acc = [i for i, o in enumerate(trace["ops"])
               if grad in o["reads"] or grad in o["writes"]]
        self.assertEqual(len(acc), 3)
        a, b, c = acc
        self.assertIn(grad, trace["ops"][b]["writes"])
        bad = copy.deepcopy(sched)
        bad["actions"][0:0] = [
            {"op": a, "when": "after", "kind": "store", "storage": grad},
            {"op": b, "when": "after", "kind": "free_device",
             "storage": grad},
            {"op": c, "when": "before", "kind": "prefetch", "storage": grad},
        ]
        self._both_reject("train", bad, c, grad, "stale-host-copy")
        # the same with the store after the accumulation is valid
        good = copy.deepcopy(sched)
        good["actions"][0:0] = [
            {"op": b, "when": "after", "kind": "store", "storage": grad},
            {"op": b, "when": "after", "kind": "free_device",
             "storage": grad},
            {"op": c, "when": "before", "kind": "prefetch", "storage": grad},
        ]
        path = self.s.path("fixed-stale.json")
        del good["predicted"]
        hotest.dump(good, path)
        py = ref_validator.simulate(trace, good)
        self.assertTrue(py["valid"], py["violation"])
        rc, chk = hotest.hoctl_json("schedule", "check", "--trace",
                                    self.traces["train"], "--schedule", path)
        self.assertTrue(chk["valid"])
        m = py["metrics"]
        for k, v in chk["metrics"].items():
            self.assertTrue(close(v, m[k], REL * m["step_time_us"]),
                            (k, v, m[k]))
        self.assertEqual(chk["metrics"]["d2h_bytes"],
                         [s["bytes"] for s in trace["storages"]
                          if s["id"] == grad][0])

    def test_random_schedules_agree(self):
        """Random action lists (mostly sensible, some not) on random and
        generated traces: same verdict, same op, same figures."""
        rng = random.Random(1234)
        names = [n for n in sorted(self.traces) if n != "captured"]
        rounds = 6 if hotest.UNDER_VALGRIND else 60
        verdicts = {True: 0, False: 0}
        seen = {"wait": 0, "homes": 0, "bind_error": 0}
        for r in range(rounds):
            tname = names[r % len(names)]
            trace = self.docs[tname]
            sched = random_schedule(trace, rng)
            path = self.s.path("fuzz-%d.json" % r)
            hotest.dump(sched, path)
            py = ref_validator.simulate(trace, sched)
            seen["wait"] += any(a["kind"] == "wait"
                                for a in sched["actions"])
            seen["homes"] += bool(sched.get("homes"))
            if py["bind_error"]:
                # both refuse a schedule that does not fit the trace
                seen["bind_error"] += 1
                p = hotest.hoctl("schedule", "check", "--trace",
                                 self.traces[tname], "--schedule", path,
                                 expect=(1,))
                self.assertIn("does not fit", p.stderr)
                self.assertIn(py["bind_error"].split(":")[0] + ":",
                              p.stderr, "round %d: python %s" % (
                                  r, py["bind_error"]))
                continue
            rc, chk = hotest.hoctl_json("schedule", "check", "--trace",
                                        self.traces[tname], "--schedule",
                                        path, expect=(0, 1))
            what = "round %d on %s: C %s / python %s" % (
                r, tname, chk["violation"], py["violation"])
            self.assertEqual(chk["valid"], py["valid"], what)
            verdicts[py["valid"]] += 1
            if not py["valid"]:
                self.assertEqual(chk["violation"]["op"],
                                 py["violation"]["op"], what)
                self.assertEqual(chk["violation"]["storage"],
                                 py["violation"]["storage"], what)
            if not py["stopped"]:
                m = py["metrics"]
                for k, v in chk["metrics"].items():
                    self.assertTrue(close(v, m[k], 1e-6 * m["step_time_us"]
                                          if k == "exposed_us" else 0.0),
                                    "%s: %s C %r python %r" % (what, k, v,
                                                               m[k]))
        if not hotest.UNDER_VALGRIND:
            self.assertGreater(verdicts[True], 5)
            self.assertGreater(verdicts[False], 5)
            self.assertGreater(seen["wait"], 10, seen)
            self.assertGreater(seen["homes"], 3, seen)
            self.assertGreater(seen["bind_error"], 0, seen)

    def test_broken_prefetch_without_host_copy(self):
        trace = self.docs["tiny"]
        sched = {"format": "hyperoffload-schedule", "version": 1,
                 "planner": "hand", "budget_bytes": 10**9,
                 "actions": [{"op": 1, "when": "after", "kind": "free_device",
                              "storage": 3},
                             {"op": 2, "when": "before", "kind": "prefetch",
                              "storage": 3}]}
        self._both_reject("tiny", sched, 2, 3, "no-host-copy")
        # valid but over budget: both see it, at the op that allocated
        ok = {"format": "hyperoffload-schedule", "version": 1,
              "planner": "hand", "budget_bytes": 7999,
              "actions": [{"op": 5, "when": "before", "kind": "prefetch",
                           "storage": 4},
                          {"op": 5, "when": "after", "kind": "store",
                           "storage": 4},
                          {"op": 5, "when": "after", "kind": "free_device",
                           "storage": 4}]}
        path = self.s.path("tiny-over.json")
        hotest.dump(ok, path)
        py = ref_validator.simulate(trace, ok)
        self.assertTrue(py["over_budget"])
        self.assertFalse(py["stopped"])
        self.assertEqual(py["violation"]["op"], 1)  # op b allocates 3
        self.assertEqual(py["violation"]["storage"], 3)
        self.assertEqual(py["metrics"]["peak_device_bytes"], 9000)
        self.assertEqual(py["metrics"]["h2d_bytes"], 1000)
        self.assertEqual(py["metrics"]["d2h_bytes"], 1000)
        rc, chk = hotest.hoctl_json("schedule", "check", "--trace",
                                    self.traces["tiny"], "--schedule", path,
                                    expect=(1,))
        self.assertFalse(chk["valid"])
        self.assertEqual(chk["violation"]["op"], py["violation"]["op"])
        self.assertEqual(chk["metrics"]["peak_device_bytes"], 9000)


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/python3
"""hoctl's offline planning commands (hoctl/hoctl_plan.c): generators,
show, lossless conversion, budgets, check, exit codes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotest  # noqa: E402
import ref_validator  # noqa: E402

LLAMA7B_PARAMS = 6738415616


class HoctlPlanTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        hotest.require_hoctl()
        cls.s = hotest.Scratch()
        cls.train = cls.s.path("train.json")
        # activations dominate, parameters and optimizer state start on
        # host: budgets well below the peak can be met
        hotest.hoctl("trace", "gen", "train", "--layers", "4", "--hidden",
                     "1024", "--heads", "16", "--ffn", "2816", "--vocab",
                     "1000", "--seq", "1024" if hotest.UNDER_VALGRIND
                     else "2048", "--micro", "2", "--params", "host",
                     "--optimizer", "host", "--out", cls.train)

    def feasible(self, trace, budget):
        """`budget`, or hoplan's smallest feasible budget when it says
        `budget` is infeasible."""
        rc, res = hotest.hoctl_json("plan", "--trace", trace, "--budget",
                                    budget, expect=(0, 1))
        if rc == 0:
            return budget
        self.assertFalse(res["feasible"], res)
        return str(res["min_budget"])

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def test_gen_train_llama7b_totals(self):
        if hotest.UNDER_VALGRIND:
            seq, micro = "256", "1"
        else:
            seq, micro = "4096", "4"
        path = self.s.path("llama7b.pb")
        rc, res = hotest.hoctl_json("trace", "gen", "train", "--model",
                                    "llama2-7b", "--seq", seq, "--mbs", "1",
                                    "--micro", micro, "--device", "910b",
                                    "--out", path)
        self.assertEqual(res["name"], "llama2-7b-train-s%s-b1-m%s"
                         % (seq, micro))
        with open(path, "rb") as f:
            self.assertNotEqual(f.read(1), b"{")  # protobuf by extension
        _, show = hotest.hoctl_json("trace", "show", path)
        self.assertEqual(show["bytes_by_kind"]["param"], 2 * LLAMA7B_PARAMS)
        self.assertEqual(show["bytes_by_kind"]["grad"], 2 * LLAMA7B_PARAMS)
        self.assertEqual(show["bytes_by_kind"]["optimizer"],
                         12 * LLAMA7B_PARAMS)
        self.assertEqual(show["count_by_kind"]["param"], 32 * 9 + 3)
        self.assertEqual(show["ops"], res["ops"])
        # the largest single-op working set is the embedding's Adam update:
        # weight + gradient (bf16) + m, v, master (fp32)
        self.assertEqual(show["max_op_working_set_name"], "opt.embed")
        self.assertEqual(show["max_op_working_set"],
                         32000 * 4096 * (2 + 2 + 12))
        self.assertGreaterEqual(show["no_offload_peak"],
                                16 * LLAMA7B_PARAMS)

    def test_gen_decode_kv(self):
        path = self.s.path("decode.json")
        hotest.hoctl("trace", "gen", "decode", "--model", "llama3-8b",
                     "--layers", "2", "--prompt", "1024", "--tokens", "4",
                     "--batch", "8", "--kv-block", "256", "--out", path)
        _, show = hotest.hoctl_json("trace", "show", path)
        # 128 KiB per token for all 32 layers: 4 KiB per token and layer;
        # 5 blocks of 256 tokens per layer
        self.assertEqual(show["bytes_by_kind"]["kv"],
                         2 * 5 * 256 * 8 * 4096)
        self.assertEqual(show["count_by_kind"]["kv"], 2 * 5)
        self.assertEqual(show["name"], "custom-decode-p1024-t4-b8")

    def test_random_deterministic(self):
        a, b = self.s.path("r1.json"), self.s.path("r2.json")
        for p in (a, b):
            hotest.hoctl("trace", "gen", "random", "--seed", "9", "--ops",
                         "300", "--storages", "90", "--out", p)
        with open(a, "rb") as fa, open(b, "rb") as fb:
            self.assertEqual(fa.read(), fb.read())
        doc = hotest.load(a)
        self.assertEqual(len(doc["ops"]), 300)
        self.assertEqual(len(doc["storages"]), 90)

    def test_convert_lossless(self):
        pb = self.s.path("t.pb")
        back = self.s.path("t2.json")
        hotest.hoctl("trace", "convert", self.train, pb)
        hotest.hoctl("trace", "convert", pb, back)
        with open(self.train, "rb") as f1, open(back, "rb") as f2:
            self.assertEqual(f1.read(), f2.read())
        # --to wins over the extension
        odd = self.s.path("t.data")
        hotest.hoctl("trace", "convert", self.train, odd, "--to", "pb")
        with open(odd, "rb") as f:
            self.assertNotEqual(f.read(1), b"{")
        sched, spb, sback = (self.s.path("s.json"), self.s.path("s.pb"),
                             self.s.path("s2.json"))
        hotest.hoctl("plan", "--trace", odd, "--budget",
                     self.feasible(odd, "80%"), "--planner", "hoplan",
                     "--out", sched)
        self.assertGreater(len(hotest.load(sched)["actions"]), 0)
        hotest.hoctl("schedule", "convert", sched, spb)
        hotest.hoctl("schedule", "convert", spb, sback, "--to", "json")
        with open(sched, "rb") as f1, open(sback, "rb") as f2:
            self.assertEqual(f1.read(), f2.read())
        p = hotest.hoctl("schedule", "check", "--trace", pb, "--schedule",
                         spb)
        self.assertTrue(p.stdout.startswith("valid"))

    def test_budget_units(self):
        _, show = hotest.hoctl_json("trace", "show", self.train)
        peak = show["no_offload_peak"]
        cases = [("%d" % peak, peak), ("60%", peak * 60 // 100),
                 ("1TiB", 1 << 40), ("1T", 1 << 40),
                 ("1.5GiB", 3 << 29), ("2G", 2 << 30),
                 ("512MiB", 512 << 20), ("100000B", 100000)]
        for text, want in cases:
            rc, res = hotest.hoctl_json("plan", "--trace", self.train,
                                        "--budget", text, "--planner",
                                        "none", expect=(0, 1))
            self.assertEqual(res["budget_bytes"], want, text)
            self.assertEqual(res["no_offload_peak"], peak)
            # `none` never offloads: valid exactly when the peak fits
            self.assertEqual(res["valid"], peak <= want, text)
            self.assertEqual(rc, 0 if peak <= want else 1, text)
        for bad in ("", "x", "-5G", "5Q", "5%%", "G", "5 G B", "2GB", "1TB"):
            hotest.hoctl("plan", "--trace", self.train, "--budget", bad,
                         expect=(2,))

    def test_plan_infeasible_message(self):
        p = hotest.hoctl("plan", "--trace", self.train, "--budget", "1000",
                         expect=(1,))
        self.assertIn("budget 1000 B (1000 B) is infeasible for hoplan; "
                      "smallest feasible budget is", p.stderr)
        self.assertIn("largest single-op working set", p.stderr)
        rc, res = hotest.hoctl_json("plan", "--trace", self.train,
                                    "--budget", "1000", expect=(1,))
        self.assertFalse(res["feasible"])
        self.assertGreaterEqual(res["min_budget"], res["working_set_bound"])

    def test_human_output(self):
        out = self.s.path("h.json")
        p = hotest.hoctl("plan", "--trace", self.train, "--budget",
                         self.feasible(self.train, "75%"), "--out", out)
        for key in ("planner", "budget", "no-offload peak", "planned peak",
                    "compute", "step time", "exposed", "H2D", "D2H",
                    "planning time"):
            self.assertIn(key, p.stdout)
        p = hotest.hoctl("trace", "show", self.train)
        for key in ("ops", "storages", "accesses", "compute",
                    "no-offload peak", "largest op", "activation"):
            self.assertIn(key, p.stdout)
        p = hotest.hoctl("plan", "help")
        self.assertIn("planners: hoplan", p.stdout)

    def test_check_reports_violation(self):
        doc = hotest.load(self.train)
        op = [i for i, o in enumerate(doc["ops"]) if o["reads"]][0]
        sid = doc["ops"][op]["reads"][-1]  # a weight, on device from t=0
        bad = {"format": "hyperoffload-schedule", "version": 1,
               "budget_bytes": 10 ** 15,
               "actions": [{"op": op, "when": "before",
                            "kind": "free_device", "storage": sid}]}
        path = self.s.path("bad.json")
        hotest.dump(bad, path)
        p = hotest.hoctl("schedule", "check", "--trace", self.train,
                         "--schedule", path, expect=(1,))
        self.assertIn("invalid: op %d (%s), storage %d"
                      % (op, doc["ops"][op]["name"], sid), p.stdout)
        bad["actions"][0]["storage"] = 123456789
        hotest.dump(bad, path)
        p = hotest.hoctl("schedule", "check", "--trace", self.train,
                         "--schedule", path, expect=(1,))
        self.assertIn("unknown storage id 123456789", p.stderr)

    def test_bound_never_beaten(self):
        """On small random traces, every planner's valid schedule, judged
        by the independent validator, exposes at least the printed lower
        bound (fast and full) at its budget."""
        planners = ("hoplan", "none", "seed-greedy", "ms-distance",
                    "reactive-lru", "oracle")
        small = hotest.UNDER_VALGRIND
        seeds = (1,) if small else (1, 2, 3, 4, 5, 6)
        checked = positive = 0
        for seed in seeds:
            tr = self.s.path("r%d.json" % seed)
            hotest.hoctl("trace", "gen", "random", "--seed", seed, "--ops",
                         "14", "--storages", "6", "--max-refs", "3",
                         "--min-bytes", "1000", "--max-bytes", "100000",
                         "--p-device", "0.3", "--p-host", "0.3",
                         "--p-retained", "0.4", "--out", tr)
            trace = hotest.load(tr)
            for pct in ("65%",) if small else ("45%", "65%", "85%"):
                for mode in ("full",) if small else ("fast", "full"):
                    for planner in planners:
                        out = self.s.path("rs.json")
                        if os.path.exists(out):
                            os.unlink(out)
                        rc, res = hotest.hoctl_json(
                            "plan", "--trace", tr, "--budget", pct,
                            "--planner", planner, "--bound", mode, "--out",
                            out, expect=(0, 1))
                        b = res["bound"]
                        self.assertEqual(b["mode"], mode)
                        if not res["feasible"] or not os.path.exists(out):
                            continue
                        ref = ref_validator.simulate(trace,
                                                     hotest.load(out))
                        if not ref["valid"]:
                            continue
                        self.assertFalse(b["infeasible"], (seed, pct))
                        lb = b["exposed_lower_bound_us"]
                        exp = ref["metrics"]["exposed_us"]
                        self.assertLessEqual(
                            lb, exp * (1 + 1e-9) + 1e-6,
                            "%s at %s (seed %d, %s) exposes %r < bound %r"
                            % (planner, pct, seed, mode, exp, lb))
                        self.assertGreaterEqual(lb, b["closed_form_us"]
                                                - 1e-9)
                        checked += 1
                        positive += lb > 0
        self.assertGreater(checked, 2 if small else 20)
        if not small:
            self.assertGreater(positive, 0)

    def test_bound_output(self):
        budget = self.feasible(self.train, "60%")
        p = hotest.hoctl("plan", "--trace", self.train, "--budget", budget)
        lines = p.stdout.splitlines()
        exposed = [i for i, l in enumerate(lines) if l.startswith("exposed ")]
        self.assertEqual(len(exposed), 2, p.stdout)  # exposed, exposed/bound
        self.assertTrue(lines[exposed[0] + 1].startswith("bound "), p.stdout)
        self.assertRegex(lines[exposed[0] + 1],
                         r"\((closed form|lp|lp \(limit\)), fast: \d+ "
                         r"checkpoints, ~\d+ ops/segment, limit 300 ms; ")
        self.assertIn("exposed / bound", p.stdout)
        _, res = hotest.hoctl_json("plan", "--trace", self.train, "--budget",
                                   budget)
        b = res["bound"]
        self.assertEqual(b["mode"], "fast")  # the default
        self.assertEqual(b["time_limit_ms"], 300)
        self.assertLessEqual(b["exposed_lower_bound_us"],
                             res["metrics"]["exposed_us"] * (1 + 1e-9))
        self.assertIn("device_floor", res)
        _, res = hotest.hoctl_json("plan", "--trace", self.train, "--budget",
                                   budget, "--bound", "off")
        self.assertIsNone(res["bound"])
        p = hotest.hoctl("plan", "--trace", self.train, "--budget", budget,
                         "--bound", "off")
        self.assertNotIn("bound", p.stdout)
        _, res = hotest.hoctl_json("plan", "--trace", self.train, "--budget",
                                   budget, "--bound", "full")
        self.assertEqual(res["bound"]["time_limit_ms"], 20000)
        hotest.hoctl("plan", "--trace", self.train, "--budget", budget,
                     "--bound", "exact", expect=(2,))

    def test_curve_budget(self):
        _, res = hotest.hoctl_json("plan", "--trace", self.train, "--curve",
                                   "budget", "--budgets", "90%,50%,70%,30%",
                                   "--bound", "off")
        self.assertEqual(res["axis"], "budget")
        self.assertTrue(res["monotone"])
        pts = res["points"]
        peak = res["no_offload_peak"]
        self.assertEqual([p["budget_bytes"] for p in pts],
                         [peak * k // 100 for k in (90, 50, 70, 30)])
        feas = sorted((p for p in pts if p["feasible"]),
                      key=lambda p: p["budget_bytes"])
        self.assertTrue(feas)
        for a, b in zip(feas, feas[1:]):
            self.assertLessEqual(b["exposed_us"], a["exposed_us"])
        for p in feas:
            self.assertLessEqual(p["peak_device_bytes"], p["budget_bytes"])
            # hoplan alone at the point is never better than the curve
            rc, one = hotest.hoctl_json("plan", "--trace", self.train,
                                        "--budget", p["budget_bytes"],
                                        "--bound", "off", expect=(0, 1))
            if rc == 0:
                self.assertLessEqual(p["exposed_us"],
                                     one["metrics"]["exposed_us"])
        _, res = hotest.hoctl_json("plan", "--trace", self.train, "--curve",
                                   "budget", "--points", "4")
        self.assertEqual([p["budget_bytes"] for p in res["points"]],
                         [peak * k // 4 for k in (1, 2, 3, 4)])
        for p in res["points"]:
            if p["feasible"]:
                self.assertLessEqual(p["bound"]["exposed_lower_bound_us"],
                                     p["exposed_us"] * (1 + 1e-9) + 1e-6)
        p = hotest.hoctl("plan", "--trace", self.train, "--curve", "budget",
                         "--points", "3", "--bound", "off")
        self.assertIn("EXPOSED", p.stdout)
        self.assertIn("budget curve of hoplan: 3 points", p.stdout)

    def test_curve_bandwidth(self):
        budget = self.feasible(self.train, "60%")
        _, res = hotest.hoctl_json("plan", "--trace", self.train, "--curve",
                                   "bandwidth", "--budget", budget,
                                   "--scales", "100%,0.25,50%",
                                   "--bound", "off")
        self.assertEqual(res["axis"], "bandwidth")
        pts = res["points"]
        self.assertEqual([p["scale"] for p in pts], [1.0, 0.25, 0.5])
        link = hotest.load(self.train)["link"]
        for p in pts:
            self.assertAlmostEqual(p["h2d_gbps"], link["h2d_gbps"] *
                                   p["scale"])
        byscale = sorted(pts, key=lambda p: p["scale"])
        if res["monotone"]:
            for a, b in zip(byscale, byscale[1:]):
                if a["feasible"]:
                    self.assertTrue(b["feasible"])
                    self.assertLessEqual(b["exposed_us"], a["exposed_us"])

    def test_gen_train_movable(self):
        path = self.s.path("mov.json")
        hotest.hoctl("trace", "gen", "train", "--layers", "2", "--hidden",
                     "256", "--heads", "4", "--ffn", "704", "--vocab", "500",
                     "--seq", "256", "--params", "movable", "--optimizer",
                     "movable", "--out", path)
        doc = hotest.load(path)
        kinds = {}
        for st in doc["storages"]:
            kinds.setdefault(st["kind"], set()).add(
                (st["initial"], st.get("movable", False)))
        self.assertEqual(kinds["param"], {("device", True)})
        self.assertEqual(kinds["optimizer"], {("device", True)})
        self.assertNotIn(True, {m for _, m in kinds["activation"]})
        # the bound sees below the state's size: a budget under the
        # parameters + optimizer state is not ruled out when movable
        rc, res = hotest.hoctl_json("plan", "--trace", path, "--budget",
                                    "30%", expect=(0, 1))
        self.assertFalse(res["bound"]["infeasible"], res["bound"])
        # the same trace with the state fixed on the device: provably not
        fixed = self.s.path("fixed.json")
        hotest.hoctl("trace", "gen", "train", "--layers", "2", "--hidden",
                     "256", "--heads", "4", "--ffn", "704", "--vocab", "500",
                     "--seq", "256", "--out", fixed)
        rc, res = hotest.hoctl_json("plan", "--trace", fixed, "--budget",
                                    "30%", expect=(1,))
        self.assertTrue(res["bound"]["infeasible"], res["bound"])
        self.assertIsNone(res["bound"]["exposed_lower_bound_us"])
        self.assertGreater(res["bound"]["floor_bytes"], res["budget_bytes"])
        hotest.hoctl("trace", "gen", "train", "--layers", "2", "--hidden",
                     "256", "--heads", "4", "--ffn", "704", "--vocab", "500",
                     "--params", "elsewhere", expect=(2,))

    def test_plan_via_daemon(self):
        """`hoctl plan --daemon` asks hyperoffloadd (PlanRequest with the
        bound mode): the same schedule figures, min_budget, device_floor
        and closed-form bound as planning here; off gives no bound; an
        infeasible budget is the daemon's sentence; no daemon exits 69."""
        budget = self.feasible(self.train, "60%")
        d = hotest.Daemon(self.s, name="plan")
        try:
            _, local = hotest.hoctl_json("plan", "--trace", self.train,
                                         "--budget", budget)
            for mode in ("fast", "off", "fast"):
                _, res = hotest.hoctl_json("--socket", d.sock, "plan",
                                           "--trace", self.train, "--budget",
                                           budget, "--bound", mode,
                                           "--daemon")
                self.assertTrue(res["valid"], res)
                self.assertEqual(res["metrics"], local["metrics"])
                self.assertEqual(res["min_budget"], local["min_budget"])
                self.assertEqual(res["device_floor"], local["device_floor"])
                if mode == "off":
                    self.assertIsNone(res["bound"])
                    continue
                b, lb = res["bound"], local["bound"]
                self.assertEqual(b["mode"], "fast")
                self.assertEqual(b["time_limit_ms"], 300)
                self.assertAlmostEqual(b["closed_form_us"],
                                       lb["closed_form_us"])
                self.assertLessEqual(b["exposed_lower_bound_us"],
                                     res["metrics"]["exposed_us"]
                                     * (1 + 1e-9) + 1e-6)
            p = hotest.hoctl("--socket", d.sock, "plan", "--trace",
                             self.train, "--budget", budget, "--daemon")
            self.assertIn("bound ", p.stdout)
            self.assertIn("exposed / bound", p.stdout)
            # infeasible: the daemon's own sentence, exit 1
            p = hotest.hoctl("--socket", d.sock, "plan", "--trace",
                             self.train, "--budget", "1000", "--daemon",
                             expect=(1,))
            self.assertIn("smallest feasible budget is", p.stderr)
            hotest.hoctl("plan", "--trace", self.train, "--curve", "budget",
                         "--daemon", expect=(2,))
        finally:
            self.assertEqual(d.stop(), 0)
        hotest.hoctl("--socket", self.s.path("none.sock"), "plan", "--trace",
                     self.train, "--budget", budget, "--daemon",
                     expect=(69,))

    def test_curve_usage(self):
        for args in (["--curve", "time"],
                     ["--curve", "bandwidth"],  # needs --budget
                     ["--curve", "budget", "--budget", "50%"],
                     ["--curve", "budget", "--points", "0"],
                     ["--curve", "budget", "--points", "3", "--budgets",
                      "50%"],
                     ["--curve", "budget", "--budgets", "50%,,70%"],
                     ["--curve", "budget", "--scales", "0.5"],
                     ["--curve", "bandwidth", "--budget", "1G",
                      "--scales", "0"],
                     ["--curve", "budget", "--out", self.s.path("c.json")],
                     ["--budget", "50%", "--points", "3"]):
            hotest.hoctl("plan", "--trace", self.train, *args, expect=(2,))

    def test_exit_codes(self):
        hotest.hoctl("trace", expect=(2,))
        hotest.hoctl("trace", "frobnicate", expect=(2,))
        hotest.hoctl("trace", "gen", "train", "--model", "nope",
                     expect=(2,))
        hotest.hoctl("trace", "gen", "train", "--layers", "2", expect=(2,))
        hotest.hoctl("trace", "gen", "train", "--model", "llama2-7b",
                     "--heads", "30", "--out", self.s.path("x.json"),
                     expect=(2,))
        hotest.hoctl("trace", "gen", "random", "--ops", "10", expect=(2,))
        hotest.hoctl("trace", "show", self.s.path("missing.json"),
                     expect=(4,))
        hotest.hoctl("plan", "--trace", self.train, expect=(2,))
        hotest.hoctl("plan", "--trace", self.train, "--budget", "1G",
                     "--planner", "magic", expect=(2,))
        hotest.hoctl("trace", "convert", self.train,
                     self.s.path("y.json"), "--to", "xml", expect=(2,))
        junk = self.s.path("junk.json")
        with open(junk, "w") as f:
            f.write('{"format": "hyperoffload-trace", "version": 1, "ops": [')
        p = hotest.hoctl("trace", "show", junk, expect=(1,))
        self.assertIn("invalid JSON at line 1", p.stderr)
        p = hotest.hoctl("schedule", "check", "--trace", self.train,
                         "--schedule", self.train, expect=(1,))
        self.assertIn('format: expected "hyperoffload-schedule"', p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/python3
"""hoctl's offline planning commands (hoctl/hoctl_plan.c): generators,
show, lossless conversion, budgets, check, exit codes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotest  # noqa: E402

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

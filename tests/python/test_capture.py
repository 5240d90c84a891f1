#!/usr/bin/python3
"""PyTorch capture (examples/pytorch/hyperoffload_trace.py) end to end:
capture one training step of a small TransformerEncoder with Adam, load it
with hoctl, plan it at 70% of its no-offload peak and check the schedule.
"""

import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotest  # noqa: E402

sys.path.insert(0, hotest.PYTHON)
from hyperoffload import trace as hot  # noqa: E402


# seq 128 x batch 8 (rather than 32 x 4) so that activations, not the
# parameters, gradients and Adam state that must be on device at the end of
# the step, make the peak: 70% of it is then a budget a planner can meet.
def build_step(d_model=64, heads=4, layers=2, seq=128, batch=8):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(d_model=d_model, nhead=heads,
                                             dim_feedforward=4 * d_model,
                                             dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=layers)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, seq, d_model)
    target = torch.randn(batch, seq, d_model)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()

    return model, opt, step


class CaptureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        hotest.require_hoctl()
        cls.scratch = hotest.Scratch()
        cls.model, cls.opt, step = build_step()
        cls.trace = hot.capture_step(step, model=cls.model,
                                     optimizer=cls.opt, name="encoder",
                                     device="910b")
        cls.path = cls.scratch.path("capture.json")
        hot.save(cls.trace, cls.path)
        cls.n_params = len(list(cls.model.parameters()))
        cls.n_state = sum(1 for st in cls.opt.state.values()
                          for v in st.values()
                          if isinstance(v, torch.Tensor))

    @classmethod
    def tearDownClass(cls):
        cls.scratch.close()

    def test_show_counts(self):
        _, show = hotest.hoctl_json("trace", "show", self.path)
        self.assertEqual(show["schema"], 1)
        self.assertEqual(show["name"], "encoder")
        self.assertEqual(show["ops"], len(self.trace["ops"]))
        self.assertEqual(show["storages"], len(self.trace["storages"]))
        counts = show["count_by_kind"]
        # 2 layers x 12 parameter tensors of TransformerEncoderLayer
        self.assertEqual(self.n_params, 24)
        self.assertEqual(counts["param"], self.n_params)
        self.assertEqual(counts["grad"], self.n_params)
        # Adam: exp_avg, exp_avg_sq and step per parameter
        self.assertEqual(self.n_state, 3 * self.n_params)
        self.assertEqual(counts["optimizer"], self.n_state)
        self.assertGreater(counts["activation"], 50)
        param_bytes = sum(p.numel() * p.element_size()
                          for p in self.model.parameters())
        self.assertEqual(show["bytes_by_kind"]["param"], param_bytes)
        self.assertEqual(show["bytes_by_kind"]["grad"], param_bytes)
        self.assertGreater(show["no_offload_peak"], param_bytes)
        self.assertAlmostEqual(show["link"]["h2d_gbps"], 28.0)
        self.assertAlmostEqual(show["link"]["latency_us"], 15.0)
        self.assertGreater(show["compute_us"], 0)

    def test_storage_attributes(self):
        by_kind = {}
        for s in self.trace["storages"]:
            by_kind.setdefault(s["kind"], []).append(s)
        for s in by_kind["param"]:
            self.assertEqual(s["initial"], "device")
            self.assertTrue(s["retained"])
        for s in by_kind["grad"] + by_kind["optimizer"]:
            self.assertTrue(s["retained"])    # alive after the step
            self.assertEqual(s["initial"], "none")  # made during it
        # most activations die inside the step
        dead = [s for s in by_kind["activation"] if not s["retained"]]
        self.assertGreater(len(dead), len(by_kind["activation"]) // 2)

    def test_movable_marks(self):
        # parameters exist at step start and are retained: movable; the
        # gradients and Adam state this first step creates cannot be
        for s in self.trace["storages"]:
            if s["kind"] == "param":
                self.assertTrue(s["movable"], s)
            elif s["kind"] in ("grad", "optimizer"):
                self.assertFalse(s["movable"], s)  # initial: none
            else:
                self.assertFalse(s["movable"], s)
            if s["movable"]:
                self.assertTrue(s["retained"])
                self.assertNotEqual(s["initial"], "none")
        # after a warm-up step, with gradients kept (set_to_none=False),
        # gradients and optimizer state exist at step start: movable too
        torch.manual_seed(2)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32),
                                    torch.nn.GELU(), torch.nn.Linear(32, 4))
        opt = torch.optim.Adam(model.parameters())
        x = torch.randn(8, 16)

        def step():
            opt.zero_grad(set_to_none=False)
            model(x).square().mean().backward()
            opt.step()

        step()
        warm = hot.capture_step(step, model=model, optimizer=opt,
                                name="warm", device="a100")
        marked = {}
        for s in warm["storages"]:
            if s["movable"]:
                marked[s["kind"]] = marked.get(s["kind"], 0) + 1
                self.assertEqual(s["initial"], "device")
                self.assertTrue(s["retained"])
        n = len(list(model.parameters()))
        self.assertEqual(marked.get("param"), n)
        self.assertEqual(marked.get("grad"), n)
        self.assertGreaterEqual(marked.get("optimizer", 0), 2 * n)
        path = self.scratch.path("warm.json")
        hot.save(warm, path)
        _, show = hotest.hoctl_json("trace", "show", path)
        self.assertEqual(show["storages"], len(warm["storages"]))

    def test_views_and_inplace(self):
        ops = self.trace["ops"]
        views = [o for o in ops if o["name"] in (
            "aten.view.default", "aten.t.default", "aten.transpose.int",
            "aten._reshape_alias.default", "aten.detach.default")]
        self.assertTrue(views)
        for o in views:  # a view is its base storage: nothing written
            self.assertEqual(o["writes"], [], o)
            self.assertEqual(len(o["reads"]), 1, o)
        inplace = [o for o in ops if o["name"] in (
            "aten.add_.Tensor", "aten.mul_.Tensor", "aten.addcmul_.default")]
        self.assertTrue(inplace)
        for o in inplace:  # self is read and written
            self.assertTrue(o["writes"], o)
            self.assertIn(o["writes"][0], o["reads"], o)
        mms = [o for o in ops if o["name"] == "aten.mm.default"]
        self.assertTrue(mms)  # backward matmuls are seen too
        for o in mms:
            self.assertEqual(len(o["writes"]), 1)
            self.assertEqual(len(o["reads"]), 2)

    def test_pointer_reuse_gets_new_id(self):
        # The allocator usually hands the freed block straight back; it is
        # not obliged to, so try a few times and check the attempt where it
        # did (the last two mul_ ops of the trace).
        rec = hot.TraceRecorder()
        reused = False
        with rec:
            for _ in range(32):
                a = torch.ones(4096)
                pa = a.storage().data_ptr()
                a.mul_(2)
                del a
                b = torch.ones(4096)
                pb = b.storage().data_ptr()
                b.mul_(3)
                if pa == pb:
                    reused = True
                    break
                del b
        self.assertTrue(reused, "allocator never reused the pointer in 32 "
                        "attempts; the test cannot check reuse")
        trace = rec.to_trace(name="reuse")
        ids = [o["writes"][0] for o in trace["ops"]
               if o["name"] == "aten.mul_.Tensor"][-2:]
        self.assertEqual(len(ids), 2)
        self.assertNotEqual(ids[0], ids[1])
        first = [s for s in trace["storages"] if s["id"] == ids[0]][0]
        second = [s for s in trace["storages"] if s["id"] == ids[1]][0]
        self.assertFalse(first["retained"])
        self.assertTrue(second["retained"])  # b is still alive
        del b

    def test_plan_70_percent_is_valid(self):
        sched = self.scratch.path("plan70.json")
        _, res = hotest.hoctl_json("plan", "--trace", self.path, "--budget",
                                   "70%", "--out", sched)
        self.assertTrue(res["valid"])
        self.assertLessEqual(res["metrics"]["peak_device_bytes"],
                             res["budget_bytes"])
        self.assertEqual(res["budget_bytes"],
                         int(res["no_offload_peak"] * 70 // 100))
        p = hotest.hoctl("schedule", "check", "--trace", self.path,
                         "--schedule", sched)
        self.assertTrue(p.stdout.startswith("valid"), p.stdout)
        _, chk = hotest.hoctl_json("schedule", "check", "--trace",
                                   self.path, "--schedule", sched)
        self.assertTrue(chk["valid"])
        self.assertTrue(chk["predicted_matches"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

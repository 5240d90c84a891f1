#!/usr/bin/python3
"""OffloadSession (python/hyperoffload/session.py) against a real
hyperoffloadd, through libhyperoffload (ctypes).

A small TransformerEncoder with Adam on CPU runs N steps without offload
and N steps with the session, from identical initial states: loss and every
parameter gradient must be torch.equal at every step; during the replay
steps the bytes held by live torch tensors must stay within the session's
HBM grant, which is below the no-offload peak; bytes must really go to the
pool and back.  Further cases: saved views come back as the same views of
one restored storage, a step that differs from the trace falls back and is
traced again, a full pool only limits what moves, and an unreachable
daemon leaves training untouched.

Environment (tests/python/CMakeLists.txt): HO_BUILD_DIR (the daemon is
$HO_BUILD_DIR/bin/hyperoffloadd, the library $HO_BUILD_DIR/lib/... unless
HO_LIBRARY names one),
HO_UNDER_VALGRIND=1 with HO_WRAP (the daemon runs under valgrind; fewer
steps), HO_DAEMON_ASAN_OPTIONS (sanitizer builds: the daemon's
ASAN_OPTIONS, with leak checks, while python runs with LD_PRELOAD of the
sanitizer runtimes and without), HO_PRINT=1 prints the figures.
"""

import json
import os
import sys
import time
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotest  # noqa: E402

sys.path.insert(0, hotest.PYTHON)
import hyperoffload as ho  # noqa: E402
from hyperoffload import session as hos  # noqa: E402

STEPS = 3 if hotest.UNDER_VALGRIND else 4
PRINT = os.environ.get("HO_PRINT", "0") not in ("", "0")
Daemon = hotest.Daemon  # the daemon these tests start


# ----------------------------------------------------------------- models
def encoder(seed=1):
    """TransformerEncoder (d 64, 4 heads, 2 layers, ffn 256), Adam, and
    the steps' data: seq 128 x batch 8 so that activations, not weights,
    make the peak (as in test_capture)."""
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4,
                                             dim_feedforward=256,
                                             dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed + 1)
    data = [(torch.randn(8, 128, 64, generator=g),
             torch.randn(8, 128, 64, generator=g)) for _ in range(STEPS)]
    return model, opt, data


def run_steps(model, opt, data, session=None):
    """One training step per batch; the session (if any) wraps forward and
    backward, opt.step() runs outside it.  Returns per step (loss, grads,
    live peak) -- LiveBytesMode measures the peak without a session."""
    out = []
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        if session is None:
            with hos.LiveBytesMode(model.parameters()) as m:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
            peak = m.tracker.peak
        else:
            with session:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
            peak = session.steps[-1]["live_peak"]
        out.append((loss.detach().clone(),
                    [p.grad.clone() for p in model.parameters()], peak))
        opt.step()
    return out


VIEW_CHECKS = []  # (aliased, offset difference, restored) per backward


class _Halves(torch.autograd.Function):
    """y = a * b for the two halves a, b of h's columns; saves a and b,
    two views of one storage, and checks in backward that they still are
    (restored or not)."""

    @staticmethod
    def forward(ctx, h, d):
        hd = h.detach()
        a, b = hd.narrow(1, 0, d), hd.narrow(1, d, d)
        ctx.save_for_backward(a, b)
        ctx.d = d
        ctx.ptr = hd.storage().data_ptr()
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        VIEW_CHECKS.append((
            a.storage().data_ptr() == b.storage().data_ptr() and
            a.stride() == b.stride() == (2 * ctx.d, 1),
            b.storage_offset() - a.storage_offset(),
            a.storage().data_ptr() != ctx.ptr))
        return torch.cat([g * b, g * a], dim=1), None


class _Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.d = d
        self.lin = torch.nn.Linear(d, 2 * d)

    def forward(self, x):
        return _Halves.apply(self.lin(x), self.d) + x


def view_model(seed=3):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(*[_Block(128) for _ in range(6)])
    g = torch.Generator().manual_seed(seed + 1)
    data = [torch.randn(256, 128, generator=g) for _ in range(STEPS)]
    return model, data


def view_steps(model, data, session=None):
    out = []
    for x in data:
        model.zero_grad(set_to_none=True)
        del VIEW_CHECKS[:]
        if session is None:
            loss = model(x).square().mean()
            loss.backward()
        else:
            with session:
                loss = model(x).square().mean()
                loss.backward()
        out.append((loss.detach().clone(),
                    [p.grad.clone() for p in model.parameters()],
                    list(VIEW_CHECKS)))
    return out


# ----------------------------------------------------------------- tests
class OffloadSessionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for path in (hotest.DAEMON, ho.library_path() or ""):
            if not os.path.exists(path):
                raise unittest.SkipTest("not built: %s" % path)
        cls.scratch = hotest.Scratch()
        cls.daemon = Daemon(cls.scratch)

    @classmethod
    def tearDownClass(cls):
        rc = cls.daemon.stop()
        log = cls.daemon.text()
        cls.scratch.close()
        if rc != 0:
            raise AssertionError("daemon exited %d (99: valgrind errors):\n"
                                 "%s" % (rc, log[-4000:]))

    def session(self, model, daemon=None, **kw):
        workdir = self.scratch.path("work-%s" % self.id().split(".")[-1])
        s = hos.OffloadSession(model, socket=(daemon or self.daemon).sock,
                               workdir=workdir, client_name="test", **kw)
        self.addCleanup(s.close)
        return s

    def assertSameSteps(self, base, run):
        self.assertEqual(len(base), len(run))
        for i, (b, r) in enumerate(zip(base, run)):
            self.assertTrue(torch.equal(b[0], r[0]),
                            "step %d: loss %r != %r" % (i + 1, b[0], r[0]))
            self.assertEqual(len(b[1]), len(r[1]))
            for j, (gb, gr) in enumerate(zip(b[1], r[1])):
                self.assertTrue(torch.equal(gb, gr),
                                "step %d: gradient %d differs" % (i + 1, j))

    def test_encoder_bit_identical_within_budget(self):
        base_model, opt, data = encoder()
        base = run_steps(base_model, opt, data)
        no_offload_peak = max(b[2] for b in base)

        model, opt, data = encoder()
        s = self.session(model, optimizer=opt)
        t0 = time.time()
        run = run_steps(model, opt, data, s)
        elapsed = time.time() - t0
        summary = s.summary()
        if PRINT:
            print(json.dumps({"no_offload_live_peak": no_offload_peak,
                              "summary": summary, "seconds": elapsed}))

        self.assertIsNone(s.disabled)
        self.assertSameSteps(base, run)
        # parameters after the last optimizer step, too
        for pb, pr in zip(base_model.parameters(), model.parameters()):
            self.assertTrue(torch.equal(pb, pr))
        self.assertEqual([st["mode"] for st in s.steps],
                         ["trace"] + ["replay"] * (STEPS - 1))
        for st in s.steps:
            self.assertIsNone(st["diverged"], st)

        # the budget: the HBM grant, from the planner's figures
        self.assertEqual(s.budget, s.client.hbm_granted)
        self.assertEqual(s.plan_info["budget_bytes"], s.budget)
        self.assertEqual(s.plan_info["planner"], "hoplan")
        self.assertLessEqual(s.min_budget, s.budget)
        self.assertLess(s.budget, s.no_offload_peak)
        self.assertLessEqual(s.plan_info["peak_device_bytes"], s.budget)
        # the planner's no-offload peak is the measured one (the submitted
        # trace models when tensors really die), give or take scalars
        self.assertLess(abs(s.no_offload_peak - no_offload_peak), 4096)

        for st in s.steps[1:]:
            # measured during every replay step
            self.assertGreater(st["live_peak"], 0)
            self.assertLessEqual(st["live_peak"], s.budget, st)
            self.assertLess(s.budget, no_offload_peak)
            # bytes went to the pool and came back
            self.assertGreater(st["stores"], 0, st)
            self.assertGreater(st["d2h_bytes"], 0, st)
            self.assertGreater(st["frees"], 0, st)
            self.assertGreater(st["freed_bytes"], 0, st)
            self.assertEqual(st["h2d_bytes"], st["d2h_bytes"], st)
            self.assertEqual(st["prefetches"] + st["on_demand"],
                             st["stores"], st)
            self.assertEqual(st["free_ineffective"], 0, st)
        self.assertEqual(summary["replay_steps"], STEPS - 1)
        self.assertLessEqual(summary["replay_live_peak"], s.budget)

        # the pool really holds the host copies (one extent per storage)
        usage = s.client.usage()
        self.assertEqual(usage["hbm_granted"], s.budget)
        moved = {a["storage"] for a in s.schedule["actions"]
                 if a["kind"] == "store"}
        self.assertEqual(set(s._extents), moved)
        self.assertGreaterEqual(usage["ddr_bytes"],
                                s.steps[-1]["d2h_bytes"])

        # the submitted trace: only saved activations may move, and the
        # daemon's schedule passes the independent check
        trace = hotest.load(os.path.join(s.workdir, "trace.json"))
        kinds = {st["id"]: st for st in trace["storages"]}
        for st in trace["storages"]:
            if st["kind"] in ("param", "grad", "optimizer", "other"):
                self.assertTrue(st["pinned"], st)
        for sid in moved:
            self.assertEqual(kinds[sid]["kind"], "activation")
            self.assertFalse(kinds[sid]["pinned"])
        _, chk = hotest.hoctl_json(
            "schedule", "check", "--trace",
            os.path.join(s.workdir, "trace.json"), "--schedule",
            os.path.join(s.workdir, "schedule.json"))
        self.assertTrue(chk["valid"], chk)

    def test_saved_views_come_back_as_views(self):
        model, data = view_model()
        base = view_steps(model, data)
        model, data = view_model()
        s = self.session(model, budget_fraction=0.0)
        run = view_steps(model, data, s)
        self.assertIsNone(s.disabled)
        self.assertSameSteps(base, run)
        self.assertEqual(s.budget, s.min_budget)
        restored = 0
        for i, (_, _, checks) in enumerate(run):
            self.assertEqual(len(checks), 6)
            for aliased, offset, was_restored in checks:
                self.assertTrue(aliased, "step %d: halves no longer views "
                                "of one storage" % (i + 1))
                self.assertEqual(offset, 128)
                if i > 0:
                    restored += was_restored
        # the replay steps brought some of them back from the pool
        self.assertGreater(restored, 0)
        for st in s.steps[1:]:
            self.assertEqual(st["mode"], "replay")
            self.assertGreaterEqual(st["views_restored"], 2, st)
            self.assertLessEqual(st["live_peak"], s.budget, st)

    def test_divergence_falls_back_and_retraces(self):
        model, opt, data = encoder(seed=5)
        # step 2 has a shorter sequence: every size differs from the trace
        x, y = data[1]
        data[1] = (x[:, :96].contiguous(), y[:, :96].contiguous())
        data.append(data[0])
        base = run_steps(model, opt, data)
        model, opt, _ = encoder(seed=5)
        s = self.session(model, optimizer=opt)
        run = run_steps(model, opt, data, s)
        self.assertSameSteps(base, run)
        modes = [st["mode"] for st in s.steps]
        self.assertEqual(modes[:3], ["trace", "replay", "trace"])
        self.assertIn("bytes", s.steps[1]["diverged"])
        self.assertLess(s.steps[1]["diverged_at"], 10)
        self.assertEqual(s.steps[1]["d2h_bytes"], 0)
        self.assertIsNone(s.steps[3]["diverged"])
        self.assertEqual(s.steps[3]["mode"], "replay")
        self.assertGreater(s.steps[3]["d2h_bytes"], 0)

    def test_full_pool_keeps_what_it_cannot_store(self):
        # a 4 MiB pool cannot hold the ~10 MiB the smallest budget moves
        small = Daemon(self.scratch, name="small", ddr="4M")
        try:
            model, opt, data = encoder(seed=9)
            data = data[:3]
            base = run_steps(model, opt, data)
            model, opt, _ = encoder(seed=9)
            s = self.session(model, daemon=small, optimizer=opt,
                             budget_fraction=0.0)
            run = run_steps(model, opt, data, s)
            self.assertSameSteps(base, run)
            for st in s.steps[1:]:
                self.assertEqual(st["mode"], "replay")
                self.assertIsNone(st["diverged"])
                self.assertGreater(st["store_skipped"], 0, st)
                self.assertIn("HO_E_TIER_FULL", st["pool_error"])
                # what could not be stored was not freed (a plan may also
                # store what the session does not free: parameters)
                self.assertGreater(st["free_stale"], 0, st)
                self.assertLessEqual(st["free_stale"], st["store_skipped"], st)
                self.assertGreater(st["frees"], 0, st)
                self.assertEqual(st["on_demand"] + st["prefetches"],
                                 st["frees"], st)
            s.close()
        finally:
            rc = small.stop()
        self.assertEqual(rc, 0, small.text()[-4000:])

    def test_unreachable_daemon_trains_without_offload(self):
        model, opt, data = encoder(seed=7)
        data = data[:2]
        base = run_steps(model, opt, data)
        model, opt, _ = encoder(seed=7)
        s = hos.OffloadSession(model, optimizer=opt,
                               socket=self.scratch.path("nobody.sock"))
        self.addCleanup(s.close)
        run = run_steps(model, opt, data, s)
        self.assertSameSteps(base, run)
        self.assertIn("ENOENT", s.disabled)
        self.assertEqual([st["mode"] for st in s.steps], ["trace", "plain"])
        with self.assertRaises(hos.OffloadError):
            strict = hos.OffloadSession(
                model, socket=self.scratch.path("nobody.sock"), strict=True)
            self.addCleanup(strict.close)
            with strict:
                model(data[0][0]).sum().backward()


if __name__ == "__main__":
    unittest.main(verbosity=2)

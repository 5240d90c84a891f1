#!/usr/bin/python3
"""Train a small Transformer encoder on CPU with its saved activations
offloaded into the HyperOffload pool by an OffloadSession.

    build/bin/hyperoffloadd --socket=/tmp/hod.sock --state-dir=/tmp/hod \\
        --flash-paths=/tmp/hod/flash0 --flash-capacity=64M &
    HO_LIBRARY=build/lib/libhyperoffload.so.0 /usr/bin/python3 \\
        examples/pytorch/train_example.py --socket /tmp/hod.sock --steps 5 \\
        --compare

Step 1 is traced, the daemon plans it for a budget between the planner's
smallest feasible budget and the no-offload peak (``--budget-fraction``,
or ``--budget`` in bytes), later steps replay the plan.  With
``--compare`` the same steps first run without offload from the same
initial state, and every step's loss and gradients are compared
(``torch.equal``).  Prints one JSON object: the session's summary, the
no-offload live peak, per-step figures and ``identical``.  Exit status 0,
or 1 when --compare found a difference or a replay step went over the
budget.
"""

import argparse
import json
import os
import sys

import torch

try:
    import hyperoffload  # noqa: F401  (pip-installed or python3-hyperoffload)
except ImportError:      # a source checkout: the package is in python/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), os.pardir, os.pardir, "python"))
from hyperoffload import session as hos  # noqa: E402


def build(args):
    """Model, optimizer and the steps' data, all from --seed."""
    torch.manual_seed(args.seed)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=args.d_model, nhead=args.heads,
        dim_feedforward=args.ffn or 4 * args.d_model, dropout=args.dropout,
        batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=args.layers)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(args.seed + 1)
    data = [(torch.randn(args.batch, args.seq, args.d_model, generator=g),
             torch.randn(args.batch, args.seq, args.d_model, generator=g))
            for _ in range(args.steps)]
    return model, opt, data


def train(args, session=None):
    """Run the steps; return [(loss, [grads], live peak)] per step.  The
    live peak is measured by the session's tracker, or by LiveBytesMode
    when there is no session."""
    model, opt, data = build(args)
    if session is not None:
        session.model, session.optimizer = model, opt
    out = []
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        if session is not None:
            with session:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
            peak = session.steps[-1]["live_peak"]
        else:
            with hos.LiveBytesMode(model.parameters()) as m:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
            peak = m.tracker.peak
        out.append((loss.detach().clone(),
                    [p.grad.clone() for p in model.parameters()], peak))
        opt.step()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket", default=None,
                   help="daemon socket (default: $HO_SOCKET, then the "
                        "library's defaults)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--budget", type=int, default=None,
                   help="HBM grant in bytes (default: from the plan)")
    p.add_argument("--budget-fraction", type=float, default=0.5,
                   help="budget = min + f x (no-offload peak - min)")
    p.add_argument("--planner", default=None)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--ffn", type=int, default=0)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compare", action="store_true",
                   help="also run without offload and compare every step")
    p.add_argument("--workdir", default=None,
                   help="keep the trace and schedule files here")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be at least 1")

    base = train(args) if args.compare else None
    session = hos.OffloadSession(socket=args.socket, budget=args.budget,
                                 budget_fraction=args.budget_fraction,
                                 planner=args.planner, workdir=args.workdir)
    try:
        run = train(args, session)
        summary = session.summary()
    finally:
        session.close()

    result = {"summary": summary, "steps": session.steps}
    ok = True
    if base is not None:
        identical = []
        for (l0, g0, _), (l1, g1, _) in zip(base, run):
            identical.append(torch.equal(l0, l1) and
                             all(torch.equal(a, b) for a, b in zip(g0, g1)))
        result["no_offload_live_peak"] = max(b[2] for b in base)
        result["identical"] = identical
        ok = all(identical)
    if summary["replay_live_peak"] is not None and \
            summary["replay_live_peak"] > summary["budget"]:
        ok = False
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

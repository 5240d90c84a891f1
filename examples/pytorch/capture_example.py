#!/usr/bin/python3
"""Capture one training step of a small Transformer encoder as a
HyperOffload trace.

    /usr/bin/python3 examples/pytorch/capture_example.py --out step.json
    hoctl trace show step.json
    hoctl plan --trace step.json --budget 70% --out plan.json

Prints one JSON line describing what was captured (counts the tests use).
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
from hyperoffload import trace as hot  # noqa: E402


def build(args):
    torch.manual_seed(args.seed)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=args.d_model, nhead=args.heads,
        dim_feedforward=args.ffn or 4 * args.d_model, dropout=0.0,
        batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=args.layers)
    head = torch.nn.Linear(args.d_model, args.classes)
    model = torch.nn.Sequential(model, head)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.seq, args.d_model)
    y = torch.randint(0, args.classes, (args.batch, args.seq))
    return model, opt, x, y


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--ffn", type=int, default=0,
                   help="feed-forward width (default 4 x d-model)")
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="910b",
                   help="device profile for the link (%s)"
                   % ", ".join(sorted(hot.DEVICES)))
    p.add_argument("--warmup", action="store_true",
                   help="run one step before capturing (optimizer state "
                        "then exists at the start of the captured step)")
    p.add_argument("--name", default="transformer-encoder")
    p.add_argument("--out", required=True, help="trace file (JSON)")
    args = p.parse_args(argv)

    model, opt, x, y = build(args)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, args.classes), y.reshape(-1))
        loss.backward()
        opt.step()

    if args.warmup:
        step()
    trace = hot.capture_step(step, model=model, optimizer=opt,
                             name=args.name, device=args.device)
    hot.save(trace, args.out)
    kinds = {}
    for s in trace["storages"]:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    n_state = sum(1 for st in opt.state.values() for v in st.values()
                  if isinstance(v, torch.Tensor))
    print(json.dumps({"out": args.out, "ops": len(trace["ops"]),
                      "storages": len(trace["storages"]),
                      "kinds": kinds,
                      "parameters": len(list(model.parameters())),
                      "optimizer_tensors": n_state}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Record one real training step of a PyTorch model as a HyperOffload trace.

The trace is the JSON document of PLANNER.md section 1
("hyperoffload-trace", version 1): every ATen operator the step runs, in
order, with its measured duration and the storages it reads and writes.
Feed it to ``hoctl trace show``, ``hoctl plan`` and ``hoctl schedule check``.

Usage::

    import hyperoffload_trace as hot

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    trace = hot.capture_step(step, model=model, optimizer=opt,
                             name="my-model", device="910b")
    hot.save(trace, "step.json")

How it works (see README.md for the limits):

* A ``TorchDispatchMode`` sees every ATen call below autograd, forward and
  backward alike, and times it with ``time.perf_counter_ns``.
* Storage identity is the storage's data pointer.  Each storage record keeps
  a C++-level weak reference (``StorageWeakRef``); when a pointer shows up
  again after its storage died, it is a new storage with a new id.  Views
  resolve to their base storage, so a view is never a storage of its own.
* Reads and writes come from the operator schema: tensor arguments are
  reads; mutable arguments (``Tensor(a!)``) are read and written, or only
  written when keyword-only (``out=``); fresh (non-aliasing) outputs are
  writes; aliasing outputs (views) are neither.
* Kinds: storages of the model's parameters are ``param`` (initial
  ``device``, retained); storages of ``.grad`` tensors after the step are
  ``grad``; tensors held in ``optimizer.state`` are ``optimizer``; other
  storages created during the step are ``activation``, storages that
  existed before (inputs, targets, buffers) ``other``.  ``retained`` means
  the storage is still alive when the step ends.  Parameters, gradients
  and optimizer state that exist when the step starts (``initial``
  ``device``) and are retained are ``movable``: the planner may choose
  whether they live on device or host between steps (PLANNER.md §1).
  Those the step creates (a first step's Adam state, gradients after
  ``zero_grad(set_to_none=True)``) are ``initial: none`` and cannot be.
* Only standard library and torch; CPU is fine.
"""

import json
import time

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

FORMAT = "hyperoffload-trace"
VERSION = 1

# Copy of shared/workloads/devices.json: the host link of each profile.
DEVICES = {
    "910b": {"tflops": 313.0, "hbm_gib": 64, "hbm_gbps": 1600.0,
             "link_gbps": 28.0, "link_latency_us": 15.0},
    "910c": {"tflops": 752.0, "hbm_gib": 128, "hbm_gbps": 3200.0,
             "link_gbps": 56.0, "link_latency_us": 15.0},
    "h200": {"tflops": 989.0, "hbm_gib": 141, "hbm_gbps": 4800.0,
             "link_gbps": 55.0, "link_latency_us": 10.0},
    "a100": {"tflops": 312.0, "hbm_gib": 80, "hbm_gbps": 2039.0,
             "link_gbps": 25.0, "link_latency_us": 10.0},
}

MAX_NAME = 255  # bytes of an op or trace name (planner/plan.h)

# Kinds whose storages may change home between steps (ZeRO-style offload
# of parameters, gradients and optimizer state across steps).
MOVABLE_KINDS = ("param", "grad", "optimizer")


def link_for(device):
    """The trace's ``link`` object for a device profile name."""
    if device not in DEVICES:
        raise ValueError("unknown device %r (known: %s)"
                         % (device, ", ".join(sorted(DEVICES))))
    d = DEVICES[device]
    return {"h2d_gbps": d["link_gbps"], "d2h_gbps": d["link_gbps"],
            "latency_us": d["link_latency_us"], "duplex": True}


class _Storage:
    """One storage of the trace (a storage that lived during the step)."""

    __slots__ = ("id", "ptr", "nbytes", "weak", "initial", "written")

    def __init__(self, sid, ptr, nbytes, weak, initial):
        self.id = sid
        self.ptr = ptr
        self.nbytes = nbytes
        self.weak = weak
        self.initial = initial
        self.written = False


def _tensors(value):
    """The tensors in an argument or result (tensor, list, tuple)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _is_write(alias_info):
    return alias_info is not None and alias_info.is_write


class TraceRecorder(TorchDispatchMode):
    """A dispatch mode that records every ATen call while it is active.

    Use :func:`capture_step` unless you need the recorder itself; call
    :meth:`to_trace` after leaving the ``with`` block.
    """

    def __init__(self):
        super().__init__()
        self._by_ptr = {}      # data pointer -> live _Storage
        self._storages = []    # every _Storage, in id order
        self.ops = []          # [name, duration_us, read ids, write ids]

    # -------------------------------------------------------------- storages
    def _storage_of(self, t, fresh):
        """The record of tensor t's storage; None for storage-less tensors
        (sparse, meta, zero bytes).  `fresh`: t is a new output of the op
        being recorded (a storage first seen this way starts as none)."""
        if t.layout != torch.strided or t.device.type == "meta":
            return None
        try:
            st = t.storage()
        except (NotImplementedError, RuntimeError):
            return None
        nbytes = st.nbytes()
        ptr = st.data_ptr()
        if nbytes <= 0 or ptr == 0:
            return None
        rec = self._by_ptr.get(ptr)
        if rec is not None and rec.weak.expired():
            rec = None  # the pointer was reused: a new storage
        if rec is None:
            rec = _Storage(len(self._storages), ptr, nbytes,
                           StorageWeakRef(st), "none" if fresh else "device")
            self._storages.append(rec)
            self._by_ptr[ptr] = rec
        elif nbytes > rec.nbytes:
            rec.nbytes = nbytes  # resized in place
        return rec

    # -------------------------------------------------------------- dispatch
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        reads, writes = [], []

        positional = [a for a in schema.arguments if not a.kwarg_only]
        bound = []
        for i, value in enumerate(args):
            if i < len(positional):
                bound.append((positional[i], value))
        for arg in schema.arguments:
            if arg.name in kwargs:
                bound.append((arg, kwargs[arg.name]))
        # lift_fresh wraps a tensor that torch.tensor() just created
        # outside the dispatcher: that storage is new, not pre-existing.
        lifting = schema.name.startswith("aten::lift_fresh")
        for arg, value in bound:
            for t in _tensors(value):
                rec = self._storage_of(t, fresh=lifting)
                if lifting and rec is not None:
                    writes.append(rec)
                    continue
                if rec is None:
                    continue
                if _is_write(arg.alias_info):
                    if not arg.kwarg_only:
                        reads.append(rec)   # in place: read-modify-write
                    writes.append(rec)      # out= is written only
                else:
                    reads.append(rec)

        t0 = time.perf_counter_ns()
        out = func(*args, **kwargs)
        t1 = time.perf_counter_ns()

        results = out if isinstance(out, (list, tuple)) else [out]
        returns = list(schema.returns)
        for k, value in enumerate(results):
            alias = returns[k].alias_info if k < len(returns) else None
            for t in _tensors(value):
                if alias is not None and not alias.is_write:
                    self._storage_of(t, fresh=False)  # a view: no access
                    continue
                rec = self._storage_of(t, fresh=True)
                if rec is not None:
                    writes.append(rec)

        name = str(func)
        if len(name.encode()) > MAX_NAME:
            name = name.encode()[:MAX_NAME].decode("utf-8", "ignore")
        self.ops.append([name, (t1 - t0) / 1000.0,
                         _unique_ids(reads), _unique_ids(writes)])
        for rec in writes:
            rec.written = True
        return out

    # -------------------------------------------------------------- result
    def to_trace(self, model=None, optimizer=None, name="captured",
                 device="910b"):
        """Build the trace document (a dict ready for json.dump)."""
        kinds = {}
        live = {ptr: rec for ptr, rec in self._by_ptr.items()
                if not rec.weak.expired()}

        def mark(tensor, kind):
            if not isinstance(tensor, torch.Tensor):
                return
            if tensor.layout != torch.strided:
                return
            rec = live.get(tensor.storage().data_ptr())
            if rec is not None:
                kinds.setdefault(rec.id, kind)

        if model is not None:
            for p in model.parameters():
                mark(p, "param")
            for p in model.parameters():
                mark(p.grad, "grad")
        if optimizer is not None:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    mark(p, "param")
                    mark(p.grad, "grad")
            for state in optimizer.state.values():
                for v in state.values():
                    mark(v, "optimizer")

        storages = []
        for rec in self._storages:
            kind = kinds.get(rec.id)
            if kind is None:
                kind = "activation" if rec.initial == "none" else "other"
            initial = "device" if kind == "param" else rec.initial
            retained = kind == "param" or not rec.weak.expired()
            storages.append({
                "id": rec.id, "bytes": rec.nbytes, "kind": kind,
                "initial": initial, "retained": retained, "pinned": False,
                "movable": kind in MOVABLE_KINDS and retained and
                initial != "none"})
        ops = [{"name": n, "duration_us": d, "reads": r, "writes": w}
               for n, d, r, w in self.ops]
        if not ops:
            raise RuntimeError("no operator ran while recording")
        return {"format": FORMAT, "version": VERSION, "name": name[:MAX_NAME],
                "link": link_for(device), "storages": storages, "ops": ops}


def _unique_ids(recs):
    seen, ids = set(), []
    for rec in recs:
        if rec.id not in seen:
            seen.add(rec.id)
            ids.append(rec.id)
    return ids


def capture_step(step_fn, model=None, optimizer=None, name="captured",
                 device="910b"):
    """Run ``step_fn()`` once under a :class:`TraceRecorder` and return the
    trace document.  ``model`` and ``optimizer`` (both optional) let the
    storages of parameters, gradients and optimizer state get their kinds.
    """
    link_for(device)  # fail early on a bad profile name
    rec = TraceRecorder()
    with rec:
        step_fn()
    return rec.to_trace(model=model, optimizer=optimizer, name=name,
                        device=device)


def save(trace, path):
    """Write the trace document as JSON to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(trace, f, indent=None, separators=(", ", ": "))
        f.write("\n")

"""Offload saved activations of a PyTorch training step into the
HyperOffload DDR pool, following a plan from hyperoffloadd.

In the spirit of the Hyper-Parallel ``OffloadSession`` (warm-up trace,
plan, replay)::

    from hyperoffload import OffloadSession

    session = OffloadSession(model, socket="/path/hod.sock")
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        with session:                      # 1st time: traced; then replayed
            loss = loss_fn(model(x), y)
            loss.backward()
        opt.step()
    print(session.steps[-1])               # per-step figures
    session.close()

Forward *and* backward must run inside the ``with`` block.

**Copies** between torch storages and the pool run on one copy thread per
session (``ctypes.memmove`` releases the GIL), in FIFO order: a ``store``
returns at once and the saved activation's copy overlaps the compute that
follows; ``free_device`` waits for that storage's copy, an unpack waits for
its prefetch.  References that keep a source alive are dropped on the
calling thread only.  CPU tensors only: a saved tensor on another device
(CUDA) raises :class:`OffloadError` -- it is never copied from a device
pointer -- until the CUDA path (the library's CUDA backend, pinned pool
memory, streams) is verified on a GPU.

**When things go wrong** the session says so: :class:`OffloadWarning`
through ``warnings.warn`` and the ``hyperoffload`` logger, or, with
``strict=True``, :class:`OffloadError` raised at the end of the block.
``events`` lists them all as (step, kind, message) with kind one of

* ``disabled``: planning failed (daemon unreachable, no plan fits the
  budget); later blocks run without offload (``disabled`` says why);
* ``diverged``: a replay step differed from the traced one; the rest of
  that step offloads every saved activation without a plan (private host
  memory, fetched back on use), so it stays near the budget instead of
  bringing everything back;
* ``retraced``: the step after a divergence was traced and planned again
  (``retraces`` times at most); once none are left, or when planning a
  retraced step fails, every later step runs in ``fallback`` mode: all
  saved activations offloaded, none planned;
* ``over_budget``: the live bytes of a step went above the budget.

**Step 1 (trace).**  The step runs under a recorder (a subclass of
``hyperoffload_trace.TraceRecorder``, so op and storage numbering are
exactly those of the capture) and under ``saved_tensors_hooks``.  To learn
what the session can really release, every saved tensor whose storage the
step created is *probed*: its bytes are copied into private host memory
when autograd saves it, and the hook keeps no reference to it, so the
storage dies when the program itself lets go of it; the backward gets an
exact copy back.  At every op the recorder notes which storages are alive.
The trace the session submits is the captured one with these changes:

* storages the session cannot move are ``pinned``: every storage except
  the probed ones (parameters, gradients, optimizer state, inputs, and
  activations autograd did not save);
* a probed storage gets a read at every op during which it was alive
  (held by the program, or brought back for the backward), so that the
  only gaps the planner sees are the ones in which autograd alone held it
  -- the gaps in which dropping the saved reference frees memory;
* any other storage gets a read at the last op during which it was alive
  (tensors are freed when Python drops them, not at their last use).

The session then asks the daemon (``ho_trace_load`` + ``ho_plan_request``)
for a plan.  **Budget**: unless given, a grant-less probe session asks
for a plan at an unlimited budget (its ``no_offload_peak`` is P) and at 1
byte (HO_E_INFEASIBLE; the sentence names the smallest feasible budget
M -- a successful plan reports no min_budget); the session registers with
the HBM grant ``M + budget_fraction * (P - M)`` (default one half: below
P, at or above what a plan needs) and plans for that grant (budget 0).
The schedule is read back with ``ho_plan_save``.

**Later steps (replay).**  A dispatch mode numbers the ops and storages as
the capture did (storage ids are given in first-seen order, so the storage
first written by op k now is the one op k first wrote in the traced step)
and checks every op against the trace: name, storages read and written,
and sizes.  A difference is a divergence: everything is brought back from
the pool, no further action runs in that step, and (``retraces``, default
1) the next step is traced again.  The schedule's actions run at their
point: ``after`` op k and ``before`` op k+1 are the same instant of the
model, executed at the first of: op k+1 entering the dispatcher, an unpack
hook (autograd unpacks a node's saved tensors before that node's first op
runs), the end of the step.

* ``saved_tensors_hooks`` pack: a tensor whose storage the schedule moves
  is wrapped in a handle that holds it (its dtype, size, stride and
  offset are recorded); other tensors pass through unchanged.
* ``store s``: the storage's bytes are copied (memmove) into an extent of
  the session's pool (``ho_extent_alloc``, one per storage, reused every
  step); the number of writes of s seen so far marks the copy's version.
* ``free_device s``: only when the host copy holds the latest version, the
  handles drop their tensors so the memory can go.  If the storage
  nevertheless stays alive (something else holds it), the handles take
  their tensors back (counted as ``free_ineffective``).
* ``prefetch s``: a fresh storage is allocated, filled from the extent,
  and every handle of s gets its tensor back as the *same view* (dtype,
  size, stride, offset) of the restored storage.
* unpack returns the handle's tensor; when it is not there (no prefetch
  yet) it is fetched on demand and counted.
* At the end of the ``with`` block anything still in the pool whose
  handles are alive is brought back, so no handle outlives its step.

**Live bytes.**  A tracker counts the bytes of distinct storages (by data
pointer) of tensors seen by the dispatch mode (plus the model's
parameters), released when weakref finalizers of the tensors fire and the
storage is really gone (``StorageWeakRef``); it is sampled after every op
and every restore.  ``steps[i]["live_peak"]`` is the peak of step i;
:class:`LiveBytesMode` measures a run without the session the same way.

Library: :mod:`hyperoffload.binding` (ctypes); the daemon is reached at
``socket`` (or ``$HO_SOCKET`` ...).  Python standard library and torch.
"""

import collections
import ctypes
import functools
import json
import logging
import os
import queue
import re
import shutil
import tempfile
import threading
import time
import warnings
import weakref

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

from . import binding as ho
from . import trace as hot

log = logging.getLogger("hyperoffload")

UNLIMITED_BUDGET = 1 << 60
# ho_plan_request's HO_E_INFEASIBLE sentence (runtime.h): "... the
# smallest feasible budget is N bytes"
_SMALLEST = re.compile(r"smallest feasible budget is (\d+)")
_SMALLEST_LOOSE = re.compile(r"smallest[^0-9]*?(\d+)")


class OffloadError(RuntimeError):
    """Offloading cannot go on as planned: raised in strict mode instead of
    an :class:`OffloadWarning`, and always for tensors on a device the
    session cannot copy from (CUDA)."""


class OffloadWarning(RuntimeWarning):
    """The session disabled itself, diverged, retraced or ran over its
    budget (module docstring, "When things go wrong")."""


def _require_host(t, what="a saved tensor"):
    """Raise OffloadError unless tensor t is in host memory (CPU): its data
    pointer would be a device address, which memmove must never touch."""
    dev = getattr(t, "device", None)
    kind = getattr(dev, "type", "cpu")
    if kind not in ("cpu", "meta"):
        raise OffloadError(
            "OffloadSession copies CPU tensors only, and %s is on %s: the "
            "CUDA path (the library's CUDA backend with pinned pool memory "
            "and streams) is not verified yet; run without the session on "
            "this device" % (what, dev))


class _Job:
    __slots__ = ("dst", "src", "nbytes", "keep", "done", "error")

    def __init__(self, dst, src, nbytes, keep):
        self.dst, self.src, self.nbytes = dst, src, nbytes
        self.keep = keep          # what keeps src/dst alive until done
        self.done = threading.Event()
        self.error = None


class _Copier:
    """The session's copy thread: memmoves in FIFO order off the calling
    thread (ctypes releases the GIL while it copies).  submit() returns a
    job at once; wait(job) blocks until it is copied.  Each job holds
    ``keep`` (the tensors or buffers its addresses belong to) until reap()
    drops the references of finished jobs -- always on the calling thread,
    so no storage is ever freed (and no weakref callback run) on the copy
    thread."""

    def __init__(self):
        self._q = queue.SimpleQueue()
        self._thread = None
        self._pending = collections.deque()
        self.copies = 0
        self.bytes = 0
        self.waits = 0            # waits that found the copy unfinished
        self.wait_ns = 0

    def submit(self, dst, src, nbytes, keep):
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop,
                                            name="hyperoffload-copy",
                                            daemon=True)
            self._thread.start()
        job = _Job(dst, src, nbytes, keep)
        self._pending.append(job)
        self._q.put(job)
        self.copies += 1
        self.bytes += nbytes
        return job

    def wait(self, job):
        if job is None:
            return
        if not job.done.is_set():
            t0 = time.perf_counter_ns()
            job.done.wait()
            self.waits += 1
            self.wait_ns += time.perf_counter_ns() - t0
        if job.error is not None:
            raise OffloadError("copy failed: %s" % job.error)

    def reap(self):
        while self._pending and self._pending[0].done.is_set():
            self._pending.popleft().keep = None

    def drain(self):
        for job in list(self._pending):
            self.wait(job)
        self.reap()

    def close(self):
        if self._thread is not None:
            self.drain()
            self._q.put(None)
            self._thread.join()
            self._thread = None

    def _loop(self):
        while True:
            job = self._q.get()
            if job is None:
                return
            try:
                ctypes.memmove(job.dst, job.src, job.nbytes)
            except BaseException as e:  # reported by wait()
                job.error = e
            job.done.set()


# ----------------------------------------------------------------- helpers
def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _storage_key(t):
    """(data pointer, nbytes, storage) of a strided tensor, or None."""
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided or \
            t.device.type == "meta":
        return None
    try:
        st = t.storage()
    except (NotImplementedError, RuntimeError):
        return None
    ptr, nbytes = st.data_ptr(), st.nbytes()
    if ptr == 0 or nbytes <= 0:
        return None
    return ptr, nbytes, st


def _fix_scalar(func, out, args):
    """torch 1.13: under a dispatch mode, an op on a wrapped number (a
    Python scalar autograd saved as a 0-dim tensor, e.g. ``x / 8.0``)
    comes back to Python as a number, and autograd then fails with
    "detach returned invalid type float".  Give it back as a tensor of
    the argument's dtype."""
    if isinstance(out, (bool, int, float, complex)):
        rets = func._schema.returns
        if len(rets) == 1 and str(rets[0].type) == "Tensor":
            ref = next((a for a in args if isinstance(a, torch.Tensor)), None)
            return torch.tensor(out, dtype=ref.dtype if ref is not None
                                else None)
    return out


class _Live:
    __slots__ = ("weak", "nbytes", "tensors")

    def __init__(self, weak, nbytes):
        self.weak = weak
        self.nbytes = nbytes
        self.tensors = 0


class LiveTracker:
    """Bytes held by live torch storages, distinct by data pointer.

    :meth:`see` registers a tensor's storage (and a weakref finalizer on
    the tensor object); when the last known tensor of a storage is
    finalized the storage becomes a suspect, released at the next
    :meth:`sample` once its ``StorageWeakRef`` says it is gone (autograd
    and other C++ code may hold storages without any Python tensor).
    ``bytes`` is the current total, ``peak`` the largest sampled one."""

    def __init__(self):
        self._stor = {}        # data pointer -> _Live
        self._objs = {}        # id(tensor) -> weakref with finalizer
        self._suspects = set()
        self.bytes = 0
        self.peak = 0
        self.peak_at = -1      # op index of the peak sample
        self.samples = 0

    def see(self, t):
        r = self._objs.get(id(t))
        if r is not None and r() is t:
            return
        key = _storage_key(t)
        if key is None:
            return
        ptr, nbytes, st = key
        live = self._stor.get(ptr)
        if live is not None and live.weak.expired():
            self._drop(ptr, live)
            live = None
        if live is None:
            live = _Live(StorageWeakRef(st), nbytes)
            self._stor[ptr] = live
            self.bytes += nbytes
        elif nbytes > live.nbytes:
            self.bytes += nbytes - live.nbytes
            live.nbytes = nbytes
        live.tensors += 1
        self._suspects.discard(ptr)
        oid = id(t)
        self._objs[oid] = weakref.ref(
            t, functools.partial(self._finalized, oid, ptr, live))

    def see_all(self, values):
        for v in values:
            for t in _tensors(v):
                self.see(t)

    def _finalized(self, oid, ptr, live, ref):
        if self._objs.get(oid) is ref:
            del self._objs[oid]
        live.tensors -= 1
        if live.tensors <= 0 and self._stor.get(ptr) is live:
            self._suspects.add(ptr)

    def _drop(self, ptr, live):
        del self._stor[ptr]
        self._suspects.discard(ptr)
        self.bytes -= live.nbytes

    def sample(self, at=-1):
        """Release suspects that are gone, then update the peak."""
        for ptr in list(self._suspects):
            live = self._stor.get(ptr)
            if live is None:
                self._suspects.discard(ptr)
            elif live.weak.expired():
                self._drop(ptr, live)
        self.samples += 1
        if self.bytes > self.peak:
            self.peak = self.bytes
            self.peak_at = at
        return self.bytes


class LiveBytesMode(TorchDispatchMode):
    """Measure the bytes held by live torch tensors of a run without the
    session, exactly as the session measures its steps::

        with hos.LiveBytesMode(model.parameters()) as m:
            step()
        m.tracker.peak
    """

    def __init__(self, params=()):
        super().__init__()
        self.tracker = LiveTracker()
        self.ops = 0
        self._params = list(params)

    def __enter__(self):
        for p in self._params:
            self.tracker.see(p)
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = _fix_scalar(func, func(*args, **kwargs), args)
        self.tracker.see_all(args)
        self.tracker.see_all(kwargs.values())
        self.tracker.see_all(out if isinstance(out, (list, tuple))
                             else [out])
        self.tracker.sample(self.ops)
        self.ops += 1
        return out


# ----------------------------------------------------------------- handles
class _Entry:
    """The session's view of one storage (trace id) in one step."""

    __slots__ = ("sid", "nbytes", "handles", "freed", "host_writes",
                 "probe", "job", "fill", "__weakref__")

    def __init__(self, sid, nbytes):
        self.sid = sid
        self.nbytes = nbytes
        self.handles = weakref.WeakSet()
        self.freed = False
        self.host_writes = None   # write count of the storage when stored
        self.probe = None         # offload-all: private host copy
        self.job = None           # its last copy to host (_Copier job)
        self.fill = None          # its last copy back from host


class _Saved:
    """What a pack hook returns for a tensor the session may move: the
    tensor (or None while its bytes are only in the pool) and how to
    rebuild it as the same view of a restored storage."""

    __slots__ = ("entry", "tensor", "wref", "dtype", "itemsize", "size",
                 "stride", "offset", "__weakref__")

    def __init__(self, entry, t, keep):
        self.entry = entry
        self.tensor = t if keep else None
        self.wref = weakref.ref(t)
        self.dtype = t.dtype
        self.itemsize = t.element_size()
        self.size = tuple(t.size())
        self.stride = tuple(t.stride())
        self.offset = t.storage_offset()

    def is_view(self):
        """True unless the tensor is its whole storage, contiguous."""
        n, expect = 1, []
        for d in reversed(self.size):
            expect.append(n)
            n *= d
        return (self.offset != 0 or self.stride != tuple(reversed(expect))
                or n * self.itemsize != self.entry.nbytes)


def _new_stats(step, mode):
    return {"step": step, "mode": mode, "ops": 0, "diverged": None,
            "stores": 0, "d2h_bytes": 0, "prefetches": 0, "h2d_bytes": 0,
            "on_demand": 0, "on_demand_bytes": 0, "frees": 0,
            "freed_bytes": 0, "store_skipped": 0, "free_skipped": 0,
            "free_stale": 0,
            "free_ineffective": 0, "restored_at_end": 0,
            "views_restored": 0, "probe_bytes": 0, "live_peak": 0,
            "live_peak_op": -1, "async_copies": 0, "copy_waits": 0,
            "copy_wait_us": 0.0}


# ----------------------------------------------------------------- a step
class _StepRun(hot.TraceRecorder):
    """One ``with session:`` block: recorder, dispatch mode, saved-tensor
    hooks and the schedule's actions ("trace", "replay", "fallback" or
    "plain").  Trace and fallback steps offload every saved activation the
    step created (``_offload_all``); so does a replay step from the op at
    which it diverges."""

    def __init__(self, session, mode, step):
        super().__init__()
        self.session = session
        self.mode = mode
        self.stats = _new_stats(step, mode)
        self.tracker = LiveTracker()
        self._ptrs = {}           # data pointer -> (record, StorageWeakRef)
        self._internal = False
        self._entries = {}        # storage id -> _Entry
        self._writes = {}         # storage id -> writes seen this step
        self._tref = {}           # storage id -> weakref of a tensor of it
        self._point = 0           # next action point: 2k before, 2k+1 after
        self._stopped = mode != "replay"
        self._offload_all = mode in ("trace", "fallback")
        self._copier = session._copier
        self._copies0 = (self._copier.copies, self._copier.waits,
                         self._copier.wait_ns)
        self._hooks = None
        # trace step: liveness of every storage, op by op
        self._life = []           # id -> [[first op, last op], ...]
        self._open = set()        # ids alive at the last op begin
        self.probed = set()

    # ----------------------------------------------------------- lifecycle
    def start(self):
        for p in self.session.params():
            self.tracker.see(p)
        if self.mode in ("trace", "replay", "fallback"):
            self._hooks = torch.autograd.graph.saved_tensors_hooks(
                self._pack, self._unpack)
            self._hooks.__enter__()
        self.__enter__()

    def finish(self, failed):
        self.__exit__(None, None, None)
        if self._hooks is not None:
            self._hooks.__exit__(None, None, None)
        n = len(self.ops)
        if self.mode == "replay" and not failed and \
                not self.stats["diverged"]:
            ref_ops = len(self.session._ref_ops)
            if n != ref_ops:
                self._diverge(n, "the step ran %d ops, the trace has %d"
                              % (n, ref_ops))
            else:
                self._run_due(2 * n)
        self._stopped = True
        # nothing stays in the pool past its step
        for e in list(self._entries.values()):
            if e.freed and any(h.tensor is None for h in e.handles):
                self._restore(e, "restored_at_end")
        self._copier.drain()
        c0, w0, ns0 = self._copies0
        self.stats["async_copies"] = self._copier.copies - c0
        self.stats["copy_waits"] = self._copier.waits - w0
        self.stats["copy_wait_us"] = (self._copier.wait_ns - ns0) / 1e3
        if self.mode == "trace":
            for sid in self._open:
                self._life[sid][-1][1] = n - 1
            self._open.clear()
        self.tracker.sample(n)
        self.stats["ops"] = n
        self.stats["live_peak"] = self.tracker.peak
        self.stats["live_peak_op"] = self.tracker.peak_at

    # ----------------------------------------------------------- storages
    def _storage_of(self, t, fresh):
        """As TraceRecorder._storage_of, with one weak reference per data
        pointer, so that a storage restored from the pool at a new address
        keeps its id while the old address may be reused."""
        key = _storage_key(t)
        if key is None:
            return None
        ptr, nbytes, st = key
        hit = self._ptrs.get(ptr)
        if hit is not None and hit[1].expired():
            hit = None
        if hit is None:
            rec = hot._Storage(len(self._storages), ptr, nbytes,
                               StorageWeakRef(st),
                               "none" if fresh else "device")
            self._storages.append(rec)
            self._by_ptr[ptr] = rec
            self._ptrs[ptr] = (rec, rec.weak)
            if self.mode == "trace":
                self._life.append([[len(self.ops), len(self.ops)]])
                self._open.add(rec.id)
            return rec
        rec = hit[0]
        if nbytes > rec.nbytes:
            rec.nbytes = nbytes
        return rec

    def _rebind(self, rec, st):
        """Storage `rec` now lives in `st` (restored from the pool)."""
        ptr = st.data_ptr()
        weak = StorageWeakRef(st)
        old = self._ptrs.get(rec.ptr)
        if old is not None and old[0] is rec and old[1].expired():
            del self._ptrs[rec.ptr]
        if self._by_ptr.get(rec.ptr) is rec:
            del self._by_ptr[rec.ptr]
        rec.ptr, rec.weak = ptr, weak
        self._ptrs[ptr] = (rec, weak)
        self._by_ptr[ptr] = rec
        if self.mode == "trace":
            k = len(self.ops)
            self._life[rec.id].append([k, k])
            self._open.add(rec.id)

    def _current(self, sid):
        """A live tensor of storage `sid` as it is now, or None."""
        rec = self._storages[sid] if sid < len(self._storages) else None
        if rec is None or rec.weak.expired():
            return None
        e = self._entries.get(sid)
        if e is not None:
            for h in e.handles:
                t = h.tensor
                if t is not None and t.storage().data_ptr() == rec.ptr:
                    return t
        r = self._tref.get(sid)
        t = r() if r is not None else None
        if t is not None and _storage_key(t) is not None and \
                t.storage().data_ptr() == rec.ptr:
            return t
        return None

    # ----------------------------------------------------------- dispatch
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._internal:
            return func(*args, **kwargs)
        self._copier.reap()
        k = len(self.ops)
        if self.mode == "trace":
            for sid in list(self._open):
                if self._storages[sid].weak.expired():
                    self._open.discard(sid)
                else:
                    self._life[sid][-1][1] = k
        elif not self._stopped:
            self._run_due(2 * k + 1)
        out = super().__torch_dispatch__(func, types, args, kwargs)
        out = _fix_scalar(func, out, args)
        name, _, reads, writes = self.ops[k]
        for sid in writes:
            self._writes[sid] = self._writes.get(sid, 0) + 1
        outs = out if isinstance(out, (list, tuple)) else [out]
        for v in (args, kwargs.values(), outs):
            for x in v:
                for t in _tensors(x):
                    key = _storage_key(t)
                    if key is not None:
                        hit = self._ptrs.get(key[0])
                        if hit is not None:
                            self._tref[hit[0].id] = weakref.ref(t)
        self.tracker.see_all(args)
        self.tracker.see_all(kwargs.values())
        self.tracker.see_all(outs)
        self.tracker.sample(k)
        if self.mode == "replay" and not self._stopped:
            self._check(k, name, reads, writes)
        return out

    def _check(self, k, name, reads, writes):
        ref = self.session._ref_ops
        if k >= len(ref):
            return self._diverge(k, "op %d is past the trace's %d ops"
                                 % (k, len(ref)))
        rname, rreads, rwrites = ref[k]
        if name != rname or reads != rreads or writes != rwrites:
            return self._diverge(k, "op %d is %s reading %s writing %s; the "
                                 "trace has %s reading %s writing %s"
                                 % (k, name, reads, writes, rname, rreads,
                                    rwrites))
        sizes = self.session._ref_bytes
        for sid in reads + writes:
            if sid >= len(sizes) or self._storages[sid].nbytes != sizes[sid]:
                return self._diverge(k, "op %d uses storage %d of %d "
                                     "bytes; the trace has %s" % (
                                         k, sid, self._storages[sid].nbytes,
                                         sizes[sid] if sid < len(sizes)
                                         else "no such storage"))
        return None

    def _diverge(self, k, why):
        """Stop following the plan for the rest of this step: no further
        action runs; what is in the pool stays there until it is unpacked
        (fetched on demand) or the step ends, and every activation saved
        from here on is offloaded as in a trace step.  Bringing everything
        back at once would run the step at its no-offload peak."""
        if self.stats["diverged"]:
            return
        self.stats["diverged"] = why
        self.stats["diverged_at"] = k
        self._stopped = True
        self._offload_all = True
        # what the plan meant to free later is offloaded now, as a trace
        # step would have (else the rest of the step holds all of it)
        for e in list(self._entries.values()):
            rec = self._storages[e.sid] if e.sid < len(self._storages) \
                else None
            held = [h for h in e.handles if h.tensor is not None and
                    h.tensor.storage().data_ptr() == getattr(rec, "ptr", 0)]
            if not held or rec is None or rec.weak.expired():
                continue
            buf = ctypes.create_string_buffer(rec.nbytes)
            e.job = self._copier.submit(ctypes.addressof(buf), rec.ptr,
                                        rec.nbytes, [h.tensor for h in held]
                                        + [buf])
            e.probe, e.host_writes = buf, self._writes.get(e.sid, 0)
            self.stats["probe_bytes"] += rec.nbytes
            for h in held:
                h.tensor = None
            e.freed = True

    # ----------------------------------------------------------- hooks
    def _pack(self, t):
        if self._stopped and not self._offload_all:
            return t
        _require_host(t)
        key = _storage_key(t)
        if key is None:
            return t
        hit = self._ptrs.get(key[0])
        if hit is None or hit[1].expired():
            return t
        rec = hit[0]
        if self._offload_all:
            if rec.initial != "none":
                return t   # existed before the step: parameters, inputs
            e = self._entries.get(rec.id)
            if e is None:
                e = self._entries[rec.id] = _Entry(rec.id, rec.nbytes)
            if key[0] != rec.ptr or key[1] != rec.nbytes:
                return t   # not the storage the record describes now
            wc = self._writes.get(rec.id, 0)
            if e.probe is None or e.host_writes != wc:
                # copied on the copy thread; the job holds the tensor until
                # then, and unpack/restore wait for it
                buf = ctypes.create_string_buffer(rec.nbytes)
                e.job = self._copier.submit(ctypes.addressof(buf), rec.ptr,
                                            rec.nbytes, (t, buf))
                e.probe, e.host_writes = buf, wc
                self.stats["probe_bytes"] += rec.nbytes
                if self.mode == "trace":
                    # the recorded lifetimes must be the program's own:
                    # no copy may keep the storage alive past this op
                    self._copier.wait(e.job)
                    self._copier.reap()
            if self.mode == "trace":
                self.probed.add(rec.id)
            h = _Saved(e, t, keep=False)
            e.handles.add(h)
            e.freed = True
            return h
        if rec.id not in self.session._moved and rec.initial != "none":
            return t
        # moved storages, and the step's other activations too: a handle
        # lets a divergence offload them (_diverge)
        e = self._entries.get(rec.id)
        if e is None:
            e = self._entries[rec.id] = _Entry(rec.id, rec.nbytes)
        h = _Saved(e, t, keep=True)
        e.handles.add(h)
        return h

    def _unpack(self, h):
        if isinstance(h, torch.Tensor):
            return h
        if self.mode == "replay" and not self._stopped:
            self._run_due(2 * len(self.ops) + 1)
        if h.tensor is None:
            t = h.wref()
            if t is not None:
                return t   # the program still holds this tensor
            self._restore(h.entry, "on_demand")
        self._copier.wait(h.entry.fill)   # its prefetch, if still copying
        return h.tensor

    # ----------------------------------------------------------- actions
    def _run_due(self, limit):
        """Run the schedule's actions at every point before `limit`."""
        s = self.session
        while self._point < limit and not self._stopped:
            p = self._point
            self._point += 1
            for kind, sid in s._actions.get(p, ()):
                if kind == "store":
                    self._store(sid)
                elif kind == "free_device":
                    self._free(sid)
                elif kind == "prefetch":
                    e = self._entries.get(sid)
                    if e is not None and e.freed:
                        self._restore(e, "prefetches")
                # free_host: the extent is kept for the next step

    def _store(self, sid):
        src = self._current(sid)
        if src is None:
            self.stats["store_skipped"] += 1   # nothing of it is reachable
            return
        _require_host(src)
        rec = self._storages[sid]
        try:
            ext = self.session._extent(sid, rec.nbytes)
        except ho.HoError as err:   # pool full, quota, daemon gone
            self.stats["store_skipped"] += 1
            self.stats["pool_error"] = str(err)
            return
        e = self._entries.get(sid)
        if e is None:
            e = self._entries[sid] = _Entry(sid, rec.nbytes)
        # the copy overlaps the ops that follow; free_device waits for it
        e.job = self._copier.submit(ext.ptr, rec.ptr, rec.nbytes, src)
        e.probe = None
        e.host_writes = self._writes.get(sid, 0)
        self.stats["stores"] += 1
        self.stats["d2h_bytes"] += rec.nbytes

    def _free(self, sid):
        e = self._entries.get(sid)
        held = [h for h in e.handles if h.tensor is not None] if e else []
        if not held:
            self.stats["free_skipped"] += 1
            return
        if e.host_writes is None or e.host_writes != self._writes.get(sid, 0):
            self.stats["free_stale"] += 1   # no current host copy: keep it
            return
        self._copier.wait(e.job)    # the host copy is complete ...
        self._copier.reap()         # ... and the copy holds no reference
        rec = self._storages[sid]
        # only tensors of the storage the host copy was taken from
        held = [h for h in held if h.tensor.storage().data_ptr() == rec.ptr]
        if not held:
            self.stats["free_skipped"] += 1
            return
        for h in held:
            h.tensor = None
        e.freed = True
        if not rec.weak.expired():
            # something besides autograd holds it: dropping gains nothing
            self.stats["free_ineffective"] += 1
            back = 0
            for h in held:
                h.tensor = h.wref()
                back += h.tensor is not None
            if back == len(held):
                e.freed = False
            return
        self.stats["frees"] += 1
        self.stats["freed_bytes"] += e.nbytes
        self.tracker.sample(len(self.ops))

    def _restore(self, e, counter):
        """Bring storage e back into a fresh storage; every handle without
        a tensor gets the same view of it (or its own tensor back when the
        program still holds that one)."""
        todo = []
        for h in e.handles:
            if h.tensor is None:
                h.tensor = h.wref()
                if h.tensor is None:
                    todo.append(h)
        e.freed = False
        if not todo:
            return
        if e.probe is not None:
            src, keep = ctypes.addressof(e.probe), e.probe
        else:
            src, keep = self.session._extents[e.sid].ptr, None
        self._internal = True
        try:
            buf = torch.empty(e.nbytes, dtype=torch.uint8)
            # a prefetch copies while the step goes on; unpack waits for it
            # (FIFO: after the copy that filled src)
            e.fill = self._copier.submit(buf.data_ptr(), src, e.nbytes,
                                         (buf, keep))
            if counter != "prefetches":
                self._copier.wait(e.fill)
            ust = buf.storage().untyped()
            for h in todo:
                h.tensor = torch.empty(0, dtype=h.dtype).set_(
                    ust, h.offset, h.size, h.stride)
        finally:
            self._internal = False
        rec = self._storages[e.sid]
        self._rebind(rec, buf.storage())
        del buf, ust
        for h in todo:
            self.tracker.see(h.tensor)
            self._tref[e.sid] = weakref.ref(h.tensor)
            if h.is_view():
                self.stats["views_restored"] += 1
        self.tracker.sample(len(self.ops))
        if counter == "on_demand":
            self.stats["on_demand"] += 1
            self.stats["on_demand_bytes"] += e.nbytes
            self.stats["h2d_bytes"] += e.nbytes
        elif counter == "prefetches":
            self.stats["prefetches"] += 1
            self.stats["h2d_bytes"] += e.nbytes
        else:
            self.stats[counter] += 1
            if e.probe is None:
                self.stats["h2d_bytes"] += e.nbytes

    # ----------------------------------------------------------- trace
    def submitted_trace(self, model, optimizer, name, link):
        """The trace document the session plans with (module docstring)."""
        doc = self.to_trace(model=model, optimizer=optimizer, name=name,
                            device=link)
        accessed = [set() for _ in doc["storages"]]
        first_write = {}
        for k, (_, _, reads, writes) in enumerate(self.ops):
            for sid in reads:
                accessed[sid].add(k)
            for sid in writes:
                accessed[sid].add(k)
                first_write.setdefault(sid, k)
        extra = {}
        for st in doc["storages"]:
            sid = st["id"]
            st["pinned"] = sid not in self.probed
            created = first_write.get(sid, -1) if st["initial"] == "none" \
                else -1
            spans = self._life[sid] if sid < len(self._life) else []
            if not spans or not accessed[sid]:
                continue
            if sid in self.probed:
                ops = set()
                for a, b in spans:
                    ops.update(range(a, b + 1))
            else:
                ops = {max(b for _, b in spans)}
            for j in ops:
                if j > created and j not in accessed[sid] and \
                        j < len(self.ops):
                    extra.setdefault(j, []).append(sid)
        for j, sids in extra.items():
            doc["ops"][j]["reads"] = doc["ops"][j]["reads"] + sorted(sids)
        return doc


# ----------------------------------------------------------------- session
class OffloadSession:
    """Context manager: trace the first step, plan it with hyperoffloadd,
    replay the plan on later steps (module docstring).

    model, optimizer: optional; their parameters, gradients and state get
    their kinds in the trace (all are pinned anyway) and the parameters
    are counted as live from the start of every step.
    socket: the daemon's socket (None: ``$HO_SOCKET`` / defaults).
    budget: HBM grant in bytes; None chooses it from the plan's figures:
    ``min_budget + budget_fraction * (no_offload_peak - min_budget)``.
    device: the accelerator index to register on; job: job name (None:
    the session gets an arena of its own); planner: None for the daemon's
    default; link: device profile of the trace's link (``910b``).
    workdir: where the trace and schedule files go (None: a temporary
    directory removed by close()).  retraces: how many times a divergence
    makes the next step a trace step again (then: fallback mode).
    strict: raise OffloadError at the end of the block instead of warning
    when the session disables itself, diverges, retraces or runs over its
    budget (module docstring).

    After each block ``steps[-1]`` holds its figures and ``plan_info`` the
    plan's; ``disabled`` says why offloading is off, if it is; ``events``
    lists every warning as (step, kind, message).
    """

    def __init__(self, model=None, optimizer=None, *, socket=None,
                 budget=None, budget_fraction=0.5, device=0, job=None,
                 planner=None, link="910b", name="torch-offload-session",
                 workdir=None, retraces=1, strict=False,
                 client_name="offload-session"):
        if not 0.0 <= budget_fraction < 1.0:
            raise ValueError("budget_fraction must be in [0, 1)")
        hot.link_for(link)
        if model is not None:
            for p in model.parameters():
                _require_host(p, "a parameter of the model")
        self.model = model
        self.optimizer = optimizer
        self.socket = socket
        self.requested_budget = budget
        self.budget_fraction = budget_fraction
        self.device = device
        self.job = job
        self.planner = planner
        self.link = link
        self.name = name
        self.retraces = retraces
        self.strict = strict
        self.client_name = client_name
        self._own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="ho-session-")
        os.makedirs(self.workdir, exist_ok=True)
        self.steps = []
        self.budget = None
        self.min_budget = None
        self.no_offload_peak = None
        self.plan_info = None
        self.schedule = None
        self.disabled = None
        self.client = None
        self._closed = False
        self._run = None
        self._planned = False
        self._ref_ops = []
        self._ref_bytes = []
        self._actions = {}
        self._moved = set()
        self._extents = {}
        self._copier = _Copier()
        self._fallback = None     # why every step offloads without a plan
        self._retracing = False   # the next trace step follows a divergence
        self.events = []          # (step, kind, message)
        self._notices = []        # (kind, message) of the running block

    # ----------------------------------------------------------- notices
    def _notice(self, kind, message):
        """Record a warning of the current block; __exit__ reports it."""
        self._notices.append((kind, message))

    def _report(self):
        """Log every notice of the block, then raise the first as
        OffloadError (strict) or warn each (OffloadWarning)."""
        notices, self._notices = self._notices, []
        step = len(self.steps)
        for kind, message in notices:
            self.events.append((step, kind, message))
            log.warning("%s", message)
        if notices and self.strict:
            raise OffloadError(notices[0][1])
        for kind, message in notices:
            warnings.warn(message, OffloadWarning, stacklevel=3)

    # ----------------------------------------------------------- helpers
    def params(self):
        out = []
        if self.model is not None:
            out.extend(self.model.parameters())
        if self.optimizer is not None:
            for g in self.optimizer.param_groups:
                out.extend(g["params"])
        return out

    def _extent(self, sid, nbytes):
        ext = self._extents.get(sid)
        if ext is None or ext.length < nbytes:
            if ext is not None:
                self.client.extent_free(ext.id)
                del self._extents[sid]
            ext = self.client.extent_alloc(nbytes)
            self._extents[sid] = ext
        return ext

    @property
    def mode(self):
        """What the next block will do: trace, replay, fallback (offload
        every saved activation without a plan) or plain (no offload)."""
        if self.disabled or self._closed:
            return "plain"
        if self._fallback:
            return "fallback"
        return "replay" if self._planned else "trace"

    # ----------------------------------------------------------- context
    def __enter__(self):
        if self._run is not None:
            raise RuntimeError("OffloadSession blocks do not nest")
        self._run = _StepRun(self, self.mode, len(self.steps) + 1)
        self._run.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        run = self._run
        try:
            run.finish(failed=exc_type is not None)
        finally:
            self._run = None
        self.steps.append(run.stats)
        if exc_type is not None:
            self._notices = []
            return False
        st = run.stats
        if run.mode == "trace":
            self._plan(run)
        elif run.mode == "replay" and st["diverged"]:
            if self.retraces > 0:
                self.retraces -= 1
                self._planned = False
                self._retracing = True
                then = "the next step is traced and planned again"
            else:
                self._fallback = "the steps keep differing from the trace"
                then = ("no retraces left: from now on every step "
                        "offloads all its saved activations without a plan")
            self._notice("diverged", "hyperoffload: step %d diverged from "
                         "the traced step at op %d (%s); the rest of it "
                         "offloaded every saved activation without a plan; "
                         "%s" % (st["step"], st["diverged_at"],
                                 st["diverged"], then))
        if self.budget and run.mode != "plain" and \
                st["live_peak"] > self.budget:
            self._notice("over_budget", "hyperoffload: step %d (%s) held "
                         "%d bytes of live tensors, %.2fx its budget of %d "
                         "bytes" % (st["step"], st["mode"], st["live_peak"],
                                    st["live_peak"] / self.budget,
                                    self.budget))
        self._report()
        return False

    # ----------------------------------------------------------- planning
    def _plan(self, run):
        doc = run.submitted_trace(self.model, self.optimizer, self.name,
                                  self.link)
        self._ref_ops = [(n, r, w) for n, _, r, w in run.ops]
        self._ref_bytes = [rec.nbytes for rec in run._storages]
        trace_path = os.path.join(self.workdir, "trace.json")
        sched_path = os.path.join(self.workdir, "schedule.json")
        hot.save(doc, trace_path)
        retrace = getattr(self, "_retracing", False)
        self._retracing = False
        try:
            trace = ho.Trace.load(trace_path)
            try:
                self._request(trace, sched_path)
            finally:
                trace.close()
        except (ho.HoError, OSError) as e:
            why = self._why(e)
            if retrace:
                # keep the budget rather than run without offload
                self._fallback = "planning the retraced step failed: %s" % why
                self._notice("retraced", "hyperoffload: step %d was traced "
                             "again but %s; from now on every step offloads "
                             "all its saved activations without a plan"
                             % (len(self.steps), why))
                return
            self.disabled = "planning failed: %s" % e
            self._notice("disabled", "hyperoffload: offloading disabled, %s;"
                         " training goes on without offload" % why)
            return
        with open(sched_path, encoding="utf-8") as f:
            self.schedule = json.load(f)
        self._actions = {}
        self._moved = set()
        for a in self.schedule["actions"]:
            point = 2 * a["op"] + (1 if a["when"] == "after" else 0)
            self._actions.setdefault(point, []).append(
                (a["kind"], a["storage"]))
            if a["kind"] in ("store", "free_device", "prefetch"):
                self._moved.add(a["storage"])
        self._planned = True
        if retrace:
            self._notice("retraced", "hyperoffload: step %d was traced "
                         "again and planned: %d ops, plan peak %d bytes for "
                         "the budget of %d bytes" % (
                             len(self.steps), len(self._ref_ops),
                             self.plan_info["peak_device_bytes"],
                             self.budget))

    def _why(self, e):
        """A sentence for a planning failure."""
        if isinstance(e, ho.HoError):
            if e.call == "ho_connect":
                return "hyperoffloadd is unreachable at %s (%s)" % (
                    self.socket or "the default socket", e)
            if e.code == ho.HO_E_INFEASIBLE:
                found = _SMALLEST.findall(e.detail) or \
                    _SMALLEST_LOOSE.findall(e.detail)
                budget = self.budget or self.requested_budget
                if found and budget:
                    return ("the budget of %d bytes is too small for this "
                            "step (the smallest feasible is %s bytes)"
                            % (budget, found[-1]))
                return "the budget is too small for this step (%s)" % e
        return "planning failed (%s)" % e

    def _request(self, trace, sched_path):
        budget = self.requested_budget
        if budget is None and self.client is None:
            lo, hi = self._figures(trace)
            self.min_budget, self.no_offload_peak = lo, hi
            if hi <= lo:
                raise ho.HoError("ho_plan_request", ho.HO_E_INFEASIBLE,
                                 "no budget below the no-offload peak "
                                 "(%d) is feasible (smallest %d)" % (hi, lo))
            budget = lo + int(self.budget_fraction * (hi - lo))
        if self.client is None:
            self.client = ho.Client.connect(self.socket, self.client_name)
            self.client.register(job=self.job, device=self.device,
                                 hbm_budget=budget)
        self.budget = self.client.hbm_granted
        with self.client.plan_request(trace, 0, self.planner) as plan:
            self.plan_info = plan.info()
            plan.save(sched_path)
        self.no_offload_peak = self.plan_info["no_offload_peak"]

    def summary(self):
        """The session's figures: budget (the HBM grant), min_budget and
        no_offload_peak (the planner's, for the submitted trace),
        predicted_peak (the plan's), replay_live_peak (largest measured
        live-tensor peak of the replay steps that did not diverge), what
        the replay steps moved (d2h_bytes into the pool, h2d_bytes back,
        and the counts), what the trace steps probed, and why offloading
        is off when it is."""
        replay = [s for s in self.steps
                  if s["mode"] == "replay" and not s["diverged"]]
        out = {"budget": self.budget, "min_budget": self.min_budget,
               "no_offload_peak": self.no_offload_peak,
               "predicted_peak": (self.plan_info or {}).get(
                   "peak_device_bytes"),
               "steps": len(self.steps), "replay_steps": len(replay),
               "trace_steps": sum(1 for s in self.steps
                                  if s["mode"] == "trace"),
               "replay_live_peak": max((s["live_peak"] for s in replay),
                                       default=None),
               "diverged_steps": sum(1 for s in self.steps
                                     if s["diverged"]),
               "probe_bytes": sum(s["probe_bytes"] for s in self.steps),
               "disabled": self.disabled}
        for k in ("d2h_bytes", "h2d_bytes", "stores", "prefetches",
                  "on_demand", "frees", "views_restored"):
            out[k] = sum(s[k] for s in self.steps if s["mode"] == "replay")
        return out

    def _figures(self, trace):
        """(smallest feasible budget, no-offload peak) of `trace` for the
        planner, from a grant-less probe session: a request at an
        unlimited budget gives the peak, one at 1 byte fails with
        HO_E_INFEASIBLE naming the smallest feasible budget."""
        probe = ho.Client.connect(self.socket, self.client_name + "-probe")
        try:
            probe.register(job=self.job, device=self.device, hbm_budget=0)
            with probe.plan_request(trace, UNLIMITED_BUDGET,
                                    self.planner) as p:
                peak = p.info()["no_offload_peak"]
            try:
                probe.plan_request(trace, 1, self.planner).close()
                return 1, peak   # nothing is needed at all
            except ho.HoError as e:
                if e.code != ho.HO_E_INFEASIBLE:
                    raise
                found = _SMALLEST.findall(e.detail) or \
                    _SMALLEST_LOOSE.findall(e.detail)
                if not found:
                    raise
                return int(found[-1]), peak
        finally:
            probe.close()

    # ----------------------------------------------------------- close
    def close(self):
        """Free the extents, close the connection, remove the temporary
        directory.  The session cannot be used afterwards."""
        self._copier.close()
        if self.client is not None:
            self.client.close()
            self.client = None
        self._extents = {}
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._closed = True

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
